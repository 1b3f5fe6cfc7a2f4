//! Trendline filter and over-use detector with an adaptive threshold (libwebrtc
//! `TrendlineEstimator`, baselines.md §4.1).
//!
//! Per inter-group sample `d = arrival_delta − send_delta` (ms):
//!
//! ```text
//! acc += d;  smoothed = α·smoothed + (1 − α)·acc;  n = min(n + 1, 1000)
//! push (arrival_ms − first_arrival_ms, smoothed), keep the last `window`
//! slope = least-squares slope of the window once it is full (else the previous slope)
//! m = min(n, 60) · slope · gain
//! ```
//!
//! Detector: `m > γ` accumulates over-use time (half the send delta the first time, then each send
//! delta) and a counter; *over-using* once the time exceeds 10 ms, the counter exceeds 1 and the slope
//! has not fallen since the previous sample (otherwise the previous state is kept). `m < −γ` is
//! *under-using*, anything else *normal* (both clear the timer). The threshold adapts:
//! `γ += k·(|m| − γ)·min(Δt_ms, 100)` with `k = k_down` when `|m| < γ` else `k_up`, clamped to [6, 600],
//! and not at all (only the clock moves) when `|m| > γ + 15`. With fewer than two samples the state is
//! normal. Timestamps are whole milliseconds, rounded, as libwebrtc's `Timestamp::ms()`.

use serde::Serialize;
use std::collections::VecDeque;

const MAX_ADAPT_OFFSET_MS: f64 = 15.0;
const MIN_NUM_DELTAS: u32 = 60;
const DELTA_COUNTER_MAX: u32 = 1_000;
const MAX_TIME_DELTA_MS: f64 = 100.0;

/// The detector's verdict on the path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum BandwidthUsage {
    #[default]
    Normal,
    Underusing,
    Overusing,
}

/// Constants of the filter and detector (all libwebrtc's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrendlineConfig {
    pub window: usize,
    pub smoothing: f64,
    pub gain: f64,
    pub k_up: f64,
    pub k_down: f64,
    pub initial_threshold_ms: f64,
    pub overuse_time_ms: f64,
}

/// The trendline estimator and its detector.
#[derive(Clone, Debug)]
pub struct Trendline {
    cfg: TrendlineConfig,
    num_deltas: u32,
    first_arrival_ms: Option<f64>,
    accumulated: f64,
    smoothed: f64,
    hist: VecDeque<(f64, f64)>,
    threshold: f64,
    modified_trend: f64,
    last_update_ms: Option<f64>,
    prev_trend: f64,
    time_over_using: f64,
    overuse_counter: u32,
    state: BandwidthUsage,
}

impl Trendline {
    pub fn new(cfg: TrendlineConfig) -> Self {
        Trendline {
            cfg,
            num_deltas: 0,
            first_arrival_ms: None,
            accumulated: 0.0,
            smoothed: 0.0,
            hist: VecDeque::with_capacity(cfg.window + 1),
            threshold: cfg.initial_threshold_ms,
            modified_trend: f64::NAN,
            last_update_ms: None,
            prev_trend: 0.0,
            time_over_using: -1.0,
            overuse_counter: 0,
            state: BandwidthUsage::Normal,
        }
    }

    /// One inter-group sample: deltas in ms, the arrival time of the group's last packet in whole ms.
    pub fn update(&mut self, recv_delta_ms: f64, send_delta_ms: f64, arrival_ms: f64) {
        self.num_deltas = (self.num_deltas + 1).min(DELTA_COUNTER_MAX);
        let first = *self.first_arrival_ms.get_or_insert(arrival_ms);
        self.accumulated += recv_delta_ms - send_delta_ms;
        let a = self.cfg.smoothing;
        self.smoothed = a * self.smoothed + (1.0 - a) * self.accumulated;
        self.hist.push_back((arrival_ms - first, self.smoothed));
        if self.hist.len() > self.cfg.window {
            self.hist.pop_front();
        }
        let mut trend = self.prev_trend;
        if self.hist.len() == self.cfg.window {
            trend = linear_fit_slope(&self.hist).unwrap_or(trend);
        }
        self.detect(trend, send_delta_ms, arrival_ms);
    }

    fn detect(&mut self, trend: f64, send_delta_ms: f64, now_ms: f64) {
        if self.num_deltas < 2 {
            self.state = BandwidthUsage::Normal;
            return;
        }
        let m = self.num_deltas.min(MIN_NUM_DELTAS) as f64 * trend * self.cfg.gain;
        self.modified_trend = m;
        if m > self.threshold {
            if self.time_over_using < 0.0 {
                self.time_over_using = send_delta_ms / 2.0;
            } else {
                self.time_over_using += send_delta_ms;
            }
            self.overuse_counter += 1;
            if self.time_over_using > self.cfg.overuse_time_ms && self.overuse_counter > 1 && trend >= self.prev_trend {
                self.time_over_using = 0.0;
                self.overuse_counter = 0;
                self.state = BandwidthUsage::Overusing;
            }
        } else {
            self.time_over_using = -1.0;
            self.overuse_counter = 0;
            self.state = if m < -self.threshold { BandwidthUsage::Underusing } else { BandwidthUsage::Normal };
        }
        self.prev_trend = trend;
        self.update_threshold(m, now_ms);
    }

