//! Algorithm 1 (spec §4.1): the two-step average of the per-frame delay and the AIMD rate.
//!
//! The check runs only when a frame completes, with a strict `>` on the interval; an interval with no
//! completion causes no update, and the update includes the frame that triggered it. The first
//! interval's mean seeds T̂ ([LH]). At T̂ = T_target the decrease branch runs with factor 1.

use crate::time::{SimDuration, SimTime};

/// The controller of one node.
#[derive(Clone, Debug)]
pub struct Control {
    t_target_us: f64,
    alpha: f64,
    check_interval: SimDuration,
    delta: f64,
    increase: super::Increase,
    r_min: f64,
    r_max: f64,
    sum_us: f64,
    n: u32,
    last_update: SimTime,
    t_hat_us: Option<f64>,
    r: f64,
    /// Updates so far.
    pub updates: u64,
    decrease_hold: u32,
    decrease_floor: f64,
    /// Updates above target still to pass before the next decrease.
    hold: u32,
    /// In the first descent of [`super::FirstDescent::FromDelivered`]: `Some(cut yet)`.
    first_descent: Option<bool>,
    /// Tokens (PSDUs, or MPDUs) delivered in the current interval.
    tokens: f64,
    /// In a first descent: the first update, and the tokens delivered since it (the delivered rate is
    /// their ratio: the first interval, which may span an idle start, is left out).
    delivered_since: Option<(SimTime, f64)>,
    /// Updates below target in a first descent with no cut yet.
    below: u32,
}

/// Updates below target that end a first descent with no cut yet: the node is past its start (a later
/// overload is cut as usual, from R).
const FIRST_DESCENT_ENDS_BELOW: u32 = 10;

impl Control {
    /// A controller starting at R_0 (`r_0`, by default R_max, [LH]) at time `start`.
    pub fn new(p: &super::QairParams, start: SimTime) -> Self {
        Control {
            t_target_us: p.t_target_ms * 1e3,
            alpha: p.alpha,
            check_interval: SimDuration::from_secs_f64(p.check_interval_ms * 1e-3).unwrap_or(SimDuration::ZERO),
            delta: p.delta,
            increase: p.increase,
            r_min: p.r_min,
            r_max: p.r_max,
            sum_us: 0.0,
            n: 0,
            last_update: start,
            t_hat_us: None,
            r: p.r_0.unwrap_or(p.r_max),
            updates: 0,
            decrease_hold: p.decrease_hold,
            decrease_floor: p.decrease_floor,
            hold: 0,
            first_descent: (p.first_descent == super::FirstDescent::FromDelivered).then_some(false),
            tokens: 0.0,
            delivered_since: None,
            below: 0,
        }
    }

    /// The current maximum delivery rate R_tc, PSDUs/s.
    pub fn rate(&self) -> f64 {
        self.r
    }

    /// T̂, µs (`None` before the first update).
    pub fn t_hat_us(&self) -> Option<f64> {
        self.t_hat_us
    }

    /// The additive increase of an update `since` the previous one.
    fn increase_step(&self, since: SimDuration) -> f64 {
        match self.increase {
            super::Increase::PerUpdate => self.delta,
            super::Increase::PerInterval => self.delta * since.as_ns() as f64 / self.check_interval.as_ns().max(1) as f64,
        }
    }

    /// A successful frame with delay `t_k` completed at `now`. Returns the new rate if this completion
    /// ended a check interval (the caller refills its bucket at the old rate first).
    pub fn on_frame_success(&mut self, now: SimTime, t_k: SimDuration) -> Option<f64> {
        self.on_frame_delivered(now, t_k, 1.0)
    }

    /// [`Self::on_frame_success`] for a frame worth `tokens` tokens (its MPDUs with MPDU tokens).
    pub fn on_frame_delivered(&mut self, now: SimTime, t_k: SimDuration, tokens: f64) -> Option<f64> {
        self.sum_us += t_k.as_us_f64();
        self.n += 1;
        self.tokens += tokens;
        if now.saturating_since(self.last_update) <= self.check_interval {
            return None;
        }
        let t_i = self.sum_us / self.n as f64;
        let t_hat = match self.t_hat_us {
            None => t_i,
            Some(old) => self.alpha * old + (1.0 - self.alpha) * t_i,
        };
        self.t_hat_us = Some(t_hat);
        let since = now.saturating_since(self.last_update);
        if self.first_descent.is_some() {
            self.delivered_since = Some(self.delivered_since.map_or((now, 0.0), |(from, n)| (from, n + self.tokens)));
        }
        self.tokens = 0.0;
        self.last_update = now;
        self.sum_us = 0.0;
        self.n = 0;
        self.updates += 1;
        if t_hat < self.t_target_us {
            self.r = (self.r + self.increase_step(since)).min(self.r_max);
            self.hold = 0;
            self.below = self.below.saturating_add(1);
            if self.first_descent == Some(true) || self.below >= FIRST_DESCENT_ENDS_BELOW {
                self.first_descent = None;
            }
        } else if let Some(cut) = self.first_descent.as_mut() {
            // Cut from what the node delivers (an R far above it binds nothing), not held.
            *cut = true;
            let delivered = self.delivered_since.and_then(|(from, n)| (now > from).then(|| n / now.saturating_since(from).as_secs_f64()));
            let from = self.r.min(delivered.unwrap_or(self.r));
            self.r = (from * (self.t_target_us / t_hat).max(self.decrease_floor)).max(self.r_min);
        } else if self.hold > 0 {
            self.hold -= 1;
        } else {
            // R · T_target / T̂ in Algorithm 1's order of operations (its rounding), floored.
            let cut = if self.t_target_us / t_hat < self.decrease_floor { self.r * self.decrease_floor } else { self.r * self.t_target_us / t_hat };
            self.r = cut.max(self.r_min);
            self.hold = self.decrease_hold;
        }
        Some(self.r)
    }
}
