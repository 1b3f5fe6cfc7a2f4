//! Acknowledged-bitrate estimator (libwebrtc `AcknowledgedBitrateEstimator` over `BitrateEstimator`).
//!
//! Acknowledged bytes are summed over windows of arrival time: 500 ms for the first sample, 150 ms after
//! (a window restarts when nothing arrived for longer than a window). Each window gives a sample
//! `r = 8·bytes / window` (kbit/s) that updates a Bayesian estimate whose sample variance grows with the
//! sample's distance from the estimate:
//!
//! ```text
//! u = 10·|est − r| / est;   σ²_s = u²;   σ²_p = σ² + 5
//! est = (σ²_s·est + σ²_p·r) / (σ²_s + σ²_p);   σ² = σ²_s·σ²_p / (σ²_s + σ²_p)      (σ² starts at 50)
//! ```
//!
//! The first sample initialises the estimate. Times are whole milliseconds as in libwebrtc.

use crate::units::BitRate;

const INITIAL_WINDOW_MS: i64 = 500;
const WINDOW_MS: i64 = 150;
const UNCERTAINTY_SCALE: f64 = 10.0;

/// The estimator's state.
#[derive(Clone, Debug)]
pub struct AckedBitrate {
    sum_bytes: u64,
    current_window_ms: i64,
    prev_time_ms: Option<i64>,
    estimate_kbps: Option<f64>,
    var: f64,
}

impl Default for AckedBitrate {
    fn default() -> Self {
        AckedBitrate { sum_bytes: 0, current_window_ms: 0, prev_time_ms: None, estimate_kbps: None, var: 50.0 }
    }
}

impl AckedBitrate {
    /// One acknowledged packet of `bytes` that arrived at `arrival_ms` (feed in arrival order).
    pub fn update(&mut self, arrival_ms: i64, bytes: u64) {
        let window = if self.estimate_kbps.is_none() { INITIAL_WINDOW_MS } else { WINDOW_MS };
        let Some(sample) = self.update_window(arrival_ms, bytes, window) else {
            return;
        };
        let Some(est) = self.estimate_kbps else {
            self.estimate_kbps = Some(sample);
            return;
        };
        let u = UNCERTAINTY_SCALE * (est - sample).abs() / est;
        let sample_var = u * u;
        let pred_var = self.var + 5.0;
        self.estimate_kbps = Some((sample_var * est + pred_var * sample) / (sample_var + pred_var));
        self.var = sample_var * pred_var / (sample_var + pred_var);
    }

    fn update_window(&mut self, now_ms: i64, bytes: u64, window_ms: i64) -> Option<f64> {
        if self.prev_time_ms.is_some_and(|p| now_ms < p) {
            self.prev_time_ms = None;
            self.sum_bytes = 0;
            self.current_window_ms = 0;
        }
        if let Some(prev) = self.prev_time_ms {
            self.current_window_ms += now_ms - prev;
            if now_ms - prev > window_ms {
                self.sum_bytes = 0;
                self.current_window_ms %= window_ms;
            }
        }
        self.prev_time_ms = Some(now_ms);
        let mut sample = None;
        if self.current_window_ms >= window_ms {
            sample = Some(8.0 * self.sum_bytes as f64 / window_ms as f64);
            self.current_window_ms -= window_ms;
            self.sum_bytes = 0;
        }
        self.sum_bytes += bytes;
        sample
    }

    /// The estimate, once the first window has closed.
    pub fn bitrate(&self) -> Option<BitRate> {
        self.estimate_kbps.map(|k| BitRate::from_bps((k * 1e3).round() as u64))
    }

    pub fn bitrate_bps(&self) -> Option<f64> {
        self.estimate_kbps.map(|k| k * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_estimate_after_500_ms_then_smoothed_150_ms_samples() {
        let mut a = AckedBitrate::default();
        // 1000 B every 4 ms = 2 Mbit/s.
        let mut t = 0;
        while t < 500 {
            a.update(t, 1_000);
            t += 4;
        }
        assert_eq!(a.bitrate(), None);
        a.update(500, 1_000);
        // The window [0, 500) held 125 packets: 8 · 125 000 / 500 = 2000 kbit/s.
        assert_eq!(a.bitrate(), Some(BitRate::from_mbps(2)));
        // A steady rate keeps it there; a halved rate pulls it down gradually, not at once.
        while t < 1_500 {
            t += 8;
            a.update(t, 1_000);
        }
        let r = a.bitrate_bps().unwrap();
        assert!(r < 1.5e6 && r > 0.95e6, "{r}");
    }

    #[test]
    fn a_gap_longer_than_a_window_restarts_it() {
        let mut a = AckedBitrate::default();
        a.update(0, 1_000);
        a.update(700, 1_000);
        assert_eq!(a.bitrate(), None, "the 700 ms gap discards the partial window");
        a.update(1_200, 1_000);
        assert_eq!(a.bitrate_bps(), Some(8.0 * 1_000.0 / 500.0 * 1e3));
    }
}