    fn update_threshold(&mut self, m: f64, now_ms: f64) {
        let last = *self.last_update_ms.get_or_insert(now_ms);
        self.last_update_ms = Some(now_ms);
        if m.abs() > self.threshold + MAX_ADAPT_OFFSET_MS {
            return;
        }
        let k = if m.abs() < self.threshold { self.cfg.k_down } else { self.cfg.k_up };
        let dt = (now_ms - last).min(MAX_TIME_DELTA_MS);
        self.threshold = (self.threshold + k * (m.abs() - self.threshold) * dt).clamp(6.0, 600.0);
    }

    pub fn state(&self) -> BandwidthUsage {
        self.state
    }

    /// The adaptive threshold γ, ms.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The last modified trend `m` (NaN before two samples).
    pub fn modified_trend(&self) -> f64 {
        self.modified_trend
    }

    /// The last slope used.
    pub fn trend(&self) -> f64 {
        self.prev_trend
    }
}

/// Least-squares slope of `(x, y)` points; `None` when all `x` are equal.
fn linear_fit_slope(points: &VecDeque<(f64, f64)>) -> Option<f64> {
    let n = points.len() as f64;
    let x_avg = points.iter().map(|p| p.0).sum::<f64>() / n;
    let y_avg = points.iter().map(|p| p.1).sum::<f64>() / n;
    let num: f64 = points.iter().map(|p| (p.0 - x_avg) * (p.1 - y_avg)).sum();
    let den: f64 = points.iter().map(|p| (p.0 - x_avg).powi(2)).sum();
    (den != 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TrendlineConfig {
        TrendlineConfig {
            window: 20,
            smoothing: 0.9,
            gain: 4.0,
            k_up: 0.0087,
            k_down: 0.039,
            initial_threshold_ms: 12.5,
            overuse_time_ms: 10.0,
        }
    }

    #[test]
    fn slope_of_a_line() {
        let pts: VecDeque<(f64, f64)> = (0..20).map(|i| (i as f64 * 10.0, 3.0 + 0.25 * i as f64 * 10.0)).collect();
        assert!((linear_fit_slope(&pts).unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(linear_fit_slope(&VecDeque::from(vec![(1.0, 1.0), (1.0, 2.0)])), None);
    }

    #[test]
    fn steady_growth_is_overuse_flat_is_normal_shrinking_is_underuse() {
        // Groups 10 ms apart at the sender arriving 11 ms apart: d = +1 ms per group (queue growing at 10 %).
        let mut t = Trendline::new(cfg());
        let mut arrival = 0.0;
        let mut first_overuse = None;
        for i in 0..60 {
            arrival += 11.0;
            t.update(11.0, 10.0, arrival);
            if t.state() == BandwidthUsage::Overusing && first_overuse.is_none() {
                first_overuse = Some(i);
            }
        }
        // Until the window of 20 is full the slope is 0, so γ adapts down to its floor of 6; the fitted
        // slope of the lagging smoothed delay then grows, m = n · slope · 4 passes 6 at sample 22 and the
        // next one (over-use time 5 + 10 ms > 10 ms, two samples) declares over-use (checked against a
        // direct transcription of the formulas).
        assert_eq!(first_overuse, Some(23));
        // Flat delays after a long history: the smoothed accumulator stops moving, the slope falls to 0.
        let mut t = Trendline::new(cfg());
        for i in 1..=60 {
            t.update(10.0, 10.0, i as f64 * 10.0);
        }
        assert_eq!(t.state(), BandwidthUsage::Normal);
        assert_eq!(t.modified_trend(), 0.0);
        // A draining queue: d = −1 ms per group.
        let mut t = Trendline::new(cfg());
        for i in 1..=40 {
            t.update(9.0, 10.0, i as f64 * 9.0);
        }
        assert_eq!(t.state(), BandwidthUsage::Underusing);
    }

    #[test]
    fn threshold_adapts_toward_m_but_ignores_spikes() {
        let mut t = Trendline::new(cfg());
        t.update(10.0, 10.0, 0.0);
        // The first detection only starts the threshold clock (Δt = 0).
        t.update(10.0, 10.0, 10.0);
        assert_eq!(t.threshold(), 12.5);
        t.update(10.0, 10.0, 20.0);
        // m = 0 < γ: γ += 0.039 · (0 − 12.5) · 10 = −4.875 → 7.625.
        assert!((t.threshold() - 7.625).abs() < 1e-9, "{}", t.threshold());
        t.update(10.0, 10.0, 1_000.0);
        // Δt capped at 100 ms: 7.625 − 0.039 · 7.625 · 100 < 6 → clamped to 6.
        assert_eq!(t.threshold(), 6.0);
        // A spike |m| > γ + 15 leaves γ alone.
        let mut t = Trendline::new(cfg());
        t.update_threshold(100.0, 0.0);
        t.update_threshold(100.0, 50.0);
        assert_eq!(t.threshold(), 12.5);
        // Above γ (but within 15): k_up · (20 − 12.5) · 50 = 3.2625.
        t.update_threshold(20.0, 100.0);
        assert!((t.threshold() - 15.7625).abs() < 1e-9);
    }
}
