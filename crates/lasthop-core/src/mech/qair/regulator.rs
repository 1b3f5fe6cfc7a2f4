//! The Rate Regulator (spec §5): a token bucket in PSDUs (or MPDUs) at the controller's rate R.
//!
//! Tokens accrue at R up to `depth`; a PSDU needs one, and pays one (or its MPDUs with MPDU tokens). A rate change accrues tokens at the old rate up
//! to the change first. The instant the next token is due is rounded up to the µs, so floating-point
//! values never order events.

use crate::time::{SimDuration, SimTime};

#[derive(Clone, Debug)]
pub struct TokenBucket {
    depth: f64,
    tokens: f64,
    last_refill: SimTime,
}

impl TokenBucket {
    /// A full bucket of `depth` tokens at `now`.
    pub fn new(depth: f64, now: SimTime) -> Self {
        TokenBucket { depth, tokens: depth, last_refill: now }
    }

    /// Accrues tokens at `rate` (PSDUs/s) up to `now`.
    pub fn refill(&mut self, now: SimTime, rate: f64) {
        let dt = now.saturating_since(self.last_refill).as_ns() as f64 * 1e-9;
        self.tokens = (self.tokens + rate * dt).min(self.depth);
        self.last_refill = now;
    }

    /// Whether a token is there at `now`; else when the next one is due (µs-rounded, > now).
    pub fn ready(&mut self, now: SimTime, rate: f64) -> Result<(), SimTime> {
        self.refill(now, rate);
        if self.tokens >= 1.0 {
            return Ok(());
        }
        let wait_us = ((1.0 - self.tokens) / rate * 1e6).ceil().max(1.0);
        Err(now + SimDuration::from_us(wait_us as u64))
    }

    /// A PSDU was released: it pays `tokens` (one, or its MPDUs with MPDU tokens; the driver asked
    /// [`TokenBucket::ready`] first). The balance may go below zero: the next PSDU then waits until it
    /// is back at one.
    pub fn consume(&mut self, tokens: f64) {
        self.tokens -= tokens;
    }

    /// How long a PSDU offered at `now` behind `held` others would wait for its token at `rate`:
    /// max(0, (held + 1 − tokens(now)) / rate) (spec §17.6), without changing the bucket.
    pub fn expected_wait(&self, now: SimTime, rate: f64, held: f64) -> SimDuration {
        let dt = now.saturating_since(self.last_refill).as_ns() as f64 * 1e-9;
        let tokens = (self.tokens + rate * dt).min(self.depth);
        SimDuration::from_ns((((held + 1.0 - tokens) / rate).max(0.0) * 1e9).round() as u64)
    }

    pub fn tokens(&self) -> f64 {
        self.tokens
    }
}
