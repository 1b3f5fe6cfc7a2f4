//! PIE (RFC 8033) as the Linux `pie` qdisc implements it: `net/sched/sch_pie.c` and
//! `include/net/pie.h` (≥ 5.7). baselines.md §2.6.
//!
//! * **Queue delay** is measured from timestamps (Linux's default, `dq_rate_estimator` off): each
//!   dequeue sets `qdelay` to the leaving packet's sojourn, or 0 when it leaves the queue empty. The
//!   RFC's departure-rate estimator (Little's law) is not modelled.
//! * **Drop probability** is updated every `tupdate`: `p += α·(qdelay − target) + β·(qdelay −
//!   qdelay_old)`, with α, β in units of 1/16 Hz (defaults 2 and 20, i.e. the RFC's 0.125 and 1.25),
//!   both halved while p < 10 % and divided by a further 4 per decade below 1 % (p < 1e-2 … 1e-6: ÷8 …
//!   ÷2048, RFC 8033 §4.2's auto-tuning); a step is capped at +2 % once p ≥ 10 %; +2 % while qdelay >
//!   250 ms; p decays by 1/64 after two updates with zero delay; when delay and p are low the
//!   measurement state is reset, which restores the burst allowance.
//! * **Enqueue** drops with probability p (derandomised: never before the accumulated probability
//!   reaches 0.85, always once it reaches 8.5), except during the burst allowance (150 ms of
//!   dequeue activity), while qdelay < target/2 and p < 20 %, or while fewer than 2 MTU are queued.
//!   With ECN on and p ≤ 10 %, an ECN-capable packet is marked and queued instead.
//!
//! Linux keeps p in 56-bit fixed point (`MAX_PROB` = 2⁵⁶ − 1) and so do we, so every update is exact
//! integer arithmetic; the random draw compares the top 56 bits of a `u64` from the qdisc's own
//! [`Rng`] with p, as Linux does with `get_random_bytes`.
//!
//! Time: exact nanoseconds instead of 64-ns psched ticks, and `tupdate` exactly instead of rounded
//! up to jiffies (15 ms is 16 ms at HZ = 250). As in `pie_init()`, the first update comes 500 ms
//! (HZ/2) after the qdisc is created, which is time 0 here. Updates follow the catch-up interface
//! (STYLE 13): [`Pie::next_wakeup`] / [`Pie::advance_to`]; `enqueue` and `dequeue` catch up by
//! themselves first, so results do not depend on whether the engine schedules the wakeups. An idle
//! PIE at rest (empty, p = 0, freshly reset) has no wakeup: its updates would change nothing.

use super::codel::{not_ecn_capable, EcnClassifier};
use super::error::{check, ParamError};
use super::{Dropped, QueueStats};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::stats::DropReason;
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// p = 1 in Linux's fixed point.
pub const MAX_PROB: u64 = u64::MAX >> 8;
/// Delay after creation of the first probability update (`pie_init()`: `jiffies + HZ / 2`).
pub const FIRST_UPDATE: SimDuration = SimDuration::from_ms(500);
const NS_PER_SEC: u64 = 1_000_000_000;

/// PIE parameters (`tc qdisc … pie target tupdate limit alpha beta ecn bytemode`); defaults from
/// `pie_params_init()`. Times in µs as in the netlink attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PieParams {
    /// Target queue delay, µs (15 ms; RFC 8033 `QDELAY_REF`).
    pub target_us: u32,
    /// Probability update period, µs (15 ms; RFC `T_UPDATE`).
    pub tupdate_us: u32,
    /// Tail-drop limit in packets (1000).
    pub limit: u32,
    /// Integral gain in 1/16 Hz (2 = 0.125 Hz, the RFC's α).
    pub alpha: u32,
    /// Proportional gain in 1/16 Hz (20 = 1.25 Hz, the RFC's β).
    pub beta: u32,
    /// Mark ECN-capable packets instead of dropping while p ≤ 10 %.
    pub ecn: bool,
    /// Scale the drop probability by packet size / MTU.
    pub bytemode: bool,
    /// Burst allowance after a reset, µs (150 ms; RFC `MAX_BURST`; fixed in Linux).
    pub max_burst_us: u32,
    /// MTU for the 2-MTU minimum backlog and byte mode (`psched_mtu(dev)` = 1514 on Ethernet).
    pub mtu: u32,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams { target_us: 15_000, tupdate_us: 15_000, limit: 1000, alpha: 2, beta: 20, ecn: false, bytemode: false, max_burst_us: 150_000, mtu: 1514 }
    }
}

