//! CoDel (RFC 8289) as Linux implements it in `include/net/codel.h` and `include/net/codel_impl.h`,
//! and the single-queue `codel` qdisc of `net/sched/sch_codel.c`.
//!
//! The algorithm lives in [`CodelVars::dequeue`], which pulls packets from any [`CodelSource`]: the
//! [`Codel`] qdisc below (one FIFO), the flows of mac80211's FQ ([`super::fq`]) and of `fq_codel`
//! ([`super::fq_codel`]) all use it, as Linux's `codel_dequeue()` is shared by the three through
//! callbacks.
//!
//! The rule, per dequeued packet: its sojourn is `now − enqueued`. The queue is *above target* while
//! sojourn ≥ `target` and more than `mtu` bytes remain queued after the packet left. Once above for
//! a whole `interval` (strictly later than `first_above_time`), CoDel enters the dropping state:
//! it drops the head packet, sets `count` and schedules the next drop at `now + interval/√count`.
//! While dropping, every dequeue at or after `drop_next` drops one more packet, increments `count`
//! and moves `drop_next` on by `interval/√count` (from the previous `drop_next`, not from `now`).
//! The state ends at the first packet below target. On re-entry within 16 intervals of the last
//! scheduled drop, `count` restarts at `count − lastcount` (the number of drops of the previous
//! episode) when that exceeds 1, otherwise at 1.
//!
//! Deviations from Linux, all deliberate:
//! * Time is exact nanoseconds; Linux uses a `u32` of 1024-ns units that wraps every 73 minutes.
//! * `interval/√count` is computed exactly (integer square root, floor to the ns); Linux keeps
//!   `1/√count` in 16 bits refined by one Newton step per change of `count`, which lags by a few
//!   percent right after the count re-use rule jumps `count` (baselines.md §2.2 asks for exact).
//! * `ce_threshold` (a DCTCP-style marking threshold, off by default) is not modelled.
//! * ECN: [`Packet`] has no ECN field. A source says per packet whether it is ECN-capable (default:
//!   no); a mark is counted in [`CodelStats::ecn_mark`] and returned as [`Verdict::MarkCe`].

use super::error::{check, ParamError};
use super::{Dropped, QueueStats};
use crate::packet::Packet;
use crate::stats::DropReason;
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Decides per packet whether it is ECN-capable (would accept a CE mark instead of a drop).
pub type EcnClassifier = fn(&Packet) -> bool;

/// The default classifier: no packet is ECN-capable (our [`Packet`] carries no ECN bits).
pub fn not_ecn_capable(_: &Packet) -> bool {
    false
}

/// CoDel parameters (Linux `struct codel_params`). Times are in µs as in Linux's netlink attributes
/// (`TCA_CODEL_TARGET`, `TCA_CODEL_INTERVAL`). The [`Default`] is the `codel` qdisc's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CodelParams {
    /// Acceptable standing sojourn time, µs.
    pub target_us: u32,
    /// Sliding window over which sojourn must stay above target before dropping starts, µs.
    pub interval_us: u32,
    /// CE-mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// No drop while at most this many bytes remain queued after the dequeued packet (Linux
    /// `params->mtu`: `psched_mtu(dev)` = 1514 for the qdiscs, 0 in mac80211).
    pub mtu: u32,
}

impl Default for CodelParams {
    fn default() -> Self {
        Self::qdisc_default()
    }
}

impl CodelParams {
    /// The `codel` qdisc: 5 ms / 100 ms, ECN off, mtu 1514 (`codel_params_init()` in
    /// `codel_impl.h`; `sch_codel.c` sets `mtu = psched_mtu(dev)`, 1500 + 14 on Ethernet).
    pub const fn qdisc_default() -> Self {
        CodelParams { target_us: 5_000, interval_us: 100_000, ecn: false, mtu: 1514 }
    }

