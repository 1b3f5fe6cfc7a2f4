//! The hardware-queue draining estimate (spec §14.2–14.3): how long a PSDU pushed now into an AC's
//! hardware queue waits before it is acknowledged, from the PSDUs ahead of it and a per-AC effective
//! contention time T_ctt.
//!
//! ```text
//! l_hq  = T_ctt + Σ_{queued i} (T_ctt + T_mac,i + T_air,i) + T_guard     (the PSDU on the air counts)
//! T_ctt ← (1 − w)·T_ctt + w·max(0, t_k − T_mac − T_air)   on every successful HW_DONE
//! ```
//!
//! t_k is QAir's per-frame delay with the head time inferred by Eq. 6 (t_h = max(t_e of the
//! predecessor, t_w)): one [`DelayMonitor`] serves both mechanisms, as the spec asks.

use crate::mech::qair::monitor::DelayMonitor;
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// The estimate of one node's four hardware queues.
#[derive(Clone, Debug)]
pub struct DrainEstimator {
    /// EWMA weight w (1/8).
    weight: f64,
    t_guard_us: f64,
    /// Per AC: T_ctt, µs.
    t_ctt_us: [f64; 4],
    /// Per AC: (T_air, T_mac) in µs of the PSDUs in the hardware queue, oldest (on the air) first.
    queued: [VecDeque<(f64, f64)>; 4],
    monitor: DelayMonitor,
}

impl DrainEstimator {
    /// `t_ctt0_us[ac]`: the initial T_ctt of each AC (AIFS + CWmin·slot/2).
    pub fn new(weight: f64, t_guard: SimDuration, t_ctt0_us: [f64; 4]) -> Self {
        DrainEstimator { weight, t_guard_us: t_guard.as_ns() as f64 * 1e-3, t_ctt_us: t_ctt0_us, queued: Default::default(), monitor: DelayMonitor::default() }
    }

    /// A PSDU with data airtime `air` and MAC overhead `mac` entered AC `ac`'s hardware queue.
    pub fn on_enqueue(&mut self, now: SimTime, ac: usize, air: SimDuration, mac: SimDuration) {
        self.monitor.on_enqueue(now, ac);
        self.queued[ac].push_back((air.as_ns() as f64 * 1e-3, mac.as_ns() as f64 * 1e-3));
    }

    /// The oldest PSDU of AC `ac` left the hardware queue (acknowledged if `success`).
    pub fn on_done(&mut self, now: SimTime, ac: usize, success: bool) {
        let (t_k, _) = self.monitor.on_done(now, ac, success, false);
        let (air, mac) = self.queued[ac].pop_front().unwrap_or((0.0, 0.0));
        if let Some(t_k) = t_k {
            let s = (t_k.as_ns() as f64 * 1e-3 - mac - air).max(0.0);
            self.t_ctt_us[ac] = (1.0 - self.weight) * self.t_ctt_us[ac] + self.weight * s;
        }
    }

    /// T_ctt of AC `ac`, µs.
    pub fn t_ctt_us(&self, ac: usize) -> f64 {
        self.t_ctt_us[ac]
    }

    /// l_hq of AC `ac`, µs.
    pub fn l_hq_us(&self, ac: usize) -> f64 {
        let c = self.t_ctt_us[ac];
        c + self.queued[ac].iter().map(|(air, mac)| c + mac + air).sum::<f64>() + self.t_guard_us
    }
}