impl PieParams {
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.tupdate_us > 0, "tupdate_us", "must be > 0")?;
        check(self.limit > 0, "limit", "must be > 0")?;
        check(self.alpha <= 32, "alpha", "must be in 0..=32 (units of 1/16 Hz)")?;
        check(self.beta <= 32, "beta", "must be in 0..=32 (units of 1/16 Hz)")
    }
    pub fn target(&self) -> SimDuration {
        SimDuration::from_us(self.target_us as u64)
    }
    pub fn tupdate(&self) -> SimDuration {
        SimDuration::from_us(self.tupdate_us as u64)
    }
    pub fn max_burst(&self) -> SimDuration {
        SimDuration::from_us(self.max_burst_us as u64)
    }
}

/// PIE's state (Linux `struct pie_vars`, timestamp mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PieVars {
    qdelay: SimDuration,
    qdelay_old: SimDuration,
    burst_time: SimDuration,
    /// Time of the last dequeue; `None` is Linux's `DTIME_INVALID`.
    dq_tstamp: Option<SimTime>,
    prob: u64,
    accu_prob: u64,
}

/// Counters (Linux `struct pie_stats` / `tc_pie_xstats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PieStats {
    /// Packets queued.
    pub packets_in: u64,
    /// Packets PIE dropped at enqueue.
    pub early_drops: u64,
    /// Packets refused at the limit.
    pub overlimit: u64,
    pub ecn_mark: u64,
    /// Largest queue length seen at enqueue, packets.
    pub maxq: u32,
    /// Probability updates run.
    pub updates: u64,
}

/// The `pie` qdisc. See the module docs.
#[derive(Debug)]
pub struct Pie {
    params: PieParams,
    vars: PieVars,
    q: VecDeque<Packet>,
    bytes: u64,
    next_update: SimTime,
    rng: Rng,
    ecn_capable: EcnClassifier,
    pie_stats: PieStats,
    pub stats: QueueStats,
}

impl Pie {
    /// An empty PIE created at time 0, drawing its drop decisions from `rng` (by convention
    /// `Rng::derive(seed, "<link>/pie")`).
    pub fn new(params: PieParams, rng: Rng) -> Self {
        let vars = PieVars { qdelay: SimDuration::ZERO, qdelay_old: SimDuration::ZERO, burst_time: params.max_burst(), dq_tstamp: None, prob: 0, accu_prob: 0 };
        Pie {
            params,
            vars,
            q: VecDeque::new(),
            bytes: 0,
            next_update: SimTime::ZERO + FIRST_UPDATE,
            rng,
            ecn_capable: not_ecn_capable,
            pie_stats: PieStats::default(),
            stats: QueueStats::default(),
        }
    }

    /// Sets which packets are ECN-capable (default: none).
    pub fn set_ecn_classifier(&mut self, f: EcnClassifier) {
        self.ecn_capable = f;
    }

    pub fn params(&self) -> &PieParams {
        &self.params
    }

    /// `pie_vars_init()`: restores the burst allowance and forgets the accumulated probability.
    fn reset_measurement(&mut self) {
        self.vars.burst_time = self.params.max_burst();
        self.vars.dq_tstamp = None;
        self.vars.accu_prob = 0;
    }

    /// Nothing to update: empty, p = 0, no delay, freshly reset (an update would change nothing).
    fn at_rest(&self) -> bool {
        let v = &self.vars;
        self.q.is_empty()
            && v.prob == 0
            && v.qdelay.is_zero()
            && v.qdelay_old.is_zero()
            && v.burst_time == self.params.max_burst()
            && v.dq_tstamp.is_none()
            && v.accu_prob == 0
    }

