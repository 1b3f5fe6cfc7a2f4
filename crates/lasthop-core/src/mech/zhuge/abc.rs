//! The router half of ABC, Accel-Brake Control (P. Goyal et al., NSDI'20), as Zhuge's baseline runs it
//! (zhuge.md §5.3, baselines.md §4.5). The sender half is [`crate::transport::cc::abc`].
//!
//! Every 1-ms tick the AP updates, over a window of `window_ms` ticks with the bookkeeping of the
//! Fortune Teller ([`super::dequeue_window`]):
//! * `mu`: the dequeue rate over the non-idle ticks (the link-rate estimate);
//! * `cr`: the dequeue rate over the whole window, idle ticks included;
//!
//! both floored at 512 kbit/s. For each TCP packet toward the client it then computes the queueing
//! delay `x = 8·(Q_d + Q_v)/mu`, the target rate `tr = η·mu − (mu/δ)·max(0, x − d_t)` and the
//! accelerate probability `p = 0.5·tr/cr`, and marks the packet ECT(1) (*accelerate*) with probability
//! `p` (always when `p ≥ 1`), ECT(0) (*brake*) otherwise. η = 0.98, δ = 133 ms, d_t = 10 ms.
//!
//! # API and wiring
//!
//! The marker observes the AP egress like the Fortune Teller ([`EgressObserver`], every packet). For
//! each TCP data packet toward the client, call [`AbcMarker::mark`] when it arrives at the egress,
//! **before** its `on_enqueue` (the code marks at enqueue, with the queue ahead of the packet; the
//! paper marks at dequeue, which an integrator can do by calling `mark` when it leaves instead), and
//! write the result into the packet's `Hdr::Tcp::ecn`. The client echoes the codepoint in the ACK of
//! that segment (`Hdr::Tcp::ecn` of the ACK), and the sender's transport hands it to its controller
//! (`TcpSender::on_ecn_echo`).
//!
//! Choices: before the first tick `mu = cr =` the floor (the code starts them at 62.5, apparently
//! bytes/ms in a bit/s variable, which would brake every packet of the first millisecond); the
//! marking is the code's independent Bernoulli draw, not the paper's token bucket; the draws come from
//! the marker's own RNG (path `ap/<flow>/abc/mark`).

