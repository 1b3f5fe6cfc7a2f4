//! AIMD rate control of the delay-based estimate (libwebrtc `AimdRateControl` and
//! `LinkCapacityEstimator`, baselines.md §4.1).
//!
//! States Hold / Increase / Decrease, driven by the detector: *normal* takes Hold → Increase, *over-use*
//! → Decrease, *under-use* → Hold. With `R` the acknowledged bitrate (or the last one known):
//!
//! * **Increase**, only while `A < 1.5·R + 10 kbit/s` and capped there: multiplicative,
//!   `A += max(A·(1.08^min(Δt, 1 s) − 1), 1 kbit/s)`, until the link capacity is known; then additive,
//!   `A += Δt · max(4 kbit/s², avg_packet_bits / (2·(rtt + 100 ms)))` per second, where the average packet
//!   is a 30 fps frame at `A` split into ≤ 1200-byte packets. `R` above the capacity's upper bound
//!   (estimate + 3σ) forgets the capacity.
//! * **Decrease**: `A = 0.85·R` (or `0.85·capacity` when that would not be lower and a capacity is known),
//!   never upward; `R` below the capacity's lower bound forgets it, then the capacity absorbs `R`
//!   (EWMA 0.05, normalised variance clamped to [0.4, 2.5]) and the state returns to Hold.
//!
//! `Δt` is the time since the last change; the estimate never falls below the configured minimum. The
//! current libwebrtc decrease has no "− 5 kbit/s" (the spec quotes an older version); we follow the
//! current code.

use crate::time::{SimDuration, SimTime};
use serde::Serialize;

use super::trendline::BandwidthUsage;

/// The AIMD state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum RateControlState {
    #[default]
    Hold,
    Increase,
    Decrease,
}

/// Link capacity seen at over-use (kbit/s): an EWMA with a normalised variance.
#[derive(Clone, Copy, Debug)]
pub struct LinkCapacity {
    estimate_kbps: Option<f64>,
    deviation_kbps: f64,
}

impl Default for LinkCapacity {
    fn default() -> Self {
        LinkCapacity { estimate_kbps: None, deviation_kbps: 0.4 }
    }
}

impl LinkCapacity {
    fn deviation(&self, est: f64) -> f64 {
        (self.deviation_kbps * est).sqrt()
    }

    /// Upper bound, bit/s (infinite without an estimate).
    pub fn upper_bps(&self) -> f64 {
        self.estimate_kbps.map_or(f64::INFINITY, |e| (e + 3.0 * self.deviation(e)) * 1e3)
    }

    /// Lower bound, bit/s (0 without an estimate).
    pub fn lower_bps(&self) -> f64 {
        self.estimate_kbps.map_or(0.0, |e| (e - 3.0 * self.deviation(e)) * 1e3)
    }

    pub fn estimate_bps(&self) -> Option<f64> {
        self.estimate_kbps.map(|e| e * 1e3)
    }

    fn reset(&mut self) {
        self.estimate_kbps = None;
    }

    fn on_overuse(&mut self, acked_bps: f64) {
        let ack = acked_bps / 1e3;
        let alpha = 0.05;
        let est = self.estimate_kbps.map_or(ack, |e| (1.0 - alpha) * e + alpha * ack);
        self.estimate_kbps = Some(est);
        let err = est - ack;
        self.deviation_kbps = ((1.0 - alpha) * self.deviation_kbps + alpha * err * err / est.max(1.0)).clamp(0.4, 2.5);
    }
}

/// The delay-based rate controller.
#[derive(Clone, Debug)]
pub struct Aimd {
    backoff: f64,
    min_bps: f64,
    current_bps: f64,
    latest_throughput_bps: f64,
    pub(super) link: LinkCapacity,
    state: RateControlState,
    last_change: Option<SimTime>,
    rtt: SimDuration,
}