    /// When the next probability update is due; `None` while at rest.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        (!self.at_rest()).then_some(self.next_update)
    }

    /// Runs every probability update due at or before `now`.
    pub fn advance_to(&mut self, now: SimTime) {
        let step = self.params.tupdate();
        while self.next_update <= now {
            if self.at_rest() {
                let k = (now - self.next_update).as_ns() / step.as_ns() + 1;
                self.next_update += step * k;
                return;
            }
            self.calculate_probability();
            self.next_update += step;
        }
    }

    /// How far α and β are scaled down (a right shift) at the current p: 1 below 10 %, plus 2 per
    /// decade below 1 %, down to 1e-6 (Linux `pie_calculate_probability()`).
    fn gain_shift(&self) -> u32 {
        let p = self.vars.prob;
        if p >= MAX_PROB / 10 {
            return 0;
        }
        let (mut shift, mut power) = (1, 100);
        while p < MAX_PROB / power && power <= 1_000_000 {
            shift += 2;
            power *= 10;
        }
        shift
    }

    /// One probability update (timestamp mode).
    fn calculate_probability(&mut self) {
        self.pie_stats.updates += 1;
        let (qdelay, qdelay_old) = (self.vars.qdelay.as_ns() as i128, self.vars.qdelay_old.as_ns() as i128);
        let target = self.params.target().as_ns() as i128;
        let mut update_prob = !(qdelay == 0 && self.bytes != 0);
        // (α·(qdelay − target) + β·(qdelay − qdelay_old)) in p per second, α and β in 1/16 Hz; one
        // exact division where Linux truncates α and β per psched tick first.
        let (alpha, beta) = (self.params.alpha as i128, self.params.beta as i128);
        let scale = 16 * NS_PER_SEC as i128 * (1i128 << self.gain_shift());
        let mut delta = (alpha * (qdelay - target) + beta * (qdelay - qdelay_old)) * MAX_PROB as i128 / scale;
        let two_pct = (MAX_PROB / 100 * 2) as i128;
        let old = self.vars.prob;
        if delta > (MAX_PROB / 50) as i128 && old >= MAX_PROB / 10 {
            delta = two_pct;
        }
        if qdelay > SimDuration::from_ms(250).as_ns() as i128 {
            delta += two_pct;
        }
        // Linux adds in u64 and catches wrap-around only (p may exceed MAX_PROB, acting as 1).
        let delta = delta.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        let mut p = old.wrapping_add(delta as u64);
        if delta > 0 && p < old {
            p = MAX_PROB;
            update_prob = false;
        } else if delta <= 0 && p > old {
            p = 0;
        }
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            p -= p / 64;
        }
        self.vars.prob = p;
        let half = self.params.target() / 2;
        if self.vars.qdelay < half && self.vars.qdelay_old < half && p == 0 {
            self.reset_measurement();
        }
        self.vars.qdelay_old = self.vars.qdelay;
    }

    /// Linux `pie_drop_early()`: should the arriving packet of `size` bytes be dropped?
    fn drop_early(&mut self, size: u32) -> bool {
        let v = &self.vars;
        let mtu = self.params.mtu as u64;
        if !v.burst_time.is_zero() || (v.qdelay < self.params.target() / 2 && v.prob < MAX_PROB / 5) || self.bytes < 2 * mtu {
            return false;
        }
        let local = if self.params.bytemode && (size as u64) <= mtu { size as u64 * (v.prob / mtu.max(1)) } else { v.prob };
        self.vars.accu_prob = if local == 0 { 0 } else { self.vars.accu_prob.saturating_add(local) };
        if self.vars.accu_prob < MAX_PROB / 100 * 85 {
            return false;
        }
        if self.vars.accu_prob >= MAX_PROB / 2 * 17 {
            return true;
        }
        if (self.rng.next_u64() >> 8) < local {
            self.vars.accu_prob = 0;
            return true;
        }
        false
    }

    /// Offers a packet: `Err` with [`DropReason::QueueFull`] at the limit, [`DropReason::Aqm`] when
    /// PIE drops it.
    pub fn enqueue(&mut self, now: SimTime, p: Packet) -> Result<(), Dropped> {
        self.advance_to(now);
        let reason = if self.q.len() >= self.params.limit as usize {
            self.pie_stats.overlimit += 1;
            Some(DropReason::QueueFull)
        } else if !self.drop_early(p.size) {
            None
        } else if self.params.ecn && self.vars.prob <= MAX_PROB / 10 && (self.ecn_capable)(&p) {
            self.pie_stats.ecn_mark += 1;
            None
        } else {
            self.pie_stats.early_drops += 1;
            Some(DropReason::Aqm)
        };
        if let Some(r) = reason {
            self.vars.accu_prob = 0;
            self.stats.dropped += 1;
            return Err((p, r));
        }
        self.pie_stats.packets_in += 1;
        self.pie_stats.maxq = self.pie_stats.maxq.max(self.q.len() as u32);
        super::admit(&mut self.q, &mut self.bytes, &mut self.stats, now, p);
        Ok(())
    }

    /// The head packet; updates the delay estimate and the burst allowance (`pie_process_dequeue()`).
    pub fn dequeue(&mut self, now: SimTime) -> Option<Packet> {
        self.advance_to(now);
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        self.stats.dequeued += 1;
        let v = &mut self.vars;
        v.qdelay = if self.bytes == 0 { SimDuration::ZERO } else { now.saturating_since(p.enqueued) };
        let dtime = v.dq_tstamp.map_or(SimDuration::ZERO, |t| now.saturating_since(t));
        v.dq_tstamp = Some(now);
        v.burst_time = v.burst_time.saturating_sub(dtime);
        Some(p)
    }

    pub fn len_packets(&self) -> usize {
        self.q.len()
    }
    pub fn len_bytes(&self) -> u64 {
        self.bytes
    }
    /// The drop probability, for reporting.
    pub fn prob(&self) -> f64 {
        self.vars.prob as f64 / MAX_PROB as f64
    }
    /// The current queue-delay estimate.
    pub fn qdelay(&self) -> SimDuration {
        self.vars.qdelay
    }
    /// What is left of the burst allowance.
    pub fn burst_allowance(&self) -> SimDuration {
        self.vars.burst_time
    }
    pub fn pie_stats(&self) -> PieStats {
        self.pie_stats
    }
}

#[cfg(test)]
#[path = "pie_tests.rs"]
mod tests;
