//! Loss-based controller, v1 (libwebrtc `SendSideBandwidthEstimation`, baselines.md §4.1), which also
//! combines the loss- and delay-based estimates into the target.
//!
//! Loss reports accumulate until they cover at least 20 packets; then the loss fraction is taken in
//! 1/256 units (`q = min(256·lost/expected, 255)`) and the estimate `A_s` is updated:
//!
//! ```text
//! first 2 s after the first report, no loss yet:  A_s = delay-based estimate
//! q/256 ≤ 2 %:   A_s = 1.08 · min(A_s over the last second) + 1 kbit/s
//! q/256 ≤ 10 %:  hold
//! otherwise:     A_s = A_s · (512 − q)/512  (= 1 − loss/2), at most once per loss report and per 300 ms + RTT
//! target = clamp(A_s, min, min(delay-based, max))
//! ```
//!
//! The update runs at every report; libwebrtc also runs it every 25 ms, which changes nothing between
//! reports because the increase is relative to the last second's minimum. Reports older than 6 s (1.2 ×
//! the 5 s maximum RTCP interval) are not acted on. In libwebrtc the loss counts come from RTCP receiver
//! reports; here the caller derives them from TWCC feedback (first report of each packet).

use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

const LIMIT_NUM_PACKETS: u64 = 20;
const START_PHASE: SimDuration = SimDuration::from_ms(2_000);
const INCREASE_INTERVAL: SimDuration = SimDuration::from_ms(1_000);
const DECREASE_INTERVAL: SimDuration = SimDuration::from_ms(300);
const MAX_REPORT_AGE: SimDuration = SimDuration::from_ms(6_000);

/// The loss-based estimate and the target it yields.
#[derive(Clone, Debug)]
pub struct LossBased {
    low: f64,
    high: f64,
    min_bps: f64,
    max_bps: f64,
    current_bps: f64,
    delay_limit_bps: f64,
    min_history: VecDeque<(SimTime, f64)>,
    lost_acc: i64,
    expected_acc: u64,
    last_fraction_q8: u8,
    decreased_since_last_fraction: bool,
    last_report: Option<SimTime>,
    last_decrease: Option<SimTime>,
    first_report: Option<SimTime>,
    rtt: SimDuration,
}

impl LossBased {
    pub fn new(start_bps: f64, min_bps: f64, max_bps: f64, low: f64, high: f64) -> Self {
        LossBased {
            low,
            high,
            min_bps,
            max_bps,
            current_bps: start_bps.clamp(min_bps, max_bps),
            delay_limit_bps: f64::INFINITY,
            min_history: VecDeque::new(),
            lost_acc: 0,
            expected_acc: 0,
            last_fraction_q8: 0,
            decreased_since_last_fraction: false,
            last_report: None,
            last_decrease: None,
            first_report: None,
            rtt: SimDuration::ZERO,
        }
    }

    /// The combined target, bit/s.
    pub fn target_bps(&self) -> f64 {
        self.current_bps
    }

    /// Loss fraction of the last complete report window, 1/256 units.
    pub fn fraction_q8(&self) -> u8 {
        self.last_fraction_q8
    }

    pub fn set_rtt(&mut self, rtt: SimDuration) {
        self.rtt = rtt;
    }

    /// `lost` of `expected` newly reported packets (`lost` may be negative when packets reported lost
    /// arrived after all, as in RTCP's cumulative counts).
    pub fn update_packets_lost(&mut self, now: SimTime, lost: i64, expected: u64) {
        self.first_report.get_or_insert(now);
        if expected == 0 {
            return;
        }
        self.lost_acc += lost;
        self.expected_acc += expected;
        if self.expected_acc < LIMIT_NUM_PACKETS {
            return;
        }
        self.decreased_since_last_fraction = false;
        self.last_fraction_q8 = ((self.lost_acc << 8) / self.expected_acc as i64).clamp(0, 255) as u8;
        self.lost_acc = 0;
        self.expected_acc = 0;
        self.last_report = Some(now);
        self.update_estimate(now);
    }

    /// Jumps to `bps` (a probe result), forgetting the delay-based cap and the increase history
    /// (libwebrtc `SetSendBitrate`).
    pub fn set_send_bitrate(&mut self, bps: f64) {
        self.delay_limit_bps = f64::INFINITY;
        self.set_target(bps);
        self.min_history.clear();
    }

    /// A new delay-based estimate: it caps the target from now on.
    pub fn update_delay_based(&mut self, bps: f64) {
        self.delay_limit_bps = if bps == 0.0 { f64::INFINITY } else { bps };
        self.set_target(self.current_bps);
    }