use super::dequeue_window::{DequeueWindow, RateDivisor};
use super::egress::{Egress, EgressMirror, TickClock};
use super::{check, ParamError};
use crate::packet::Ecn;
use crate::rng::Rng;
use crate::time::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `abc = { window_ms = 40, eta = 0.98, delta_ms = 133, delay_threshold_ms = 10,
/// min_rate_bps = 512000, rate_divisor = "window" }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AbcRouterParams {
    /// Estimator window, ticks of 1 ms. Default 40 (`F / 1 ms`, §5.3).
    pub window_ms: u32,
    /// η, the target utilisation. Default 0.98 (the code; the paper's tuned value).
    pub eta: f64,
    /// δ, ms: how fast the target rate falls with the queueing delay. Default 133.
    pub delta_ms: f64,
    /// d_t, ms: queueing delay tolerated before braking harder. Default 10.
    pub delay_threshold_ms: f64,
    /// Floor of both rate estimates, bit/s. Default 512 000.
    pub min_rate_bps: u64,
    /// Divisor of the estimates. Default `window` (the code's bookkeeping, §2.3).
    pub rate_divisor: RateDivisor,
}

impl Default for AbcRouterParams {
    fn default() -> Self {
        AbcRouterParams {
            window_ms: 40,
            eta: 0.98,
            delta_ms: 133.0,
            delay_threshold_ms: 10.0,
            min_rate_bps: 512_000,
            rate_divisor: RateDivisor::Window,
        }
    }
}

impl AbcRouterParams {
    pub fn validate(&self) -> Result<(), ParamError> {
        check((1..=60_000).contains(&self.window_ms), "window_ms", "must be in 1..=60000")?;
        check(self.eta.is_finite() && self.eta > 0.0 && self.eta <= 2.0, "eta", "must be in (0, 2]")?;
        check(self.delta_ms.is_finite() && self.delta_ms > 0.0, "delta_ms", "must be > 0")?;
        check(
            self.delay_threshold_ms.is_finite() && self.delay_threshold_ms >= 0.0,
            "delay_threshold_ms",
            "must be >= 0",
        )?;
        check(self.min_rate_bps >= 1, "min_rate_bps", "must be at least 1")
    }
}

/// The accelerate probability for link rate `mu_bps`, current rate `cr_bps` and queueing delay
/// `x_ms` (may be negative or exceed 1: the caller compares a uniform draw against it).
pub fn accel_probability(p: &AbcRouterParams, mu_bps: f64, cr_bps: f64, x_ms: f64) -> f64 {
    let tr = p.eta * mu_bps - (mu_bps / p.delta_ms) * (x_ms - p.delay_threshold_ms).max(0.0);
    0.5 * tr / cr_bps
}

/// Counters of the marker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AbcMarkerStats {
    pub accelerate: u64,
    pub brake: u64,
    pub mu_bps: u64,
    pub cr_bps: u64,
}

/// The ABC router at the AP egress.
#[derive(Clone, Debug)]
pub struct AbcMarker {
    params: AbcRouterParams,
    window: DequeueWindow,
    egress: Egress,
    clock: TickClock,
    rng: Rng,
    stats: AbcMarkerStats,
}

impl AbcMarker {
    /// A marker at an AP started at `start` (first tick 1 ms later) drawing from `rng`.
    pub fn new(params: AbcRouterParams, start: SimTime, rng: Rng) -> Self {
        debug_assert!(params.validate().is_ok());
        let window = DequeueWindow::new(params.window_ms, params.min_rate_bps, params.rate_divisor);
        AbcMarker { params, window, egress: Egress::default(), clock: TickClock::new(start), rng, stats: Default::default() }
    }

    /// Replays the ticks due at or before `now` (every call does it first; see the Fortune Teller).
    pub fn advance_to(&mut self, now: SimTime) {
        let due = self.clock.take_due(now);
        let one_by_one = due.min(self.window.saturation_ticks());
        for _ in 0..one_by_one {
            self.window.tick(self.egress.departed_total(), self.egress.backlog());
        }
        self.window.skip(due - one_by_one);
    }

    /// Always `None`: the ticks are replayed by the calls themselves.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        None
    }

    /// `(mu, cr)` at `now`, bit/s.
    pub fn rates(&mut self, now: SimTime) -> (u64, u64) {
        self.advance_to(now);
        (self.window.rate_bps(), self.window.whole_rate_bps())
    }

    /// The accelerate probability for a packet arriving now.
    pub fn probability(&mut self, now: SimTime) -> f64 {
        let (mu, cr) = self.rates(now);
        let q = self.egress.qdisc_bytes() + self.egress.driver_bytes();
        let x_ms = 8000.0 * q as f64 / mu as f64;
        accel_probability(&self.params, mu as f64, cr as f64, x_ms)
    }

    /// The mark of a TCP packet toward the client arriving now: ECT(1) accelerate or ECT(0) brake.
    pub fn mark(&mut self, now: SimTime) -> Ecn {
        let p = self.probability(now);
        if self.rng.unit() < p {
            self.stats.accelerate += 1;
            Ecn::Ect1
        } else {
            self.stats.brake += 1;
            Ecn::Ect0
        }
    }

    pub fn stats(&self) -> AbcMarkerStats {
        AbcMarkerStats { mu_bps: self.window.rate_bps(), cr_bps: self.window.whole_rate_bps(), ..self.stats }
    }
}

impl EgressMirror for AbcMarker {
    fn catch_up(&mut self, now: SimTime) {
        self.advance_to(now);
    }
    fn egress_mut(&mut self) -> &mut Egress {
        &mut self.egress
    }
}
