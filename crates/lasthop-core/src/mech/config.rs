//! `aps[].mechanisms`: what an AP runs on top of its last hop, `type`-tagged, in order
//! (`mechanism = {...}` is a one-element list); and how each installs itself ([`Mechanism`]).
//!
//! ```toml
//! mechanisms = [{ type = "law" }, { type = "zhuge", flows = ["call"] }]  # both on one AP
//! mechanism = { type = "law", limit_q_ms = 40, limit_h_ms = 3 } # Law (802.11 last hops only)
//! mechanism = { type = "zhuge" }                               # Fortune Teller + Feedback Updater
//! mechanism = { type = "zhuge", profile = "parity", flows = ["call"] }
//! mechanism = { type = "fastack" }                              # AP-generated TCP ACKs (baseline)
//! mechanism = { type = "abc" }                                  # ABC router marking (baseline)
//! mechanisms = [{ type = "qair" }]                              # QAir (also on stations)
//! mechanisms = [{ type = "lastpq", flows = [{ flow = "vr", demand_ms = 20 }] }]  # LAST-PQ
//! ```

use super::hook::{InstallError, LinkKind, Mechanism, NodeBuilder, Role};
use super::zhuge::hooks::{AbcHook, FastAckHook, ZhugeHook};
use super::zhuge::{AbcRouterParams, AckDelayerParams, FastAckParams, FortuneTellerOverrides, Profile, TwccRewriterParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A mechanism installed at an AP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum MechanismConfig {
    /// Law (seed 000): one driver queue, ≤ 2 PSDUs in hardware, Limit_q / Limit_h, and joint
    /// per-transmission rate and retry control. Replaces the AP's transmit path and its downlink rate
    /// control; needs a `wifi` last hop.
    Law(super::law::LawParams),
    /// Zhuge (SIGCOMM'22): per-packet delay forecasts at the AP fed back at once, by delaying the
    /// flow's TCP ACKs (out-of-band) or by rewriting its TWCC feedback (in-band, RTP flows).
    Zhuge(ZhugeConfig),
    /// FastAck: the AP acknowledges TCP data it delivered on the last hop itself and suppresses the
    /// client's ACKs for it (zhuge.md §5.2); serves every `tcp`/`tcp_video` flow to its stations.
    Fastack(FastAckParams),
    /// ABC: the AP marks each TCP data packet accelerate or brake from its dequeue rate and queueing
    /// delay; senders use `cc = { type = "abc" }` (zhuge.md §5.3). Marks every `tcp`/`tcp_video` flow
    /// to its stations.
    Abc(AbcRouterParams),
    /// QAir (IWQoS'17): the node paces the PSDUs it hands its hardware queue by AIMD on the per-frame
    /// channel delay, so dense co-channel Wi-Fi keeps a short queue in the air. Runs on APs and on
    /// stations (`stations[].mechanisms`), on the `linux` path or the `fifo` one (there with the
    /// `formation` release point and PSDU tokens).
    Qair(super::qair::QairParams),
    /// LAST-PQ (seed 002): the listed flows get flow queues of their own and a latency demand; a
    /// delay controller adapts each one's permitted queueing delay, and the AP's driver serves a flow
    /// about to miss its demand ahead of the airtime scheduler. Needs the AP's `linux` transmit path.
    Lastpq(super::lastpq::LastPqParams),
}

/// `{ type = "zhuge", profile = "design", flows = [...], fortune_teller = {...}, ack_delayer = {...},
/// twcc = {...} }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ZhugeConfig {
    /// `design` (default: the slides and the spec's decisions) or `parity` (the released code's
    /// behaviour, minus its bugs).
    pub profile: Profile,
    /// Names of the flows Zhuge manages; default every `rtc` (in-band), `tcp` and `tcp_video`
    /// (out-of-band) flow to this AP's stations.
    pub flows: Option<Vec<String>>,
    /// Out-of-band Feedback Updater settings; default the profile's preset.
    pub ack_delayer: Option<AckDelayerParams>,
    /// In-band Feedback Updater settings; default the profile's preset.
    pub twcc: Option<TwccRewriterParams>,
    /// Fortune Teller fields that replace the profile's preset (per link and feedback path).
    pub fortune_teller: Option<FortuneTellerOverrides>,
}