    fn in_start_phase(&self, now: SimTime) -> bool {
        self.first_report.is_none_or(|t| now.saturating_since(t) < START_PHASE)
    }

    /// The loss rule (see the module docs).
    pub fn update_estimate(&mut self, now: SimTime) {
        if self.last_fraction_q8 == 0 && self.in_start_phase(now) {
            let new = self.delay_limit_bps;
            if new.is_finite() && new != self.current_bps {
                self.min_history.clear();
                self.min_history.push_back((now, self.current_bps));
                self.set_target(new);
                return;
            }
        }
        self.update_min_history(now);
        let Some(report) = self.last_report else {
            return;
        };
        if now.saturating_since(report) >= MAX_REPORT_AGE {
            return;
        }
        let loss = self.last_fraction_q8 as f64 / 256.0;
        if loss <= self.low {
            let floor = self.min_history.front().map_or(self.current_bps, |h| h.1);
            self.set_target((floor * 1.08 + 0.5).floor() + 1_000.0);
        } else if loss > self.high {
            let since = self.last_decrease.map_or(SimDuration::MAX, |t| now.saturating_since(t));
            if !self.decreased_since_last_fraction && since >= DECREASE_INTERVAL + self.rtt {
                self.last_decrease = Some(now);
                self.decreased_since_last_fraction = true;
                let q = self.last_fraction_q8 as f64;
                self.set_target(self.current_bps * (512.0 - q) / 512.0);
            }
        }
    }

    fn update_min_history(&mut self, now: SimTime) {
        while self
            .min_history
            .front()
            .is_some_and(|h| now.saturating_since(h.0) + SimDuration::from_ms(1) > INCREASE_INTERVAL)
        {
            self.min_history.pop_front();
        }
        while self.min_history.back().is_some_and(|h| self.current_bps <= h.1) {
            self.min_history.pop_back();
        }
        self.min_history.push_back((now, self.current_bps));
    }

    fn set_target(&mut self, bps: f64) {
        let upper = self.delay_limit_bps.min(self.max_bps);
        self.current_bps = bps.min(upper).max(self.min_bps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime::from_ms(x)
    }

    #[test]
    fn start_phase_follows_the_delay_based_estimate() {
        let mut l = LossBased::new(300e3, 5e3, 100e6, 0.02, 0.1);
        l.update_packets_lost(ms(0), 0, 25);
        l.update_delay_based(800e3);
        l.update_estimate(ms(100));
        assert_eq!(l.target_bps(), 800e3);
    }

    #[test]
    fn low_loss_increases_from_the_last_seconds_minimum_capped_by_delay() {
        let mut l = LossBased::new(1e6, 5e3, 100e6, 0.02, 0.1);
        // No delay-based estimate yet, so the start-phase rule does not apply: 1.08 · 1 Mbit/s + 1 kbit/s.
        l.update_packets_lost(ms(0), 0, 25);
        assert_eq!(l.target_bps(), 1_081_000.0);
        // 100 ms later the minimum over the last second is still 1 Mbit/s: the same target.
        l.update_packets_lost(ms(100), 0, 25);
        assert_eq!(l.target_bps(), 1_081_000.0);
        // Once the 1 Mbit/s entry is a second old, the minimum is 1.081 Mbit/s.
        l.update_packets_lost(ms(1_100), 0, 25);
        assert_eq!(l.target_bps(), 1_168_480.0);
        // Capped by the delay-based estimate.
        l.update_delay_based(1.1e6);
        assert_eq!(l.target_bps(), 1.1e6);
    }

    #[test]
    fn high_loss_decreases_by_half_the_loss_once_per_interval() {
        let mut l = LossBased::new(1e6, 5e3, 100e6, 0.02, 0.1);
        l.update_delay_based(2e6);
        // 5 of 25 lost: q = 51, factor (512 − 51)/512.
        l.update_packets_lost(ms(0), 5, 25);
        assert_eq!(l.fraction_q8(), 51);
        let after = 1e6 * 461.0 / 512.0;
        assert_eq!(l.target_bps(), after);
        // The next report 100 ms later may not decrease again (300 ms + RTT).
        l.update_packets_lost(ms(100), 5, 25);
        assert_eq!(l.target_bps(), after);
        l.update_packets_lost(ms(300), 5, 25);
        assert_eq!(l.target_bps(), after * 461.0 / 512.0);
        // 5 % loss holds; fewer than 20 packets do not make a report.
        let held = l.target_bps();
        l.update_packets_lost(ms(1_000), 1, 20);
        assert_eq!(l.target_bps(), held);
        l.update_packets_lost(ms(1_100), 5, 10);
        assert_eq!((l.target_bps(), l.fraction_q8()), (held, 12));
    }
}