impl Aimd {
    /// Starts at `start_bps` (an initialised estimate, as libwebrtc after `SetStartBitrate`); RTT 200 ms
    /// until told (libwebrtc `kDefaultRtt`).
    pub fn new(start_bps: f64, min_bps: f64, backoff: f64) -> Self {
        Aimd {
            backoff,
            min_bps,
            current_bps: start_bps.max(min_bps),
            latest_throughput_bps: start_bps,
            link: LinkCapacity::default(),
            state: RateControlState::Hold,
            last_change: None,
            rtt: SimDuration::from_ms(200),
        }
    }

    pub fn estimate_bps(&self) -> f64 {
        self.current_bps
    }

    pub fn state(&self) -> RateControlState {
        self.state
    }

    pub fn set_rtt(&mut self, rtt: SimDuration) {
        self.rtt = rtt;
    }

    /// Whether an over-use may cut the rate again: one RTT (clamped to [10, 200] ms) after the last
    /// change, or at once when the throughput fell below half the estimate.
    pub fn time_to_reduce_further(&self, now: SimTime, throughput_bps: f64) -> bool {
        let interval = self.rtt.clamp(SimDuration::from_ms(10), SimDuration::from_ms(200));
        match self.last_change {
            None => true,
            Some(t) if now.saturating_since(t) >= interval => true,
            Some(_) => throughput_bps < 0.5 * self.current_bps,
        }
    }

    /// Sets the estimate directly (the "halve while no throughput is known" rule).
    pub fn set_estimate(&mut self, bps: f64, now: SimTime) {
        self.current_bps = bps.max(self.min_bps);
        self.last_change = Some(now);
    }

    /// One detector verdict with the acknowledged bitrate (if known); returns the new estimate.
    pub fn update(&mut self, usage: BandwidthUsage, throughput_bps: Option<f64>, now: SimTime) -> f64 {
        let throughput = throughput_bps.unwrap_or(self.latest_throughput_bps);
        if let Some(t) = throughput_bps {
            self.latest_throughput_bps = t;
        }
        self.change_state(usage, now);
        let new = match self.state {
            RateControlState::Hold => None,
            RateControlState::Increase => self.increase(throughput, now),
            RateControlState::Decrease => self.decrease(throughput, now),
        };
        self.current_bps = new.unwrap_or(self.current_bps).max(self.min_bps);
        self.current_bps
    }

    fn change_state(&mut self, usage: BandwidthUsage, now: SimTime) {
        match usage {
            BandwidthUsage::Normal if self.state == RateControlState::Hold => {
                self.last_change = Some(now);
                self.state = RateControlState::Increase;
            }
            BandwidthUsage::Normal => {}
            BandwidthUsage::Overusing => self.state = RateControlState::Decrease,
            BandwidthUsage::Underusing => self.state = RateControlState::Hold,
        }
    }

    fn increase(&mut self, throughput: f64, now: SimTime) -> Option<f64> {
        if throughput > self.link.upper_bps() {
            self.link.reset();
        }
        let limit = 1.5 * throughput + 10_000.0;
        let mut new = None;
        if self.current_bps < limit {
            let dt = self.last_change.map(|t| now.saturating_since(t).as_secs_f64());
            let inc = if self.link.estimate_kbps.is_some() {
                self.near_max_increase_bps_per_s() * dt.unwrap_or(0.0)
            } else {
                let alpha = 1.08f64.powf(dt.map_or(1.0, |d| d.min(1.0)));
                (self.current_bps * (alpha - 1.0)).max(1_000.0)
            };
            new = Some((self.current_bps + inc).min(limit));
        }
        self.last_change = Some(now);
        new
    }

    fn decrease(&mut self, throughput: f64, now: SimTime) -> Option<f64> {
        let mut decreased = throughput * self.backoff;
        if decreased > self.current_bps {
            if let Some(cap) = self.link.estimate_bps() {
                decreased = self.backoff * cap;
            }
        }
        let new = (decreased < self.current_bps).then_some(decreased);
        if throughput < self.link.lower_bps() {
            self.link.reset();
        }
        self.link.on_overuse(throughput);
        self.state = RateControlState::Hold;
        self.last_change = Some(now);
        new
    }

