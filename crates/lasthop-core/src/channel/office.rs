//! An office in working hours (Law's testbed, seed 000 §4.1: a fixed AP and client in a lab "from
//! 1 p.m. to 7 p.m.", where "personnel turnover" changes the channel). The paper gives no channel
//! numbers, so the model and every default below are ours; what the components stand for:
//!
//! ```text
//! SNR(t) = mean + drift(t) + fast(t) − deep_fade_db · [a person blocks the path] − interference_db · [burst]
//!   drift     slow shadowing as doors, chairs and people move: an Ornstein–Uhlenbeck process, std
//!             `drift_std_db`, correlation time `drift_tau_s`, drawn every `drift_step_ms`, linear between
//!   fast      multipath from people moving nearby: Rician block fading (K = `fading_k_db`) redrawn
//!             every `coherence_ms` (the same block fading as `fading = { type = "rician" }`, with a
//!             branch per receive antenna)
//!   deep fade someone walks through the line of sight: Poisson arrivals (`deep_fade_rate_hz`), each
//!             `deep_fade_ms` long and `deep_fade_db` deep (rectangular; overlapping ones do not add)
//!   burst     co-channel interference from a neighbour the AP cannot hear (a hidden transmitter):
//!             Poisson bursts (`interference_rate_hz`) of exponential length (mean
//!             `interference_burst_ms`); their power adds to the noise, so the SINR drops by
//!             `interference_db` for the burst. Co-channel traffic the AP does hear is contention,
//!             not SINR: model it with a neighbour BSS in the scenario.
//! ```
//! With Poisson arrivals the fraction of time inside a deep fade (or a burst) is 1 − e^(−rate·mean
//! length) ≈ rate · length. Every component draws from its own RNG path (`channel/<station>/office/…`)
//! in time order, so the SNR is a function of time alone: query order and density do not change it,
//! and a query earlier than the last one replays the process from the start.