    /// mac80211 per-station default: 20 ms / 100 ms, ECN on, mtu 0 (`ieee80211_txq_setup_flows()`
    /// and `sta_update_codel_params()` in `net/mac80211`; mac80211 never sets `mtu`).
    pub const fn mac80211() -> Self {
        CodelParams { target_us: 20_000, interval_us: 100_000, ecn: true, mtu: 0 }
    }

    /// mac80211 slow-station override (kernels 4.11–6.14, `STA_SLOW_THRESHOLD`): 50 ms / 300 ms,
    /// ECN off, for a station whose expected throughput is below 6 Mbit/s × associated stations.
    pub const fn mac80211_slow_station() -> Self {
        CodelParams { target_us: 50_000, interval_us: 300_000, ecn: false, mtu: 0 }
    }

    /// The `fq_codel` qdisc's per-flow CoDel: 5 ms / 100 ms, ECN on, mtu 1514 (`fq_codel_init()`).
    pub const fn fq_codel_default() -> Self {
        CodelParams { target_us: 5_000, interval_us: 100_000, ecn: true, mtu: 1514 }
    }

    pub fn target(&self) -> SimDuration {
        SimDuration::from_us(self.target_us as u64)
    }

    pub fn interval(&self) -> SimDuration {
        SimDuration::from_us(self.interval_us as u64)
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.interval_us > 0, "interval_us", "must be > 0")
    }
}

/// What CoDel did with the packet it hands back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver unchanged.
    Pass,
    /// Deliver with a CE mark (ECN on and the packet ECN-capable); counted, not applied to the packet.
    MarkCe,
}

/// Counters of one CoDel instance (Linux `struct codel_stats`, plus the bytes it dropped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CodelStats {
    /// Packets dropped by the control law.
    pub drop_count: u64,
    /// Bytes of those packets.
    pub drop_bytes: u64,
    /// Packets CE-marked instead of dropped.
    pub ecn_mark: u64,
    /// Largest packet seen at dequeue, bytes.
    pub maxpacket: u32,
}

impl CodelStats {
    /// Adds `o`'s counters to `self` (maxpacket: the larger).
    pub fn merge(&mut self, o: &CodelStats) {
        self.drop_count += o.drop_count;
        self.drop_bytes += o.drop_bytes;
        self.ecn_mark += o.ecn_mark;
        self.maxpacket = self.maxpacket.max(o.maxpacket);
    }
}

/// The queue CoDel pulls from (Linux's `dequeue_func` callback and `backlog` pointer).
pub trait CodelSource {
    /// Removes and returns the head packet, updating the source's own counters.
    fn pop(&mut self) -> Option<Packet>;
    /// Bytes still queued, read right after a `pop` (the per-flow backlog in mac80211, the whole
    /// qdisc's in `codel` and `fq_codel`).
    fn backlog_bytes(&self) -> u64;
    /// Whether `p` is ECN-capable. Default: no.
    fn ecn_capable(&self, _p: &Packet) -> bool {
        false
    }
}

/// The state of one CoDel instance (Linux `struct codel_vars`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    count: u32,
    lastcount: u32,
    dropping: bool,
    drop_next: SimTime,
    /// `None` stands for Linux's 0 ("below target").
    first_above_time: Option<SimTime>,
    ldelay: SimDuration,
}

/// `t + interval / √count`, floored to the nanosecond (count 0 is treated as 1).
pub fn control_law(t: SimTime, interval: SimDuration, count: u32) -> SimTime {
    let i = interval.as_ns() as u128;
    let step = (i * i / count.max(1) as u128).isqrt();
    t.saturating_add(SimDuration::from_ns(step as u64))
}

impl CodelVars {
    pub fn new() -> Self {
        Self::default()
    }
    /// Drops (or marks) in the current or last dropping episode, plus the re-used count.
    pub fn count(&self) -> u32 {
        self.count
    }
    /// `count` when the current or last dropping episode began.
    pub fn lastcount(&self) -> u32 {
        self.lastcount
    }
    pub fn dropping(&self) -> bool {
        self.dropping
    }
    /// When the next drop is due while dropping.
    pub fn drop_next(&self) -> SimTime {
        self.drop_next
    }
    /// When sojourn will have been above target for a whole interval; `None` while below.
    pub fn first_above_time(&self) -> Option<SimTime> {
        self.first_above_time
    }
    /// Sojourn of the last packet examined.
    pub fn ldelay(&self) -> SimDuration {
        self.ldelay
    }