impl MechanismConfig {
    /// The `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            MechanismConfig::Law(_) => "law",
            MechanismConfig::Zhuge(_) => "zhuge",
            MechanismConfig::Fastack(_) => "fastack",
            MechanismConfig::Abc(_) => "abc",
            MechanismConfig::Qair(_) => "qair",
            MechanismConfig::Lastpq(_) => "lastpq",
        }
    }

    /// Law's parameters, if this is Law.
    pub fn law(&self) -> Option<&super::law::LawParams> {
        match self {
            MechanismConfig::Law(p) => Some(p),
            _ => None,
        }
    }

    /// The flow names it is restricted to, if any.
    pub fn flows(&self) -> Option<&[String]> {
        match self {
            MechanismConfig::Zhuge(z) => z.flows.as_deref(),
            MechanismConfig::Law(_) | MechanismConfig::Fastack(_) | MechanismConfig::Abc(_) | MechanismConfig::Qair(_) | MechanismConfig::Lastpq(_) => None,
        }
    }

    /// The first invalid parameter as (field path inside the table, reason).
    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |prefix: &str, f: &str, r: &str| Err((if prefix.is_empty() { f.to_string() } else { format!("{prefix}.{f}") }, r.to_string()));
        match self {
            MechanismConfig::Law(p) => {
                if let Err((f, r)) = p.validate() {
                    return Err((f.to_string(), r));
                }
            }
            MechanismConfig::Zhuge(z) => {
                if let Some(a) = &z.ack_delayer {
                    if let Err(x) = a.validate() {
                        return e("ack_delayer", x.field, x.reason);
                    }
                }
                if let Some(f) = &z.fortune_teller {
                    if let Err(x) = f.validate() {
                        return e("fortune_teller", x.field, x.reason);
                    }
                }
                if let Some(t) = &z.twcc {
                    if let Err(x) = t.validate() {
                        return e("twcc", x.field, x.reason);
                    }
                }
            }
            MechanismConfig::Fastack(f) => {
                if let Err(x) = f.validate() {
                    return e("", x.field, x.reason);
                }
            }
            MechanismConfig::Abc(a) => {
                if let Err(x) = a.validate() {
                    return e("", x.field, x.reason);
                }
            }
            MechanismConfig::Qair(q) => {
                if let Err((f, r)) = q.validate() {
                    return e("", f, &r);
                }
            }
            MechanismConfig::Lastpq(p) => p.validate()?,
        }
        Ok(())
    }

    /// Whether it fills a stage of a node's transmit path (a release gate, a driver policy).
    pub fn sets_path_stage(&self) -> bool {
        matches!(self, MechanismConfig::Qair(_) | MechanismConfig::Lastpq(_))
    }

    /// Why it needs the `linux` transmit path, if it does: LAST-PQ hooks into ath9k's driver; QAir's
    /// gate also sits on the `fifo` path, whose PSDUs form at channel access, at the `formation` release
    /// point with PSDU tokens (there are no formed PSDUs to hold, nor an MPDU count before access).
    pub fn needs_linux_path(&self) -> Option<&'static str> {
        match self {
            MechanismConfig::Lastpq(_) => Some("its driver policy hooks into ath9k's driver"),
            MechanismConfig::Qair(p) if p.release_point == crate::mac::txpath::gate::ReleasePoint::Psdu => Some("`release_point = \"psdu\"` holds formed PSDUs, and the `fifo` path forms them at channel access"),
            MechanismConfig::Qair(p) if p.token_unit == super::qair::TokenUnit::Mpdu => Some("`token_unit = \"mpdu\"` counts a PSDU's MPDUs when it is released, and the `fifo` path forms it at channel access"),
            _ => None,
        }
    }

    /// Whether it can run on a station (only transmit-path stages can).
    pub fn runs_on_stations(&self) -> bool {
        matches!(self, MechanismConfig::Qair(_))
    }
}

