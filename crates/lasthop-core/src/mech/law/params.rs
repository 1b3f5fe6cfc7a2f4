//! Law's parameters: `mechanism = { type = "law", limit_q_ms = 40, limit_h_ms = 3, ... }`.
//!
//! Every field is optional. Values the paper gives carry their section; the others are choices made
//! where the paper is silent (see the module docs of [`super`]) and are marked CHOICE.

use crate::time::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Law at an AP (seed 000, §3.3–3.4). TOML: `mechanism = { type = "law", limit_q_ms = 40 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LawParams {
    /// Limit_q: a packet whose link-layer latency (since it entered the driver queue) exceeds this when
    /// it is about to be pushed into hardware, or when the hardware returns it, is dropped, ms.
    /// Default 40 (§4.1; the "60 ms bound" variant of §4.4 uses 54).
    pub limit_q_ms: f64,
    /// Limit_h: the longest a PSDU may spend in hardware (from reaching the head of its hardware queue:
    /// backoff, airtime, ACK timeouts, retries) before the hardware returns it to the driver, ms.
    /// Default 3 (§4.1).
    pub limit_h_ms: f64,
    /// PSDUs the hardware holds at once, over all four ACs. Default 2 (§3.3).
    pub hw_psdus: u32,
    /// Software retransmissions per packet outside Cleanup. Default 1 (§3.3).
    pub sw_retries: u32,
    /// Hardware transmissions per software transmission in Cleanup. Default 2 (§3.4).
    pub cleanup_hw_tries: u8,
    /// Hardware transmissions per software transmission outside Cleanup. Default 16, OpenWiFi's
    /// largest per-packet retry count (`wifi-model.md` §5.7), so Limit_h is what bounds them (CHOICE).
    pub hw_tries: u8,
    /// After this many consecutive lost packets the current packet gets one more software
    /// retransmission. Default 3 (§3.4 "handling loss pattern").
    pub loss_run_extra_retry: u32,
    /// Consecutive packets lost to failed transmissions in Cleanup that turn the rate down one index.
    /// Default 2 (§3.4).
    pub cleanup_drops_down: u32,
    /// The factor 5 of Thr_p = (N_prob + 1) · 5 · IndexOfCurrentDataRate (Eq. 2). Default 5.
    pub probe_factor: u32,
    /// Packets sent at the probed rate. Default 2 (§3.4).
    pub probe_packets: u32,
    /// Consecutive software retransmissions (N_ret) after which Stable moves *Rate* down to *Rate_min*
    /// below it. Default 2 (CHOICE: Table 2 keeps N_ret without saying what it triggers).
    pub stable_down_retx: u32,
    /// Weight of the old value in the EWMAs of Table 2 (T_n, S_n, T_i, S_i). Default 0.75, Minstrel's
    /// EWMA level (CHOICE: the paper gives none).
    pub ewma_old_weight: f64,
    /// MPDUs per A-MPDU. Default 32 (ath9k's half BlockAck window; CHOICE).
    pub max_subframes: u32,
    /// Starting MCS (index into the link's single-stream rates, slowest = 0); default 0 (CHOICE).
    pub initial_rate_index: u8,
}

impl Default for LawParams {
    fn default() -> Self {
        LawParams {
            limit_q_ms: 40.0,
            limit_h_ms: 3.0,
            hw_psdus: 2,
            sw_retries: 1,
            cleanup_hw_tries: 2,
            hw_tries: 16,
            loss_run_extra_retry: 3,
            cleanup_drops_down: 2,
            probe_factor: 5,
            probe_packets: 2,
            stable_down_retx: 2,
            ewma_old_weight: 0.75,
            max_subframes: 32,
            initial_rate_index: 0,
        }
    }
}

/// Law's latency limits, `limit_q_ms` and `limit_h_ms`, in ms: from 1 µs (a shorter one is no limit the
/// engine's clock keeps) to 10 s, in a scenario and in a run-time command alike.
pub const LIMIT_MS: std::ops::RangeInclusive<f64> = 0.001..=10_000.0;

/// `Err(message)` unless `v` is a usable latency limit ([`LIMIT_MS`]).
fn check_limit_ms(v: f64) -> Result<(), String> {
    if LIMIT_MS.contains(&v) {
        Ok(())
    } else {
        Err(format!("must be a number of milliseconds in 0.001..=10000, got {}", crate::scenario::shown(v)))
    }
}

impl LawParams {
    /// Checks ranges; `Err((field, message))` names the offending key.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check_limit_ms(self.limit_q_ms).map_err(|m| ("limit_q_ms", m))?;
        check_limit_ms(self.limit_h_ms).map_err(|m| ("limit_h_ms", m))?;
        let at_least_one = |field: &'static str, v: u64| if v >= 1 { Ok(()) } else { Err((field, "must be at least 1".to_string())) };
        at_least_one("hw_psdus", self.hw_psdus as u64)?;
        at_least_one("cleanup_hw_tries", self.cleanup_hw_tries as u64)?;
        at_least_one("hw_tries", self.hw_tries as u64)?;
        at_least_one("probe_factor", self.probe_factor as u64)?;
        at_least_one("probe_packets", self.probe_packets as u64)?;
        at_least_one("cleanup_drops_down", self.cleanup_drops_down as u64)?;
        at_least_one("loss_run_extra_retry", self.loss_run_extra_retry as u64)?;
        at_least_one("max_subframes", self.max_subframes as u64)?;
        at_least_one("stable_down_retx", self.stable_down_retx as u64)?;
        if self.hw_psdus > 64 {
            return Err(("hw_psdus", format!("must be at most 64, got {}", self.hw_psdus)));
        }
        if self.probe_packets > 16 {
            return Err(("probe_packets", format!("must be at most 16, got {}", self.probe_packets)));
        }
        if !(self.ewma_old_weight.is_finite() && (0.0..1.0).contains(&self.ewma_old_weight)) {
            return Err(("ewma_old_weight", format!("must be in [0, 1), got {}", crate::scenario::shown(self.ewma_old_weight))));
        }
        Ok(())
    }

    /// Limit_q as a duration.
    pub fn limit_q(&self) -> SimDuration {
        SimDuration::from_secs_f64(self.limit_q_ms * 1e-3).expect("validated")
    }

    /// Limit_h as a duration.
    pub fn limit_h(&self) -> SimDuration {
        SimDuration::from_secs_f64(self.limit_h_ms * 1e-3).expect("validated")
    }
}
