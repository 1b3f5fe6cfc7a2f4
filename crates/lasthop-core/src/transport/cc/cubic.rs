//! CUBIC (RFC 9438), the Linux default, with HyStart++ (RFC 9406) in the initial slow start.
//! Spec: baselines.md §4.4.
//!
//! Windows in the formulas are in segments (C = 0.4 segments/s³), the window kept is in bytes.
//! * **Slow start** while `cwnd < ssthresh`: `cwnd += bytes_acked`; with HyStart++ at most 8 segments
//!   per ACK when unpaced and a quarter of that in CSS ([`super::hystart`]).
//! * **Congestion avoidance** (§4.2–4.5). A CA epoch starts on the first ACK in congestion avoidance:
//!   `t_epoch = now`, `cwnd_epoch = cwnd`, `W_est = cwnd`, `K = ∛((W_max − cwnd_epoch)/C)`. Per ACK,
//!   `W_cubic(t) = C·(t − K)³ + W_max` with `t = now − t_epoch`;
//!   `target = clamp(W_cubic(t + srtt), cwnd, 1.5·cwnd)`; `W_est += α·acked/cwnd` with
//!   `α = 3(1 − β)/(1 + β)` until `W_est ≥ cwnd_prior`, then 1 (§4.3). If `W_cubic(t) < W_est` the
//!   window is `W_est` (Reno-friendly region), else `cwnd += (target − cwnd)/cwnd` per acked segment.
//! * **Congestion event** (§4.6–4.7): `cwnd_prior = cwnd`; `W_max = cwnd·(1 + β)/2` if fast convergence
//!   is on and `cwnd < W_max`, else `cwnd`; `ssthresh = cwnd = max(β·cwnd, 2·MSS)`; the epoch ends.
//! * **Timeout** (§4.8): the same ssthresh, `cwnd = 1·MSS`, and the next epoch uses `K = 0` and
//!   `W_max = cwnd_epoch`.
//!
//! Choices where the RFC leaves room:
//! * β is applied to cwnd, not FlightSize (Linux and Windows; RFC 9438 §4.6 allows either).
//! * When `cwnd_epoch ≥ W_max` (slow start ended without a loss, or after a timeout) the epoch uses
//!   `K = 0` and the curve's plateau is `cwnd_epoch` (Linux `bictcp_update`: `bic_K = 0`,
//!   `bic_origin_point = cwnd`).
//! * `srtt` is an RFC 6298 EWMA of the RTT samples (the RFC says "smoothed RTT"; Linux uses the min RTT).
//! * Restart after idle shifts `t_epoch` by the time since the last send (Linux `bictcp_cwnd_event`,
//!   `CA_EVENT_TX_START`), so idle time does not count as growth time (§5.8).
//! * Linux's own HyStart (ACK trains + delay) is not modelled; `hystart = true` means HyStart++.
//! * No spurious-loss undo (§4.9) and no ECN.

use super::hystart::{HyStart, SlowStartStep};
use super::{check, linux_pacing_rate, AckEvent, CaState, CcError, CongestionControl, LossEvent};
use super::{Recovery, RoundCounter, SentEvent, SmoothedRtt};
use crate::time::SimTime;
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `cc = { type = "cubic", beta = 0.7, c = 0.4, fast_convergence = true, reno_friendly = true,
/// hystart = true, initial_window = 10, pacing = false }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CubicParams {
    /// Multiplicative decrease factor β_cubic (RFC 9438 §4.6: 0.7; Linux `beta` 717/1024).
    pub beta: f64,
    /// Aggressiveness C in segments/s³ (RFC 9438 §5: 0.4; Linux `bic_scale` 41/1024 × 10).
    pub c: f64,
    /// Fast convergence (RFC 9438 §4.7; Linux `fast_convergence` = 1).
    pub fast_convergence: bool,
    /// Reno-friendly region (RFC 9438 §4.3; Linux `tcp_friendliness` = 1).
    pub reno_friendly: bool,
    /// HyStart++ in the initial slow start (RFC 9406; RFC 9438 §4.10 recommends it). Default true.
    pub hystart: bool,
    /// Initial window in segments (RFC 6928 and Linux `TCP_INIT_CWND`: 10).
    pub initial_window: u32,
    /// Pace at Linux's `tcp_update_pacing_rate`; also lifts HyStart++'s per-ACK cap. Default false.
    pub pacing: bool,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams {
            beta: 0.7,
            c: 0.4,
            fast_convergence: true,
            reno_friendly: true,
            hystart: true,
            initial_window: 10,
            pacing: false,
        }
    }
}

impl CubicParams {
    pub fn validate(&self) -> Result<(), CcError> {
        check(
            self.beta > 0.0 && self.beta < 1.0,
            "beta",
            "must be in (0, 1)",
        )?;
        check(
            self.c.is_finite() && self.c > 0.0,
            "c",
            "must be finite and > 0",
        )?;
        check(
            self.initial_window >= 1,
            "initial_window",
            "must be at least 1 segment",
        )
    }
}

/// State and counters for `stats()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CubicStats {
    /// `slow_start`, `css`, `congestion_avoidance`, `recovery` or `loss`.
    pub state: &'static str,
    pub cwnd: u64,
    pub ssthresh: u64,
    /// W_max in bytes.
    pub w_max: u64,
    /// K of the current epoch, seconds.
    pub k_s: f64,
    pub srtt_ns: u64,
    pub congestion_events: u64,
    pub rtos: u64,
    /// Times HyStart++ entered Conservative Slow Start.
    pub css_entries: u64,
    /// Packet-timed round trips so far.
    pub rounds: u64,
}

