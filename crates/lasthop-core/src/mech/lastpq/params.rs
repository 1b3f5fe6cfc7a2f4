//! LAST-PQ's parameters: `mechanisms = [{ type = "lastpq", flows = [{ flow = "vr", demand_ms = 20 }] }]`.
//! Defaults and their provenance are spec §17.1.

use super::controller::{ControllerParams, DelayController};
use crate::scenario::shown;
use crate::time::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One prioritized flow and its latency demand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowDemand {
    /// The flow's name in `flows`; it must end at one of this AP's stations.
    pub flow: String,
    /// Latency demand ld, ms: the `percentile`-th percentile of the flow's per-packet latency (TXQ
    /// enqueue → ACK) should stay at or below it. The permitted queueing delay the controller derives
    /// from it is at most 65.535 ms (the 16-bit field of the paper's mark, spec §16), so a demand above
    /// that gives the flow precedence once it has waited 65.5 ms.
    pub demand_ms: f64,
    /// β, the percentile the demand is on (0 < β ≤ 100). Default 95.
    #[serde(default = "default_percentile")]
    pub percentile: f64,
}

fn default_percentile() -> f64 {
    95.0
}

/// LAST-PQ at an AP (spec `qair-lastpq.md` Part 2). Every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LastPqParams {
    /// The prioritized flows with their demands. Default none: the AP is stock Linux until a run-time
    /// command prioritizes a flow (`add_flows`).
    pub flows: Vec<FlowDemand>,
    /// MD, multiplicative decrease of l_pq. Default 0.3 ([P]).
    pub md: f64,
    /// MI, multiplicative increase of l_pq. Default 0.3 ([P]).
    pub mi: f64,
    /// AI, additive increase inside the band, µs. Default 5000 ([P] value, R8 unit).
    pub ai_us: f64,
    /// l_GI, the guard below the demand (th_H = ld − l_GI), ms. Default 1 ([P]).
    pub l_gi_ms: f64,
    /// α_L, the oscillation ratio (th_L = (1 − α_L)·ld). Default 0.5 ([P]).
    pub alpha_l: f64,
    /// W, the controller's window, ms. Default 20 ([P]).
    pub window_ms: f64,
    /// T_guard in the hardware-queue draining estimate, ms; also l_pq's lower clamp. Default 1 ([P]).
    pub guard_ms: f64,
    /// w, the EWMA weight of the contention-time estimate T_ctt. Default 0.125 ([LH]).
    pub t_ctt_weight: f64,
    /// Airtime cap (8·length / rate) on PSDUs formed for non-prioritized TXQs while a prioritized flow
    /// of that AC is active, µs; 0 switches the cap off. Default 1000 ([LH], spec §15).
    pub agg_cap_nonprio_us: f64,
    /// A prioritized flow is active for the cap if it had a packet enqueued this recently, ms.
    /// Default 100 ([LH]: mac80211's notion of an active station).
    pub active_ms: f64,
    /// A packet of a prioritized flow dropped at the AP (qdisc if any, CoDel, FQ overlimit, retry
    /// limits) counts as a sample of infinite latency in its window, so losses push l(t) above the band. Default false
    /// (the paper: drops give no sample; spec §13.1 [LH]).
    pub count_drops_as_inf: bool,
    /// Which l_pq the throttler compares with: `"flow"` (the flow's latest value; default) or
    /// `"head_packet"` (the value marked on the head packet when it was enqueued, lagging by one queue's
    /// sojourn; spec §13.4).
    pub lpq_source: LpqSource,
    /// A prioritized flow's MPDUs waiting in its TXQ's software retry queue (subframes missing from a
    /// BlockAck, or a packet dequeued for a PSDU it did not fit) keep it backlogged for the throttler,
    /// its head being the oldest of them, so a TXQ holding only such retries is still served ahead of
    /// the TXQ scheduler. Default true ([LH],
    /// lasthop's reading; the spec does not say): ath9k sends a TID's retries before its new packets,
    /// so they are the flow's head in the driver's software queues. With false only the flow's FQ
    /// queue counts, and a frame's lost subframes wait for the station's turn in the airtime scheduler.
    pub urgent_retries: bool,
}

