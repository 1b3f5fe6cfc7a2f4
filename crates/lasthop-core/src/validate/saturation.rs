//! The saturated uplink scenarios of the ns-3 anchor (`shared/anchors/ns3/dcf_saturation.cc`): N stations
//! 1 m from the AP, all permanently backlogged with 1500-byte MSDUs sent to the AP, no frame errors.

use crate::scenario::Scenario;
use crate::sim::{self, RunOutput};
use serde::Serialize;
use std::path::Path;

/// The anchor scenarios.
pub const SCENARIOS: [&str; 3] = ["sat_11a_54_noagg", "sat_11n_mcs7_noagg", "sat_11n_mcs7_agg"];

/// `sat_11a_54_noagg` under the assumptions of Bianchi's model (`lasthop validate bianchi`).
pub const BIANCHI: &str = "bianchi_11a_54";

/// [`BIANCHI`] with RTS/CTS ahead of every frame (`rts_threshold_bytes = 0`; Bianchi's eq. 15).
pub const BIANCHI_RTS: &str = "bianchi_11a_54_rts";

/// Station counts swept by the anchor.
pub const NS: [u32; 6] = [1, 2, 5, 10, 20, 50];

/// The scenario `name` with `n` stations as TOML text, measuring `measure_s` after `warmup_s`.
pub fn scenario_toml(name: &str, n: u32, warmup_s: f64, measure_s: f64) -> Option<String> {
    let (phy, backlog) = match name {
        "sat_11a_54_noagg" => (r#"standard = "ofdm", profile = "ns3", rate_control = { type = "fixed", rate_mbps = 54 }"#, 4),
        "sat_11n_mcs7_noagg" => (r#"standard = "ht", profile = "ns3", ampdu = false, rate_control = { type = "fixed", mcs = 7 }"#, 4),
        "sat_11n_mcs7_agg" => (r#"standard = "ht", profile = "ns3", ampdu = true, rate_control = { type = "fixed", mcs = 7 }"#, 128),
        // Bianchi's assumptions: a frame is retried until it succeeds and the CW stays at CWmax after
        // m doublings, so no retry limit drops it and none resets the CW (ns-3's does, at 8 failures).
        BIANCHI => (r#"standard = "ofdm", profile = "ns3", retry_limit = 1000000, rate_control = { type = "fixed", rate_mbps = 54 }"#, 4),
        BIANCHI_RTS => (r#"standard = "ofdm", profile = "ns3", retry_limit = 1000000, rts_threshold_bytes = 0, rate_control = { type = "fixed", rate_mbps = 54 }"#, 4),
        _ => return None,
    };
    let mut s = format!(
        "name = \"{name}_n{n}\"\nduration_s = {}\nwarmup_s = {warmup_s}\n[output]\npackets = false\n[[aps]]\nname = \"ap\"\nlast_hop = {{ type = \"wifi\", {phy}, msdu_lifetime_ms = 1e9 }}\n",
        warmup_s + measure_s
    );
    for i in 0..n {
        s += &format!("[[stations]]\nname = \"sta{i}\"\n");
    }
    for i in 0..n {
        s += &format!("[[flows]]\ntype = \"saturated\"\nfrom = \"sta{i}\"\nto = \"ap\"\npacket_bytes = 1500\nbacklog = {backlog}\n");
    }
    Some(s)
}

/// Throughput and fairness of one saturated run.
#[derive(Clone, Debug, Serialize)]
pub struct SaturationResult {
    pub scenario: String,
    pub n: u32,
    pub seed: u64,
    pub throughput_mbps: f64,
    pub jain: f64,
    /// Failed data PPDUs / data PPDUs sent in the measurement window (ns-3's p_fail).
    pub p_fail: f64,
    pub events: u64,
    pub sim_seconds: f64,
}

/// Jain's fairness index of `xs`.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (xs.len() as f64 * s2)
    }
}

/// Data PPDUs sent and failed over every Wi-Fi link of a finished run.
fn ppdu_counts(out: &RunOutput) -> (u64, u64) {
    let (mut sent, mut failed) = (0u64, 0u64);
    for l in out.components["wifi"]["links"].as_array().into_iter().flatten() {
        sent += l["stats"]["ppdus"].as_u64().unwrap_or(0);
        failed += l["stats"]["ppdus_failed"].as_u64().unwrap_or(0);
    }
    (sent, failed)
}

fn run_toml(text: &str, seed: u64) -> RunOutput {
    let sc = Scenario::from_toml_str(text, Path::new(".")).expect("built-in scenario is valid");
    sim::run(&sc, seed, &mut |_| true).expect("not interrupted")
}

/// Runs `name` with `n` stations.
///
/// The link counters cover the whole run, warm-up included, where every station starts at CWmin and
/// collides far more often than in steady state (at N = 50 with A-MPDU, 0.606 over the run against
/// 0.586 in the window). ns-3's p_fail counts the window only, so the counters of the warm-up alone —
/// the same seed run to the end of the warm-up, which replays the same events — are subtracted.
pub fn run(name: &str, n: u32, seed: u64, warmup_s: f64, measure_s: f64) -> Option<(SaturationResult, RunOutput)> {
    let out = run_toml(&scenario_toml(name, n, warmup_s, measure_s)?, seed);
    let per: Vec<f64> = out.flows.iter().map(|f| f.throughput_mbps).collect();
    let (mut sent, mut failed) = ppdu_counts(&out);
    if warmup_s > 0.0 {
        let (s0, f0) = ppdu_counts(&run_toml(&scenario_toml(name, n, 0.0, warmup_s)?, seed));
        debug_assert!(s0 <= sent && f0 <= failed, "the warm-up run is a prefix of the full run");
        sent = sent.saturating_sub(s0);
        failed = failed.saturating_sub(f0);
    }
    let r = SaturationResult {
        scenario: name.to_string(),
        n,
        seed,
        throughput_mbps: per.iter().sum(),
        jain: jain(&per),
        p_fail: if sent > 0 { failed as f64 / sent as f64 } else { 0.0 },
        events: out.events,
        sim_seconds: warmup_s + measure_s,
    };
    Some((r, out))
}
