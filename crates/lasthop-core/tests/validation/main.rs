//! Validation of the 802.11 model against Bianchi's analytical model and the ns-3 anchor
//! (`shared/anchors/ns3/results.csv`). Runs 10 simulated seconds per point (fast in release builds).

use lasthop_core::validate::bianchi::{self, BianchiParams};
use lasthop_core::validate::saturation::{self, NS};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn sat(name: &str, n: u32) -> saturation::SaturationResult {
    saturation::run(name, n, 1, 1.0, 10.0).expect("known scenario").0
}

/// Saturation throughput of `scenario` within `tol(N)` (relative) of Bianchi's `model` for every N.
fn against_bianchi(model: &BianchiParams, scenario: &str, tol: impl Fn(u32) -> f64) {
    for n in NS {
        let sim = sat(scenario, n).throughput_mbps;
        let m = bianchi::solve(model, n).throughput_mbps;
        let rel = (sim - m) / m;
        assert!(rel.abs() <= tol(n), "N={n}: sim {sim:.3} vs model {m:.3} ({:+.2} %)", rel * 100.0);
    }
}

/// ns-3 mean throughput per (scenario, n) from the anchor CSV beside the repository.
fn ns3_reference() -> BTreeMap<(String, u32), f64> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/anchors/ns3/results.csv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (shared/ must sit beside the repository)", path.display()));
    let mut acc: BTreeMap<(String, u32), (f64, u32)> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let e = acc.entry((f[0].to_string(), f[1].parse().unwrap())).or_default();
        e.0 += f[3].parse::<f64>().unwrap();
        e.1 += 1;
    }
    acc.into_iter().map(|(k, (s, c))| (k, s / c as f64)).collect()
}

/// Throughput within 2 % of Bianchi's model for every N, except N = 2 where every collision involves
/// both stations and so lasts T_DATA + ACK timeout + DIFS = 327 µs instead of the model's 282 µs
/// (ns-3 is 2.4 % below the model there for the same reason): allowed 2.5 %.
#[test]
fn bianchi_saturation_throughput() {
    against_bianchi(&BianchiParams::ofdm_54(), lasthop_core::validate::saturation::BIANCHI, |n| if n == 2 { 0.025 } else { 0.02 });
}

/// wifi-model.md §7.3: the DCF with ns-3's configuration (its retry limit and CW reset) within 1.5 % of
/// the closer variant of ns-3's modified Bianchi model, for n = 5…30. At n = 50 lasthop is 2.4 % below
/// it (ns-3 itself 0.6 %): some of ns-3's bystanders decode part of a collided frame and defer EIFS,
/// which thins the contention right after a collision; lasthop's all resume after DIFS (FIDELITY.md).
#[test]
fn ns3_modified_bianchi_acceptance() {
    for (n, _, _) in bianchi::NS3_MODEL_11A_54 {
        let sim = saturation::run("sat_11a_54_noagg", n, 1, 1.0, 100.0).expect("known scenario").0.throughput_mbps;
        let reference = bianchi::ns3_model_closer(n, sim).expect("n in the table");
        let rel = (sim - reference) / reference;
        let tol = if n == 50 { 0.03 } else { 0.015 };
        assert!(rel.abs() <= tol, "n={n}: {sim:.3} vs ns-3's model {reference:.4} ({:+.2} %)", rel * 100.0);
    }
}

/// Conditional collision probability at N = 10, over the measurement window. EDCA (802.11n) against
/// Bianchi's p within 3 %. The legacy DCF sits 4 % below the model and ns-3's DCF 6 % (p_fail 0.360 in
/// `shared/anchors/ns3/RESULTS.md` §1; some of its observers wait EIFS after a collision, see
/// FIDELITY.md): checked against that measurement within 3 %.
#[test]
fn collision_probability_n10() {
    let edca = BianchiParams { w: 16.0, m: 6, slot_us: 9.0, ts_us: 315.0, tc_us: 271.0, payload_bits: 12_000.0 };
    let p_model = bianchi::solve(&edca, 10).p;
    let p = sat("sat_11n_mcs7_noagg", 10).p_fail;
    assert!(((p - p_model) / p_model).abs() <= 0.03, "EDCA p_fail {p:.4} vs model {p_model:.4}");
    let p_ns3 = 0.360;
    let p = sat("sat_11a_54_noagg", 10).p_fail;
    assert!(((p - p_ns3) / p_ns3).abs() <= 0.03, "DCF p_fail {p:.4} vs ns-3 {p_ns3:.4}");
}

/// Without aggregation: within 3 % of ns-3 for every N, and Jain ≥ 0.98 for N ≤ 20.
#[test]
fn ns3_saturation_without_aggregation() {
    let reference = ns3_reference();
    for name in ["sat_11a_54_noagg", "sat_11n_mcs7_noagg"] {
        for n in NS {
            let r = sat(name, n);
            let ns3 = reference[&(name.to_string(), n)];
            let rel = (r.throughput_mbps - ns3) / ns3;
            assert!(rel.abs() <= 0.03, "{name} N={n}: {:.3} vs ns-3 {ns3:.3} ({:+.2} %)", r.throughput_mbps, rel * 100.0);
            if n <= 20 {
                assert!(r.jain >= 0.98, "{name} N={n}: Jain {:.4}", r.jain);
            }
        }
    }
}

/// With A-MPDU and BlockAck (mean of seeds 1–3, as ns-3's anchor): within 5 % of ns-3 for every N.
#[test]
fn ns3_saturation_with_aggregation() {
    let reference = ns3_reference();
    for n in NS {
        let mean = (1..=3).map(|seed| saturation::run("sat_11n_mcs7_agg", n, seed, 3.0, 10.0).unwrap().0.throughput_mbps).sum::<f64>() / 3.0;
        let ns3 = reference[&("sat_11n_mcs7_agg".to_string(), n)];
        assert!(((mean - ns3) / ns3).abs() <= 0.05, "N={n}: {mean:.3} vs ns-3 {ns3:.3}");
    }
}

/// The same seed gives the same event trace; another seed another one.
#[test]
fn event_trace_digest_is_deterministic() {
    let run = |seed| {
        let (_, out) = saturation::run("sat_11n_mcs7_agg", 5, seed, 0.5, 2.0).unwrap();
        (out.event_digest, out.events)
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3).0, run(4).0);
}

/// RTS/CTS ahead of every frame against Bianchi's eq. 15 (T_s 414 µs, T_c 62 µs): within 0.2 % at
/// N = 1 (no collisions: −0.01 %) and 2.5 % for every N (−1.6 to −2.0 % at N = 2…50). The model's
/// colliders resume with everyone else after DIFS; ours first wait out their CTS timeout (the ACK
/// timeout, 45 µs, so T_c is 107 µs for them), hence the model's slight optimism.
#[test]
fn bianchi_rts_cts_saturation_throughput() {
    against_bianchi(&BianchiParams::ofdm_54_rts(), lasthop_core::validate::saturation::BIANCHI_RTS, |n| if n == 1 { 0.002 } else { 0.025 });
}
