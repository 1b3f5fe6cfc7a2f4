//! QAir at a node's driver → hardware-queue boundary: the release gate that wires the Delay Monitor,
//! the controller and the token bucket together.

use super::control::Control;
use super::monitor::DelayMonitor;
use super::regulator::TokenBucket;
use super::QairParams;
use crate::mac::txpath::gate::{ReleaseGate, ReleasePoint, TxEvent};
use crate::time::{SimDuration, SimTime};

/// One node's QAir.
#[derive(Debug)]
pub struct QairGate {
    /// (T_cycle, T_target) in ms when T_target was derived from the node's PHY (`QairParams::n_star`).
    derived: Option<(f64, f64)>,
    /// Off: observe only (`QairParams::enabled`).
    enabled: bool,
    release_point: ReleasePoint,
    /// Explicit-tag priority release (`QairParams::explicit_tags`).
    explicit_tags: bool,
    /// t_k from the hardware-queue entry instead of the inferred head (`QairParams::t_k_from`).
    t_k_from_enqueue: bool,
    token_unit: super::TokenUnit,
    /// The flow-table tag: scenario flow indices whose packets are tagged (sorted).
    tagged_flows: Vec<u32>,
    control: Control,
    bucket: TokenBucket,
    monitor: DelayMonitor,
    /// PSDUs released to the hardware, and refusals of the driver.
    released: u64,
    refusals: u64,
    /// Delay samples (successful PSDUs).
    samples: u64,
    /// Largest |inferred t_h − the hardware's own head time| seen, ns (0 without driver latency).
    max_inference_error_ns: u64,
    /// The node's PSDUs in its hardware queues (all ACs), since when there has been one, and how long
    /// there has been one in all (spec QP3: the time-averaged number of nodes with a non-empty
    /// hardware queue).
    in_hw: u32,
    busy_since: SimTime,
    hw_busy_ns: u64,
    /// The latest event the gate saw (a queue still busy at the end counts up to it).
    last_event: SimTime,
    /// With MPDU tokens: per AC, the MPDUs of each PSDU in the hardware queue, oldest first (what a
    /// completion delivers, in tokens).
    mpdus_in_hw: [std::collections::VecDeque<u32>; 4],
}

impl QairGate {
    /// QAir with T_target = `n_star` · `t_cycle`, the node's T_cycle (QAir spec §4.3) in place of
    /// `t_target_ms`.
    pub fn derived(p: &QairParams, n_star: f64, t_cycle: SimDuration) -> Self {
        let t_cycle_ms = t_cycle.as_ns() as f64 * 1e-6;
        let t_target_ms = n_star * t_cycle_ms;
        QairGate { derived: Some((t_cycle_ms, t_target_ms)), ..QairGate::new(&QairParams { t_target_ms, ..p.clone() }) }
    }

    /// The gate with the flow-table tag on scenario flows `flows` (`QairParams::tagged_flows`, resolved).
    pub fn with_tagged_flows(mut self, mut flows: Vec<u32>) -> Self {
        flows.sort_unstable();
        self.tagged_flows = flows;
        self
    }

    pub fn new(p: &QairParams) -> Self {
        QairGate { derived: None, enabled: p.enabled, release_point: p.release_point, explicit_tags: p.explicit_tags, t_k_from_enqueue: p.t_k_from == super::TkFrom::HwEnqueue, token_unit: p.token_unit, tagged_flows: Vec::new(), control: Control::new(p, SimTime::ZERO), bucket: TokenBucket::new(p.depth, SimTime::ZERO), monitor: DelayMonitor::default(), released: 0, refusals: 0, samples: 0, max_inference_error_ns: 0, in_hw: 0, busy_since: SimTime::ZERO, hw_busy_ns: 0, last_event: SimTime::ZERO, mpdus_in_hw: Default::default() }
    }
}

