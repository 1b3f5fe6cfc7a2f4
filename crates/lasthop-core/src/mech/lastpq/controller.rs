//! The cross-layer delay controller (spec §13): per prioritized flow, every window W the β-th
//! percentile l(t) of its per-packet latency (TXQ enqueue → ACK) over the packets acknowledged in the
//! window, and from it the flow's permitted queueing delay l_pq:
//!
//! ```text
//! th_H = ld − l_GI,  th_L = (1 − α_L)·ld                       (ms)
//! l > th_H:            l_pq ← l_pq·(1 − MD)
//! l < th_L:            l_pq ← l_pq·(1 + MI)
//! in band, l_ch > 0:   l_pq ← l_pq·(1 − MD·l_ch / (th_H − l(t−1)))       (R7, reconstructed)
//! in band, l_ch < 0:   l_pq ← l_pq + AI·(−l_ch) / (l(t−1) − th_L)
//! clamp to [L_min, min(ld, 65 535 µs)], round half up to whole µs
//! ```
//!
//! A window without samples changes nothing and keeps l(t−1); the first in-band window (no l(t−1))
//! changes nothing. l_pq(0) = th_L. A demand change re-derives the band and L_max at once and clamps
//! l_pq to the new L_max; l(t−1) is kept (§13.4). Windows close lazily: every call first closes those
//! that ended at or before `now`, exactly as timers at the window ends would.

use crate::stats::percentile;
use crate::time::{SimDuration, SimTime};

/// The controller's constants (spec §17.1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControllerParams {
    /// Multiplicative decrease and increase factors (0.3, 0.3).
    pub md: f64,
    pub mi: f64,
    /// Additive increase, µs (5000; R8).
    pub ai_us: f64,
    /// Guard below the demand, ms (1).
    pub l_gi_ms: f64,
    /// Oscillation ratio α_L (0.5).
    pub alpha_l: f64,
    /// Window W (20 ms).
    pub window: SimDuration,
    /// Lower clamp of l_pq, µs (1000 = T_guard).
    pub l_min_us: u64,
}

/// A flow's latency demand: the `percentile`-th percentile of its latency at most `ms`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    pub ms: f64,
    pub percentile: f64,
}

/// The largest permitted queueing delay the 16-bit mark can carry, µs.
pub const L_MAX_FIELD_US: u64 = 65_535;

/// One prioritized flow's controller.
#[derive(Clone, Debug)]
pub struct DelayController {
    p: ControllerParams,
    demand: Demand,
    l_pq_us: u64,
    prev_ms: Option<f64>,
    window_end: SimTime,
    samples: Vec<u64>,
    /// Closed windows with samples: (end, l(t) in ms, l_pq after the update in µs, where l(t) was:
    /// 1 above the band, 0 in it, −1 below).
    pub history: Vec<(SimTime, f64, u64, i8)>,
}

impl DelayController {
    /// A controller whose first window starts at `start`.
    pub fn new(p: ControllerParams, demand: Demand, start: SimTime) -> Self {
        let mut c = DelayController { p, demand, l_pq_us: 0, prev_ms: None, window_end: start + p.window, samples: Vec::new(), history: Vec::new() };
        c.l_pq_us = c.clamp(round_half_up(c.th_l_ms() * 1000.0));
        c
    }

    /// A controller in a given state: l_pq and l(t−1) (the spec's test vectors start from one).
    #[cfg(test)]
    pub(crate) fn with_state(p: ControllerParams, demand: Demand, l_pq_us: u64, prev_ms: Option<f64>) -> Self {
        DelayController { l_pq_us, prev_ms, ..DelayController::new(p, demand, SimTime::ZERO) }
    }

    /// Whether the demand leaves a band: α_L·ld > l_GI (spec §13.2).
    pub fn band_exists(p: &ControllerParams, ms: f64) -> bool {
        p.alpha_l * ms > p.l_gi_ms
    }

    pub fn th_h_ms(&self) -> f64 {
        self.demand.ms - self.p.l_gi_ms
    }

    pub fn th_l_ms(&self) -> f64 {
        (1.0 - self.p.alpha_l) * self.demand.ms
    }

    fn l_max_us(&self) -> u64 {
        (round_half_up(self.demand.ms * 1000.0)).min(L_MAX_FIELD_US)
    }

    fn clamp(&self, us: u64) -> u64 {
        us.clamp(self.p.l_min_us.min(self.l_max_us()), self.l_max_us())
    }

    /// The permitted queueing delay, µs (after closing the windows that ended by `now`).
    pub fn l_pq_us(&mut self, now: SimTime) -> u64 {
        self.roll(now);
        self.l_pq_us
    }

    pub fn demand(&self) -> Demand {
        self.demand
    }

    /// A packet of the flow was acknowledged at `now`, `latency_ns` after its TXQ enqueue.
    pub fn on_sample(&mut self, now: SimTime, latency_ns: u64) {
        self.roll(now);
        self.samples.push(latency_ns);
    }

    /// A packet of the flow was dropped at `now`: a sample of infinite latency (`count_drops_as_inf`).
    pub fn on_drop(&mut self, now: SimTime) {
        self.on_sample(now, u64::MAX);
    }

    /// A new demand, from now on: the band and L_max follow; l_pq is clamped to the new L_max.
    pub fn set_demand(&mut self, now: SimTime, demand: Demand) {
        self.roll(now);
        self.demand = demand;
        self.l_pq_us = self.clamp(self.l_pq_us);
    }

    /// Closes every window that ended at or before `now`.
    fn roll(&mut self, now: SimTime) {
        while now >= self.window_end {
            if !self.samples.is_empty() {
                self.samples.sort_unstable();
                // A dropped packet's sample (u64::MAX) makes l(t) infinite when it reaches the percentile.
                let l = match percentile(&self.samples, self.demand.percentile).expect("non-empty") {
                    u64::MAX => f64::INFINITY,
                    ns => ns as f64 * 1e-6,
                };
                self.samples.clear();
                let band = if l > self.th_h_ms() { 1 } else if l < self.th_l_ms() { -1 } else { 0 };
                self.update(l);
                self.history.push((self.window_end, l, self.l_pq_us, band));
            }
            self.window_end += self.p.window;
        }
    }

    /// One window's update with its percentile `l` (ms).
    pub fn update(&mut self, l: f64) {
        let (th_h, th_l, x) = (self.th_h_ms(), self.th_l_ms(), self.l_pq_us as f64);
        let next = if l > th_h {
            x * (1.0 - self.p.md)
        } else if l < th_l {
            x * (1.0 + self.p.mi)
        } else {
            match self.prev_ms {
                Some(prev) if l > prev => x * (1.0 - self.p.md * (l - prev) / (th_h - prev)),
                // After an infinite l(t−1) (drops counted, `count_drops_as_inf`) the ratio's limit, 1.
                Some(prev) if l < prev => x + self.p.ai_us * if prev.is_finite() { (prev - l) / (prev - th_l) } else { 1.0 },
                _ => x,
            }
        };
        self.prev_ms = Some(l);
        self.l_pq_us = self.clamp(round_half_up(next));
    }
}

fn round_half_up(x: f64) -> u64 {
    (x + 0.5).floor().max(0.0) as u64
}