impl Mechanism for MechanismConfig {
    fn name(&self) -> &'static str {
        self.kind()
    }

    /// Law replaces the AP's driver (its decisions are the driver's policy) with its own, sets the TXQ
    /// scheduler, the hardware queues and the TXQs' AQM, and chooses the downlink rates; Zhuge and FastAck act on the managed
    /// flows' feedback (so one AP runs at most one of them); ABC marks ECN.
    fn roles(&self) -> &'static [Role] {
        match self {
            MechanismConfig::Law(_) => &[Role::DriverPolicy, Role::TxqScheduler, Role::HwQueue, Role::TxqAqm, Role::RateControl],
            MechanismConfig::Zhuge(_) | MechanismConfig::Fastack(_) => &[Role::Feedback],
            MechanismConfig::Abc(_) => &[Role::EcnMarking],
            MechanismConfig::Qair(_) => &[Role::ReleaseGate],
            MechanismConfig::Lastpq(_) => &[Role::DriverPolicy],
        }
    }

    /// Law's limits and LAST-PQ's demands change at run time (`aps.<ap>.law`, `aps.<ap>.lastpq`,
    /// applied by the transmit path and the driver policy they installed).
    fn command_keys(&self) -> &'static [&'static str] {
        match self {
            MechanismConfig::Law(_) => &["limit_q_ms", "limit_h_ms"],
            MechanismConfig::Lastpq(_) => &["add_flows", "demand_ms", "percentile"],
            _ => &[],
        }
    }

    fn install(&self, node: &mut NodeBuilder) -> Result<(), InstallError> {
        let name = self.kind();
        if matches!(self, MechanismConfig::Law(_) | MechanismConfig::Qair(_) | MechanismConfig::Lastpq(_)) && node.link != LinkKind::Wifi {
            return Err(InstallError::Unsupported { mechanism: name.into(), needs: "a `wifi` last hop".into() });
        }
        match self {
            MechanismConfig::Law(p) => super::law::install(p, node)?,
            MechanismConfig::Zhuge(z) => {
                let hook = ZhugeHook::new(z, &node.name, node.link, &node.flows, node.seed);
                node.add_hook(name, Box::new(hook));
            }
            MechanismConfig::Fastack(p) => node.add_hook(name, Box::new(FastAckHook::new(p, &node.flows))),
            MechanismConfig::Abc(p) => {
                let hook = AbcHook::new(p, &node.name, &node.flows, node.seed);
                node.add_hook(name, Box::new(hook));
            }
            MechanismConfig::Qair(p) => {
                let gate = match (p.n_star, node.t_cycle) {
                    (None, _) => super::qair::gate::QairGate::new(p),
                    (Some(n), Some(t_cycle)) => super::qair::gate::QairGate::derived(p, n, t_cycle),
                    (Some(_), None) => return Err(InstallError::Unsupported { mechanism: name.into(), needs: format!("the PHY of '{}' to derive T_target from (n_star)", node.name) }),
                };
                let mut tagged = Vec::new();
                for f in &p.tagged_flows {
                    // Flow names are unique (checked with the scenario).
                    match node.flow_names.iter().position(|n| n == f) {
                        Some(i) => tagged.push(i as u32),
                        None => return Err(InstallError::Unsupported { mechanism: name.into(), needs: format!("a flow named '{f}' (tagged_flows)") }),
                    }
                }
                let gate = gate.with_tagged_flows(tagged);
                node.set_release_gate(name, Box::new(gate))?;
            }
            MechanismConfig::Lastpq(p) => {
                let mut indices = Vec::new();
                for d in &p.flows {
                    match node.flows.iter().find(|f| f.name == d.flow) {
                        Some(f) => indices.push(f.index),
                        None => return Err(InstallError::Unsupported { mechanism: name.into(), needs: format!("flow '{}' to end at a station of '{}'", d.flow, node.name) }),
                    }
                }
                let eligible = node.flows.iter().map(|f| (f.name.clone(), f.index)).collect();
                node.set_driver_policy(name, Box::new(super::lastpq::policy::LastPqPolicy::new(p, &indices, eligible)))?;
            }
        }
        // A stage's role was claimed where the stage was set; the others are claimed here.
        for &r in self.roles().iter().filter(|&&r| !matches!(r, Role::ReleaseGate | Role::DriverPolicy | Role::TxqScheduler | Role::HwQueue | Role::TxqAqm)) {
            node.claim(r, name)?;
        }
        Ok(())
    }
}