    /// Adds `n` to `count` (sch_fq_codel's overlimit drop "tells codel to increase its signal").
    pub(crate) fn bump_count(&mut self, n: u32) {
        self.count = self.count.wrapping_add(n);
    }

    /// Linux `codel_should_drop()`: is it OK to drop `p` (just popped from `src`)?
    fn should_drop<S: CodelSource>(&mut self, p: Option<&Packet>, now: SimTime, params: &CodelParams, stats: &mut CodelStats, src: &S) -> bool {
        let Some(p) = p else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now.saturating_since(p.enqueued);
        stats.maxpacket = stats.maxpacket.max(p.size);
        if self.ldelay < params.target() || src.backlog_bytes() <= params.mtu as u64 {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + params.interval());
                false
            }
            Some(t) => now > t,
        }
    }

    /// Linux `codel_dequeue()`: the next packet to send from `src` and its verdict. Packets the
    /// control law drops on the way go to `drops` with [`DropReason::Aqm`].
    pub fn dequeue<S: CodelSource>(
        &mut self,
        now: SimTime,
        params: &CodelParams,
        stats: &mut CodelStats,
        src: &mut S,
        drops: &mut Vec<Dropped>,
    ) -> Option<(Packet, Verdict)> {
        let Some(first) = src.pop() else {
            self.dropping = false;
            return None;
        };
        let drop = self.should_drop(Some(&first), now, params, stats, src);
        if self.dropping {
            if !drop {
                self.dropping = false;
                return Some((first, Verdict::Pass));
            }
            return self.drop_while_due(first, now, params, stats, src, drops);
        }
        if !drop {
            return Some((first, Verdict::Pass));
        }
        self.enter_dropping(first, now, params, stats, src, drops)
    }

    /// In the dropping state: drop (or mark) packets while `now ≥ drop_next`.
    fn drop_while_due<S: CodelSource>(
        &mut self,
        first: Packet,
        now: SimTime,
        params: &CodelParams,
        stats: &mut CodelStats,
        src: &mut S,
        drops: &mut Vec<Dropped>,
    ) -> Option<(Packet, Verdict)> {
        let mut cur = Some(first);
        while self.dropping && now >= self.drop_next {
            let p = cur.take().expect("dropping with a packet in hand");
            self.count = self.count.wrapping_add(1);
            if params.ecn && src.ecn_capable(&p) {
                stats.ecn_mark += 1;
                self.drop_next = control_law(self.drop_next, params.interval(), self.count);
                return Some((p, Verdict::MarkCe));
            }
            stats.drop_count += 1;
            stats.drop_bytes += p.size as u64;
            drops.push((p, DropReason::Aqm));
            cur = src.pop();
            if self.should_drop(cur.as_ref(), now, params, stats, src) {
                self.drop_next = control_law(self.drop_next, params.interval(), self.count);
            } else {
                self.dropping = false;
            }
        }
        cur.map(|p| (p, Verdict::Pass))
    }

    /// Entering the dropping state: drop (or mark) `first`, then set `count` by the re-use rule.
    fn enter_dropping<S: CodelSource>(
        &mut self,
        first: Packet,
        now: SimTime,
        params: &CodelParams,
        stats: &mut CodelStats,
        src: &mut S,
        drops: &mut Vec<Dropped>,
    ) -> Option<(Packet, Verdict)> {
        let out = if params.ecn && src.ecn_capable(&first) {
            stats.ecn_mark += 1;
            Some((first, Verdict::MarkCe))
        } else {
            stats.drop_count += 1;
            stats.drop_bytes += first.size as u64;
            drops.push((first, DropReason::Aqm));
            let next = src.pop();
            // Linux re-evaluates only for its side effects (first_above_time, ldelay).
            self.should_drop(next.as_ref(), now, params, stats, src);
            next.map(|p| (p, Verdict::Pass))
        };
        self.dropping = true;
        let delta = self.count.wrapping_sub(self.lastcount);
        let recent = now.as_ns() < self.drop_next.as_ns().saturating_add(16 * params.interval().as_ns());
        self.count = if delta > 1 && recent { delta } else { 1 };
        self.lastcount = self.count;
        self.drop_next = control_law(now, params.interval(), self.count);
        out
    }
}