/// Where the throttler reads a flow's permitted queueing delay (spec §13.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LpqSource {
    Flow,
    HeadPacket,
}

impl Default for LastPqParams {
    fn default() -> Self {
        LastPqParams {
            flows: Vec::new(),
            md: 0.3,
            mi: 0.3,
            ai_us: 5000.0,
            l_gi_ms: 1.0,
            alpha_l: 0.5,
            window_ms: 20.0,
            guard_ms: 1.0,
            t_ctt_weight: 0.125,
            agg_cap_nonprio_us: 1000.0,
            active_ms: 100.0,
            count_drops_as_inf: false,
            lpq_source: LpqSource::Flow,
            urgent_retries: true,
        }
    }
}

impl LastPqParams {
    /// The controller's constants.
    pub fn controller(&self) -> ControllerParams {
        let ms = |x: f64| SimDuration::from_secs_f64(x * 1e-3).expect("validated");
        ControllerParams {
            md: self.md,
            mi: self.mi,
            ai_us: self.ai_us,
            l_gi_ms: self.l_gi_ms,
            alpha_l: self.alpha_l,
            window: ms(self.window_ms),
            l_min_us: (self.guard_ms * 1000.0).round() as u64,
        }
    }

    /// The first invalid field as (path inside the table, reason).
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, r: String| Err((f.to_string(), r));
        for (f, v, lo, hi) in [("md", self.md, 0.0, 1.0), ("alpha_l", self.alpha_l, 0.0, 1.0), ("t_ctt_weight", self.t_ctt_weight, 0.0, 1.0)] {
            if !(v.is_finite() && v > lo && v < hi) {
                return bad(f, format!("must be in ({lo}, {hi}), got {}", shown(v)));
            }
        }
        for (f, v) in [("mi", self.mi), ("window_ms", self.window_ms), ("guard_ms", self.guard_ms), ("active_ms", self.active_ms)] {
            if !(v.is_finite() && v > 0.0 && v <= 1e4) {
                return bad(f, format!("must be a positive number up to 10000, got {}", shown(v)));
            }
        }
        for (f, v) in [("ai_us", self.ai_us), ("l_gi_ms", self.l_gi_ms), ("agg_cap_nonprio_us", self.agg_cap_nonprio_us)] {
            if !(v.is_finite() && (0.0..=1e6).contains(&v)) {
                return bad(f, format!("must be zero or a positive number up to 1e6, got {}", shown(v)));
            }
        }
        let c = self.controller();
        for (i, d) in self.flows.iter().enumerate() {
            if self.flows[..i].iter().any(|e| e.flow == d.flow) {
                return bad(&format!("flows.{i}.flow"), format!("flow '{}' is listed twice", d.flow));
            }
            check_demand(&c, d.demand_ms, d.percentile).map_err(|(k, r)| (format!("flows.{i}.{k}"), r))?;
        }
        Ok(())
    }
}

/// Whether a demand (`ms` at percentile `percentile`) is usable: positive, with a band (α_L·ld > l_GI).
pub fn check_demand(c: &ControllerParams, ms: f64, percentile: f64) -> Result<(), (&'static str, String)> {
    if !(ms.is_finite() && ms > 0.0 && ms <= 1e4) {
        return Err(("demand_ms", format!("must be a positive number of ms up to 10000, got {}", shown(ms))));
    }
    if !DelayController::band_exists(c, ms) {
        return Err(("demand_ms", format!("{} ms leaves no band: α_L·demand ({}) must exceed l_gi_ms ({})", shown(ms), shown(c.alpha_l * ms), shown(c.l_gi_ms))));
    }
    if !(percentile.is_finite() && percentile > 0.0 && percentile <= 100.0) {
        return Err(("percentile", format!("must be in (0, 100], got {}", shown(percentile))));
    }
    Ok(())
}