/// The current congestion-avoidance epoch.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    start: SimTime,
    /// K, seconds.
    k: f64,
    /// The plateau of the curve, segments (W_max, or cwnd_epoch when that is larger).
    origin: f64,
    /// Reno-friendly estimate, segments.
    w_est: f64,
}

/// RFC 9438 CUBIC.
#[derive(Clone, Debug)]
pub struct Cubic {
    mss: u64,
    p: CubicParams,
    cwnd: u64,
    ssthresh: u64,
    /// W_max, segments (0 = none yet, or reset by a timeout).
    w_max: f64,
    /// cwnd before the last reduction, segments.
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// Σ (target − cwnd)·acked not yet turned into whole bytes of window (bytes²).
    growth_acc: u128,
    recovery: Recovery,
    rounds: RoundCounter,
    hystart: HyStart,
    srtt: SmoothedRtt,
    last_sent: Option<SimTime>,
    congestion_events: u64,
    rtos: u64,
}

impl Cubic {
    pub fn new(p: &CubicParams, mss: u64) -> Self {
        Cubic {
            mss,
            p: p.clone(),
            cwnd: p.initial_window as u64 * mss,
            ssthresh: u64::MAX,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            growth_acc: 0,
            recovery: Recovery::default(),
            rounds: RoundCounter::default(),
            hystart: HyStart::new(p.hystart),
            srtt: SmoothedRtt::default(),
            last_sent: None,
            congestion_events: 0,
            rtos: 0,
        }
    }

    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// W_max in bytes.
    pub fn w_max(&self) -> u64 {
        (self.w_max * self.mss as f64) as u64
    }

    /// K of the current epoch in seconds, if one is running.
    pub fn k(&self) -> Option<f64> {
        self.epoch.map(|e| e.k)
    }

    pub fn ca_state(&self) -> CaState {
        self.recovery.state()
    }

    /// `slow_start`, `css`, `congestion_avoidance`, `recovery` or `loss`.
    pub fn state_name(&self) -> &'static str {
        match self.recovery.state() {
            CaState::Open if self.cwnd < self.ssthresh && self.hystart.in_css() => "css",
            CaState::Open if self.cwnd < self.ssthresh => "slow_start",
            CaState::Open => "congestion_avoidance",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }

    fn segs(&self, bytes: u64) -> f64 {
        bytes as f64 / self.mss as f64
    }

    /// W_cubic(t) in segments, `t` in seconds since the epoch start.
    fn w_cubic(&self, e: &Epoch, t: f64) -> f64 {
        let d = t - e.k;
        self.p.c * d * d * d + e.origin
    }

    /// Slow start; returns the acknowledged bytes left over for congestion avoidance.
    fn slow_start(&mut self, ack: &AckEvent, round_start: bool) -> u64 {
        let acked = ack.bytes_acked;
        let hystart = self.hystart.active();
        let divisor = match self.hystart.on_ack(round_start, ack.rtt) {
            SlowStartStep::EnterCongestionAvoidance => {
                self.ssthresh = self.cwnd;
                return acked;
            }
            SlowStartStep::Grow { divisor } => divisor,
        };
        let cap = if hystart && !self.p.pacing {
            8 * self.mss
        } else {
            u64::MAX
        };
        let grow = (acked.min(cap) / divisor).min(self.ssthresh - self.cwnd);
        self.cwnd += grow;
        if self.cwnd >= self.ssthresh {
            acked.saturating_sub(grow * divisor)
        } else {
            0
        }
    }

    fn start_epoch(&mut self, now: SimTime) -> Epoch {
        let cwnd = self.segs(self.cwnd);
        let (k, origin) = if self.w_max <= cwnd {
            (0.0, cwnd)
        } else {
            (cbrt((self.w_max - cwnd) / self.p.c), self.w_max)
        };
        self.growth_acc = 0;
        Epoch {
            start: now,
            k,
            origin,
            w_est: cwnd,
        }
    }