/// Parameters of the `codel` qdisc (`net/sched/sch_codel.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CodelQdiscParams {
    /// Tail-drop limit in packets (`DEFAULT_CODEL_LIMIT` = 1000).
    pub limit: u32,
    /// The control law's parameters ([`CodelParams::qdisc_default`]).
    pub codel: CodelParams,
}

impl Default for CodelQdiscParams {
    fn default() -> Self {
        CodelQdiscParams { limit: 1000, codel: CodelParams::qdisc_default() }
    }
}

impl CodelQdiscParams {
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.limit > 0, "limit", "must be > 0")?;
        self.codel.validate().map_err(ParamError::in_codel)
    }
}

/// The `codel` qdisc: one FIFO, tail drop at `limit` packets, CoDel at dequeue.
#[derive(Debug)]
pub struct Codel {
    params: CodelQdiscParams,
    q: VecDeque<Packet>,
    bytes: u64,
    vars: CodelVars,
    codel_stats: CodelStats,
    ecn_capable: EcnClassifier,
    pub stats: QueueStats,
}

/// The FIFO of [`Codel`] as CoDel sees it: the backlog is the whole queue's.
struct FifoSource<'a> {
    q: &'a mut VecDeque<Packet>,
    bytes: &'a mut u64,
    ecn_capable: EcnClassifier,
}

impl CodelSource for FifoSource<'_> {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        *self.bytes -= p.size as u64;
        Some(p)
    }
    fn backlog_bytes(&self) -> u64 {
        *self.bytes
    }
    fn ecn_capable(&self, p: &Packet) -> bool {
        (self.ecn_capable)(p)
    }
}

impl Codel {
    pub fn new(params: CodelQdiscParams) -> Self {
        Codel {
            params,
            q: VecDeque::new(),
            bytes: 0,
            vars: CodelVars::new(),
            codel_stats: CodelStats::default(),
            ecn_capable: not_ecn_capable,
            stats: QueueStats::default(),
        }
    }

    /// Sets which packets are ECN-capable (default: none).
    pub fn set_ecn_classifier(&mut self, f: EcnClassifier) {
        self.ecn_capable = f;
    }

    pub fn params(&self) -> &CodelQdiscParams {
        &self.params
    }

    /// Offers a packet; `Err` with [`DropReason::QueueFull`] at the limit.
    pub fn enqueue(&mut self, now: SimTime, p: Packet) -> Result<(), Dropped> {
        if self.q.len() >= self.params.limit as usize {
            self.stats.dropped += 1;
            return Err((p, DropReason::QueueFull));
        }
        super::admit(&mut self.q, &mut self.bytes, &mut self.stats, now, p);
        Ok(())
    }

    /// The next packet to send; CoDel drops go to `drops`.
    pub fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Dropped>) -> Option<Packet> {
        let mut src = FifoSource { q: &mut self.q, bytes: &mut self.bytes, ecn_capable: self.ecn_capable };
        let before = drops.len();
        let out = self.vars.dequeue(now, &self.params.codel, &mut self.codel_stats, &mut src, drops);
        self.stats.dropped += (drops.len() - before) as u64;
        let (p, _) = out?;
        self.stats.dequeued += 1;
        Some(p)
    }

    pub fn len_packets(&self) -> usize {
        self.q.len()
    }
    pub fn len_bytes(&self) -> u64 {
        self.bytes
    }
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
    pub fn codel_stats(&self) -> CodelStats {
        self.codel_stats
    }
}

#[cfg(test)]
#[path = "codel_tests.rs"]
mod tests;