impl ReleaseGate for QairGate {
    fn may_release(&mut self, now: SimTime) -> Result<(), SimTime> {
        if !self.enabled {
            return Ok(());
        }
        self.bucket.ready(now, self.control.rate()).inspect_err(|_| self.refusals += 1)
    }

    fn release_point(&self) -> ReleasePoint {
        self.release_point
    }

    fn explicit_tag(&self, pkt: &crate::packet::Packet) -> bool {
        (self.explicit_tags && pkt.dscp >= super::params::TAG_DSCP_MIN) || self.tagged_flows.binary_search(&pkt.flow).is_ok()
    }

    /// The wait for the token of the PSDU behind the `held` ones (none at the `formation` release
    /// point, where the driver forms no PSDU while the gate is closed). With MPDU tokens each held PSDU
    /// counts as one token here: a lower bound.
    fn expected_hold(&self, now: SimTime, held: usize) -> SimDuration {
        if !self.enabled {
            return SimDuration::ZERO;
        }
        self.bucket.expected_wait(now, self.control.rate(), held as f64)
    }

    fn on_release(&mut self, now: SimTime, _link: u32, ac: usize, _bytes: u32, mpdus: u32) {
        if self.enabled {
            self.bucket.consume(match self.token_unit {
                super::TokenUnit::Psdu => 1.0,
                super::TokenUnit::Mpdu => mpdus.max(1) as f64,
            });
        }
        if self.token_unit == super::TokenUnit::Mpdu {
            self.mpdus_in_hw[ac].push_back(mpdus.max(1));
        }
        self.monitor.on_enqueue(now, ac);
        self.released += 1;
        self.last_event = now;
        if self.in_hw == 0 {
            self.busy_since = now;
        }
        self.in_hw += 1;
    }

    fn on_tx_event(&mut self, now: SimTime, ev: &TxEvent) {
        let TxEvent::Complete { ac, success, head_to_done, irq_delay, .. } = *ev else { return };
        self.last_event = now;
        self.in_hw = self.in_hw.saturating_sub(1);
        if self.in_hw == 0 {
            self.hw_busy_ns += (now - irq_delay).saturating_since(self.busy_since).as_ns();
        }
        // The driver sees the completion t_irq late: that is its t_e (Eq. 6 infers from it).
        let (t_k, t_h) = self.monitor.on_done(now, ac, success, self.t_k_from_enqueue);
        let tokens = match self.token_unit {
            super::TokenUnit::Psdu => 1.0,
            super::TokenUnit::Mpdu => self.mpdus_in_hw[ac].pop_front().unwrap_or(1) as f64,
        };
        let truth = now - irq_delay - head_to_done;
        self.max_inference_error_ns = self.max_inference_error_ns.max(t_h.as_ns().abs_diff(truth.as_ns()));
        let Some(t_k) = t_k else { return };
        self.samples += 1;
        self.bucket.refill(now, self.control.rate());
        self.control.on_frame_delivered(now, t_k, tokens);
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "type": "qair",
            "enabled": self.enabled,
            "release_point": self.release_point,
            "rate_psdus_per_s": self.control.rate(),
            "t_hat_ms": self.control.t_hat_us().map(|t| t * 1e-3),
            "updates": self.control.updates,
            "samples": self.samples,
            "released": self.released,
            "refusals": self.refusals,
            "max_inference_error_ns": self.max_inference_error_ns,
            "hw_busy_ms": (self.hw_busy_ns + if self.in_hw > 0 { self.last_event.saturating_since(self.busy_since).as_ns() } else { 0 }) as f64 * 1e-6,
        });
        if self.token_unit == super::TokenUnit::Mpdu {
            // `rate_psdus_per_s` is then in MPDUs/s.
            v["token_unit"] = "mpdu".into();
        }
        if let Some((t_cycle_ms, t_target_ms)) = self.derived {
            v["t_cycle_ms"] = t_cycle_ms.into();
            v["t_target_ms"] = t_target_ms.into();
        }
        v
    }
}