    /// RFC 9438 §4.2–4.5 for one ACK of `acked` bytes.
    fn congestion_avoidance(&mut self, now: SimTime, acked: u64) {
        let mut e = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(now),
        };
        let cwnd = self.segs(self.cwnd);
        let t = now.saturating_since(e.start).as_ns() as f64 * 1e-9;
        let rtt = self.srtt.get().map_or(0.0, |r| r.as_ns() as f64 * 1e-9);
        let target = self.w_cubic(&e, t + rtt).clamp(cwnd, 1.5 * cwnd);
        let alpha = if e.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - self.p.beta) / (1.0 + self.p.beta)
        };
        e.w_est += alpha * acked as f64 / self.cwnd as f64;
        self.epoch = Some(e);
        if self.p.reno_friendly && self.w_cubic(&e, t) < e.w_est {
            let est = (e.w_est * self.mss as f64) as u64;
            self.cwnd = self.cwnd.max(est);
            return;
        }
        let target_bytes = (target * self.mss as f64) as u64;
        self.growth_acc += target_bytes.saturating_sub(self.cwnd) as u128 * acked as u128;
        let inc = self.growth_acc / self.cwnd as u128;
        self.growth_acc %= self.cwnd as u128;
        self.cwnd += inc as u64;
    }

    /// ssthresh and W_max for a congestion event or a first timeout (§4.6, §4.7).
    fn reduce(&mut self) {
        let cwnd = self.segs(self.cwnd);
        self.cwnd_prior = cwnd;
        self.w_max = if self.p.fast_convergence && cwnd < self.w_max {
            cwnd * (1.0 + self.p.beta) / 2.0
        } else {
            cwnd
        };
        let reduced = (self.cwnd as f64 * self.p.beta) as u64;
        self.ssthresh = reduced.max(2 * self.mss);
        self.epoch = None;
        self.hystart.disable();
    }
}

impl CongestionControl for Cubic {
    fn on_sent(&mut self, now: SimTime, sent: &SentEvent) {
        if sent.prior_in_flight == 0 {
            if let (Some(e), Some(last)) = (self.epoch.as_mut(), self.last_sent) {
                e.start = (e.start + now.saturating_since(last)).min(now);
            }
        }
        self.last_sent = Some(now);
    }

    fn on_ack(&mut self, now: SimTime, ack: &AckEvent) {
        self.srtt.update(ack.rtt);
        let round_start = self.rounds.on_ack(&ack.rate);
        self.recovery.on_ack(ack.rate.sent_time);
        if self.recovery.in_recovery() || ack.rate.is_app_limited {
            return;
        }
        let mut acked = ack.bytes_acked;
        if self.cwnd < self.ssthresh {
            acked = self.slow_start(ack, round_start);
        }
        if acked > 0 {
            self.congestion_avoidance(now, acked);
        }
    }

    fn on_loss(&mut self, now: SimTime, loss: &LossEvent) {
        if self.recovery.on_loss(now, loss.largest_lost_sent) {
            self.congestion_events += 1;
            self.reduce();
            self.cwnd = self.ssthresh;
        }
    }

    fn on_rto(&mut self, now: SimTime) {
        self.rtos += 1;
        if self.recovery.on_rto(now) {
            self.reduce();
        }
        self.w_max = 0.0;
        self.epoch = None;
        self.hystart.disable();
        self.cwnd = self.mss;
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        self.p
            .pacing
            .then(|| linux_pacing_rate(self.cwnd, self.ssthresh, self.srtt.get()))
            .flatten()
    }

    fn stats(&self) -> serde_json::Value {
        let s = CubicStats {
            state: self.state_name(),
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            w_max: self.w_max(),
            k_s: self.k().unwrap_or(0.0),
            srtt_ns: self.srtt.get().map_or(0, |r| r.as_ns()),
            congestion_events: self.congestion_events,
            rtos: self.rtos,
            css_entries: self.hystart.css_entries,
            rounds: self.rounds.count,
        };
        serde_json::to_value(s).expect("plain struct")
    }
}

/// Cube root by Newton's method with only IEEE-exact operations (no libm), so every platform gets
/// the same bits. Accurate to about 1 ulp for the range used here.
pub(crate) fn cbrt(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let a = x.abs();
    // Start from 2^(e/3), with e the binary exponent of a: within a factor 2 of the root.
    let e = ((a.to_bits() >> 52) & 0x7ff) as i64 - 1023;
    let mut y = f64::from_bits((((e / 3) + 1023) as u64) << 52);
    for _ in 0..100 {
        let next = (2.0 * y + a / (y * y)) / 3.0;
        if next == y {
            break;
        }
        y = next;
    }
    x.signum() * y
}