    /// Additive increase rate near the link capacity, bit/s per second.
    pub fn near_max_increase_bps_per_s(&self) -> f64 {
        let frame_bytes = self.current_bps / 8.0 / 30.0;
        let packets = (frame_bytes / 1_200.0).ceil().max(1.0);
        let avg_packet_bits = frame_bytes / packets * 8.0;
        let response_s = 2.0 * (self.rtt.as_secs_f64() + 0.1);
        (avg_packet_bits / response_s).max(4_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BandwidthUsage::*;

    fn ms(x: u64) -> SimTime {
        SimTime::from_ms(x)
    }

    #[test]
    fn multiplicative_increase_is_eight_percent_per_second_capped_by_throughput() {
        let mut a = Aimd::new(1e6, 5e3, 0.85);
        // Hold → Increase at t = 0 (Δt = 0 → the 1 kbit/s floor).
        assert_eq!(a.update(Normal, Some(2e6), ms(0)), 1_001_000.0);
        let r = a.update(Normal, Some(2e6), ms(500));
        assert!((r - 1_001_000.0 * 1.08f64.sqrt()).abs() < 1e-6);
        // Throughput 0.5 Mbit/s caps at 1.5 · 0.5 + 0.01 = 0.76 Mbit/s: no increase above the cap, and the
        // estimate is not pulled down either.
        let before = a.estimate_bps();
        assert_eq!(a.update(Normal, Some(0.5e6), ms(1_000)), before);
    }

    #[test]
    fn decrease_is_085_times_throughput_then_hold_then_additive() {
        let mut a = Aimd::new(3e6, 5e3, 0.85);
        a.update(Normal, Some(2.5e6), ms(0));
        assert_eq!(a.update(Overusing, Some(2e6), ms(100)), 1.7e6);
        assert_eq!(a.state(), RateControlState::Hold);
        assert_eq!(a.link.estimate_bps(), Some(2e6));
        // Over-use with a throughput that would raise the rate: 0.85 · capacity is used, still not upward.
        assert_eq!(a.update(Overusing, Some(2.2e6), ms(400)), 1.7e6);
        // Normal: Hold → Increase, now additive (a capacity is known). At 1.7 Mbit/s, 30 fps: 7083 B frames
        // in 6 packets of 1180.6 B = 9444 bits; rtt 200 ms → 9444 / 0.6 s = 15.7 kbit/s per second.
        a.update(Normal, Some(1.7e6), ms(500));
        let r = a.update(Normal, Some(1.7e6), ms(1_500));
        let expected = 1.7e6 + (1.7e6 / 8.0 / 30.0 / 6.0 * 8.0) / 0.6;
        assert!((r - expected).abs() < 1e-6, "{r} vs {expected}");
        // Under-use holds.
        assert_eq!(a.update(Underusing, Some(1.7e6), ms(2_000)), r);
        assert_eq!(a.state(), RateControlState::Hold);
    }

    #[test]
    fn time_to_reduce_further() {
        let mut a = Aimd::new(2e6, 5e3, 0.85);
        assert!(a.time_to_reduce_further(ms(0), 2e6));
        a.set_rtt(SimDuration::from_ms(50));
        a.update(Overusing, Some(2e6), ms(0));
        assert!(!a.time_to_reduce_further(ms(49), 1.6e6));
        assert!(a.time_to_reduce_further(ms(49), 0.8e6), "throughput below half the estimate");
        assert!(a.time_to_reduce_further(ms(50), 1.6e6));
    }

    #[test]
    fn link_capacity_bounds() {
        let mut c = LinkCapacity::default();
        assert_eq!((c.upper_bps(), c.lower_bps()), (f64::INFINITY, 0.0));
        c.on_overuse(500e3);
        // σ = sqrt(0.4 · 500) = 14.1 kbit/s (libwebrtc's "0.4 ≈ 14 kbit/s at 500 kbit/s").
        assert!((c.upper_bps() - (500e3 + 3e3 * 200f64.sqrt())).abs() < 1e-6);
        c.on_overuse(600e3);
        assert!((c.estimate_bps().unwrap() - 505e3).abs() < 1e-6);
    }
}