use super::{check_coherence_ms, Fading};
use crate::scenario::shown;
use crate::rng::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `channel = { type = "office", snr_db = 30, ... }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct OfficeParams {
    /// Mean SNR, dB. Default 30 (a client a few metres from the AP, through one office wall).
    pub snr_db: f64,
    /// Standard deviation of the slow drift, dB. Default 3.
    pub drift_std_db: f64,
    /// Correlation time of the drift, s. Default 30.
    pub drift_tau_s: f64,
    /// Grid of the drift process, ms, at least 1. Default 100.
    pub drift_step_ms: f64,
    /// Rician K of the fast fading, dB. Default 6 (a line of sight with strong office multipath).
    pub fading_k_db: f64,
    /// Coherence time of the fast fading, ms, at least 0.1. Default 30 (people walking at ~1 m/s, 5 GHz).
    pub coherence_ms: f64,
    /// People crossing the line of sight, per second, at most 1000. Default 0.2 (12 per minute).
    pub deep_fade_rate_hz: f64,
    /// How long one crossing shadows the link, ms. Default 300.
    pub deep_fade_ms: f64,
    /// Body shadowing depth, dB. Default 15.
    pub deep_fade_db: f64,
    /// Interference bursts per second, at most 1000. Default 0.5.
    pub interference_rate_hz: f64,
    /// Mean burst length, ms (exponential). Default 40.
    pub interference_burst_ms: f64,
    /// SINR reduction during a burst, dB. Default 12.
    pub interference_db: f64,
}

impl Default for OfficeParams {
    fn default() -> Self {
        OfficeParams {
            snr_db: 30.0,
            drift_std_db: 3.0,
            drift_tau_s: 30.0,
            drift_step_ms: 100.0,
            fading_k_db: 6.0,
            coherence_ms: 30.0,
            deep_fade_rate_hz: 0.2,
            deep_fade_ms: 300.0,
            deep_fade_db: 15.0,
            interference_rate_hz: 0.5,
            interference_burst_ms: 40.0,
            interference_db: 12.0,
        }
    }
}

impl OfficeParams {
    /// Checks values; `Err((key, message))` names the offending key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let finite = [("snr_db", self.snr_db), ("fading_k_db", self.fading_k_db)];
        for (k, v) in finite {
            if !v.is_finite() {
                return Err((k, format!("must be a finite number, got {}", shown(v))));
            }
        }
        let non_negative = [
            ("drift_std_db", self.drift_std_db),
            ("deep_fade_rate_hz", self.deep_fade_rate_hz),
            ("deep_fade_ms", self.deep_fade_ms),
            ("deep_fade_db", self.deep_fade_db),
            ("interference_rate_hz", self.interference_rate_hz),
            ("interference_burst_ms", self.interference_burst_ms),
            ("interference_db", self.interference_db),
        ];
        for (k, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                return Err((k, format!("must be zero or positive, got {}", shown(v))));
            }
        }
        if !(self.drift_tau_s.is_finite() && self.drift_tau_s > 0.0) {
            return Err(("drift_tau_s", format!("must be a positive number, got {}", shown(self.drift_tau_s))));
        }
        // The drift and the fading draw every grid step and block in order, so a tiny step made a run
        // crawl (1e-300 ms: one draw per nanosecond).
        if !(self.drift_step_ms.is_finite() && self.drift_step_ms >= MIN_DRIFT_STEP_MS) {
            return Err(("drift_step_ms", format!("must be at least {MIN_DRIFT_STEP_MS} ms, got {}", shown(self.drift_step_ms))));
        }
        check_coherence_ms(self.coherence_ms).map_err(|m| ("coherence_ms", m))?;
        for (k, v) in [("deep_fade_rate_hz", self.deep_fade_rate_hz), ("interference_rate_hz", self.interference_rate_hz)] {
            if v > MAX_EVENT_RATE_HZ {
                return Err((k, format!("must be at most {MAX_EVENT_RATE_HZ} per second, got {}", shown(v))));
            }
        }
        Ok(())
    }
}

/// The drift's finest grid, ms: it models slow changes (people moving about a room).
pub const MIN_DRIFT_STEP_MS: f64 = 1.0;
/// The most crossings or interference bursts per second: one every millisecond.
pub const MAX_EVENT_RATE_HZ: f64 = 1000.0;

fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

/// The Ornstein–Uhlenbeck drift on a grid, linear in between.
#[derive(Clone, Debug)]
struct Drift {
    std: f64,
    rho: f64,
    step_ns: u64,
    rng0: Rng,
    rng: Rng,
    /// Grid index `k` and the values at k and k + 1.
    k: u64,
    x: (f64, f64),
}

impl Drift {
    fn new(p: &OfficeParams, rng: Rng) -> Self {
        let step_ns = ms_to_ns(p.drift_step_ms).max(1);
        let rho = (-(step_ns as f64 * 1e-9) / p.drift_tau_s).exp();
        let mut d = Drift { std: p.drift_std_db, rho, step_ns, rng0: rng.clone(), rng, k: 0, x: (0.0, 0.0) };
        d.reset();
        d
    }

    fn reset(&mut self) {
        self.rng = self.rng0.clone();
        self.k = 0;
        let x0 = self.std * self.rng.normal();
        self.x = (x0, self.next(x0));
    }

    fn next(&mut self, x: f64) -> f64 {
        self.rho * x + self.std * (1.0 - self.rho * self.rho).sqrt() * self.rng.normal()
    }

    fn at(&mut self, t: u64) -> f64 {
        let k = t / self.step_ns;
        if k < self.k {
            self.reset();
        }
        while self.k < k {
            let x1 = self.x.1;
            self.x = (x1, self.next(x1));
            self.k += 1;
        }
        let f = (t - k * self.step_ns) as f64 / self.step_ns as f64;
        self.x.0 + (self.x.1 - self.x.0) * f
    }
}

/// Poisson arrivals of intervals (fixed or exponential length): is one active at `t`?
#[derive(Clone, Debug)]
struct Bursts {
    rate_hz: f64,
    mean_ns: f64,
    exponential: bool,
    rng0: Rng,
    rng: Rng,
    next_start: u64,
    /// The latest end of the intervals started so far: one is active at `t` iff it is after `t`.
    until: u64,
    last: u64,
}

impl Bursts {
    fn new(rate_hz: f64, mean_ms: f64, exponential: bool, rng: Rng) -> Self {
        let mut b = Bursts { rate_hz, mean_ns: mean_ms * 1e6, exponential, rng0: rng.clone(), rng, next_start: 0, until: 0, last: 0 };
        b.reset();
        b
    }

    fn gap(&mut self) -> u64 {
        if self.rate_hz <= 0.0 {
            return u64::MAX;
        }
        (self.rng.exponential(1e9 / self.rate_hz)).round() as u64
    }

    fn reset(&mut self) {
        self.rng = self.rng0.clone();
        self.until = 0;
        self.last = 0;
        self.next_start = self.gap();
    }

    fn active_at(&mut self, t: u64) -> bool {
        if t < self.last {
            self.reset();
        }
        self.last = t;
        while self.next_start <= t {
            let len = if self.exponential { self.rng.exponential(self.mean_ns) } else { self.mean_ns };
            let start = self.next_start;
            self.until = self.until.max(start.saturating_add(len.round() as u64));
            self.next_start = start.saturating_add(self.gap().max(1));
        }
        self.until > t
    }
}

/// The office model's slow and event components (the fast fading is the channel's [`Fading`]).
#[derive(Clone, Debug)]
pub(super) struct Office {
    drift: Drift,
    fades: Bursts,
    fade_db: f64,
    bursts: Bursts,
    burst_db: f64,
}

impl Office {
    /// The model for a station's link, and its fast fading.
    pub(super) fn new(p: &OfficeParams, seed: u64, station: &str) -> (Office, Fading) {
        let rng = |what: &str| Rng::derive(seed, &format!("channel/{station}/office/{what}"));
        let office = Office {
            drift: Drift::new(p, rng("drift")),
            fades: Bursts::new(p.deep_fade_rate_hz, p.deep_fade_ms, false, rng("people")),
            fade_db: p.deep_fade_db,
            bursts: Bursts::new(p.interference_rate_hz, p.interference_burst_ms, true, rng("interference")),
            burst_db: p.interference_db,
        };
        let fading = Fading::new(10f64.powf(p.fading_k_db / 10.0), ms_to_ns(p.coherence_ms).max(1), rng("fading"));
        (office, fading)
    }

    /// Drift minus the active fade and burst, dB.
    pub(super) fn offset_db(&mut self, t: u64) -> f64 {
        let mut db = self.drift.at(t);
        if self.fades.active_at(t) {
            db -= self.fade_db;
        }
        if self.bursts.active_at(t) {
            db -= self.burst_db;
        }
        db
    }

    /// (in a deep fade, in an interference burst) at `t`.
    #[cfg(test)]
    fn events_at(&mut self, t: u64) -> (bool, bool) {
        (self.fades.active_at(t), self.bursts.active_at(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::ChannelModel;
    use crate::channel::ChannelConfig;
    use crate::time::SimTime;

    fn quiet() -> OfficeParams {
        OfficeParams { drift_std_db: 0.0, deep_fade_rate_hz: 0.0, interference_rate_hz: 0.0, ..OfficeParams::default() }
    }

    /// Poisson arrivals: the fraction of time inside a deep fade is 1 − e^(−rate·length) (here 1 Hz ×
    /// 200 ms → 18.1 %), and inside an interference burst 1 − e^(−rate·mean) (4 Hz × 25 ms → 9.5 %);
    /// fades start at the configured rate.
    #[test]
    fn fades_and_bursts_cover_rate_times_length() {
        let p = OfficeParams { deep_fade_rate_hz: 1.0, deep_fade_ms: 200.0, interference_rate_hz: 4.0, interference_burst_ms: 25.0, ..quiet() };
        let (mut o, _) = Office::new(&p, 11, "sta");
        let n = 2_000_000u64; // 2000 s at 1 ms
        let (mut fade, mut burst, mut starts, mut was) = (0u64, 0u64, 0u64, false);
        for i in 0..n {
            let (f, b) = o.events_at(i * 1_000_000);
            fade += f as u64;
            burst += b as u64;
            starts += (f && !was) as u64;
            was = f;
        }
        let (pf, pb) = (fade as f64 / n as f64, burst as f64 / n as f64);
        let (ef, eb) = (1.0 - (-0.2f64).exp(), 1.0 - (-0.1f64).exp());
        assert!((pf / ef - 1.0).abs() < 0.07, "deep fade {pf} vs {ef}");
        assert!((pb / eb - 1.0).abs() < 0.07, "burst {pb} vs {eb}");
        // Overlapping fades merge, so distinct fade periods are e^(−λd) × the arrivals: 2000 · 0.819.
        let expect = 2000.0 * (-0.2f64).exp();
        assert!((starts as f64 / expect - 1.0).abs() < 0.08, "{starts} fade periods vs {expect}");
        // The offsets are exactly the configured depths.
        let (mut o, _) = Office::new(&p, 11, "sta");
        for i in 0..200_000u64 {
            let t = i * 1_000_000;
            let db = o.offset_db(t);
            let (f, b) = o.events_at(t);
            assert_eq!(db, -(f as u8 as f64) * 15.0 - (b as u8 as f64) * 12.0);
        }
    }

    /// The drift is an Ornstein–Uhlenbeck process: standard deviation `drift_std_db` and
    /// autocorrelation e^(−1) at a lag of `drift_tau_s`.
    #[test]
    fn drift_has_its_spread_and_correlation_time() {
        let p = OfficeParams { drift_std_db: 4.0, drift_tau_s: 10.0, ..quiet() };
        let (mut o, _) = Office::new(&p, 5, "sta");
        let xs: Vec<f64> = (0..40_000u64).map(|i| o.offset_db(i * 500_000_000)).collect(); // 20000 s at 0.5 s
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        assert!(mean.abs() < 0.6, "mean {mean}");
        assert!((var.sqrt() / 4.0 - 1.0).abs() < 0.1, "std {}", var.sqrt());
        let lag = 20; // 10 s
        let cov = xs.windows(lag + 1).map(|w| (w[0] - mean) * (w[lag] - mean)).sum::<f64>() / (n - lag as f64);
        let rho = cov / var;
        assert!((rho - (-1f64).exp()).abs() < 0.06, "autocorrelation at tau {rho}");
    }

    /// The SNR depends on the time only: a densely and a sparsely queried model agree, and a query
    /// back in time replays the same values.
    #[test]
    fn snr_is_a_function_of_time() {
        let cfg = ChannelConfig::Office(OfficeParams { deep_fade_rate_hz: 2.0, interference_rate_hz: 5.0, ..OfficeParams::default() });
        let mut dense = ChannelModel::from_config(&cfg, 3, "sta");
        let mut sparse = ChannelModel::from_config(&cfg, 3, "sta");
        let mut seen = Vec::new();
        for i in 0..200_000u64 {
            let t = SimTime::from_us(i * 50);
            let v = dense.snr_db(t);
            if i % 997 == 0 {
                seen.push((t, v));
            }
        }
        for &(t, v) in &seen {
            assert_eq!(sparse.snr_db(t), v, "at {t}");
        }
        for &(t, v) in seen.iter().rev().step_by(7) {
            assert_eq!(sparse.snr_db(t), v, "back at {t}");
        }
        let mut other = ChannelModel::from_config(&cfg, 4, "sta");
        assert_ne!(other.snr_db(seen[5].0), seen[5].1, "another seed, another channel");
    }

    /// Without drift, fades or bursts the office is Rician fading around the mean; the defaults pass
    /// their checks and a bad value names its key.
    #[test]
    fn quiet_office_is_rician_and_values_are_checked() {
        let p = OfficeParams { fading_k_db: 40.0, ..quiet() };
        let mut c = ChannelModel::from_config(&ChannelConfig::Office(p.clone()), 1, "s");
        for i in 0..1000 {
            assert!((c.snr_db(SimTime::from_ms(i)) - 30.0).abs() < 0.2);
        }
        assert!(OfficeParams::default().check().is_ok());
        assert_eq!(OfficeParams { deep_fade_ms: -1.0, ..p.clone() }.check().unwrap_err().0, "deep_fade_ms");
        assert_eq!(OfficeParams { coherence_ms: 0.0, ..p.clone() }.check().unwrap_err().0, "coherence_ms");
        // Values that made the channel draw (or start bursts) without end: every block and grid step is
        // drawn in order.
        for (bad, want, says) in [
            (OfficeParams { coherence_ms: 1e-300, ..p.clone() }, "coherence_ms", "must be at least 0.1 ms"),
            (OfficeParams { coherence_ms: 0.099, ..p.clone() }, "coherence_ms", "must be at least 0.1 ms"),
            (OfficeParams { drift_step_ms: 1e-300, ..p.clone() }, "drift_step_ms", "must be at least 1 ms, got 1e-300"),
            (OfficeParams { deep_fade_rate_hz: 1e300, ..p.clone() }, "deep_fade_rate_hz", "must be at most 1000 per second, got 1e300"),
            (OfficeParams { interference_rate_hz: 1001.0, ..p.clone() }, "interference_rate_hz", "must be at most 1000 per second"),
        ] {
            let (key, msg) = bad.check().unwrap_err();
            assert_eq!(key, want, "{msg}");
            assert!(msg.starts_with(says), "{key}: {msg}");
        }
        assert!(OfficeParams { coherence_ms: 0.1, drift_step_ms: 1.0, deep_fade_rate_hz: 1000.0, ..p.clone() }.check().is_ok());
        assert_eq!(OfficeParams { snr_db: f64::NAN, ..p }.check().unwrap_err().0, "snr_db");
    }
}
