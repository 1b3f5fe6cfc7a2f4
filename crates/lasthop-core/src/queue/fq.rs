//! mac80211's flow queueing: Linux `include/net/fq.h` and `include/net/fq_impl.h` (≥ 5.10 form, with
//! `memory_limit` and the fattest-flow batch drop) with per-flow CoDel as `net/mac80211/tx.c` wires it
//! (`fq_tin_dequeue_func`, `codel_dequeue_func`). wifi-model.md §5.3, baselines.md §2.4.
//!
//! ```text
//!            one shared table of `flows` (4096) flows          one tin per TXQ (station × TID)
//!  packet ─▶ idx = reciprocal_scale(hash(src,dst,flow), 4096) ─▶ flow owned by another tin?
//!                                                                  yes: this tin's default flow
//!  tin: new_flows ─┐ DRR++ (quantum 300 B): a flow joins `new` with deficit = quantum when it was
//!       old_flows ─┘ on no list; out of deficit → +quantum, to the tail of `old`; empty at dequeue →
//!                    from `new` to `old` if `old` is non-empty, else off the lists (and unowned)
//!  global: > limit (8192) packets or > memory_limit bytes → drop max(1, min(32, qlen/2)) packets from
//!          the head of the fattest flow (most bytes, over all tins, default flows included); repeat
//! ```
//!
//! Each flow keeps its own [`CodelVars`]; the CoDel parameters and counters belong to the tin (mac80211
//! keeps `cparams` per station and `cstats` per TXQ). CoDel sees the flow's own byte backlog.
//!
//! Approximations:
//! * The flow hash is a seeded 64-bit mix of `(src, dst, flow)`, the perturbation drawn from the
//!   caller's `Rng` (Linux: `skb_get_hash()`, a Jenkins hash of the 4-tuple with a boot-time seed).
//! * Memory is charged as `size + skb_overhead` per packet (Linux: `skb->truesize`, the allocated
//!   buffer plus `struct sk_buff`; ≈ 2.3 KiB for a packet received into a 2 KiB Ethernet RX buffer).
//! * Not modelled: A-MSDU merging at enqueue, fragments (`txqi->frags`), `fq_tin_filter`/reset.
//!
//! The same machinery runs the `fq_codel` qdisc ([`super::fq_codel`]) as one tin with the qdisc's
//! overlimit rule and CoDel backlog ([`Flavor`]).

use super::codel::{not_ecn_capable, CodelParams, CodelSource, CodelStats, CodelVars, EcnClassifier};
use super::error::{check, ParamError};
use super::Dropped;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::stats::DropReason;
use crate::time::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// mac80211 FQ parameters (Linux `struct fq`; `iw phy … set txq limit|memory_limit|quantum`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FqParams {
    /// Flows in the shared table (`fq_init(&local->fq, 4096)`), 1..=65536.
    pub flows: u32,
    /// DRR quantum in bytes (`fq->quantum` = 300).
    pub quantum: u32,
    /// Packets over all tins before the fattest flow is cut (`fq->limit` = 8192).
    pub limit: u32,
    /// Bytes of memory over all tins (`fq->memory_limit`: 16 MiB, 4 MiB without VHT support).
    pub memory_limit: u64,
    /// Bytes charged per packet on top of its size (stands for `skb->truesize − len`; 768).
    pub skb_overhead: u32,
}

impl Default for FqParams {
    fn default() -> Self {
        Self::mac80211()
    }
}

impl FqParams {
    /// `fq_init()` defaults as `ieee80211_txq_setup_flows()` uses them for a VHT-capable radio.
    pub const fn mac80211() -> Self {
        FqParams { flows: 4096, quantum: 300, limit: 8192, memory_limit: 16 << 20, skb_overhead: 768 }
    }

    /// A radio without VHT support (e.g. ath9k): `memory_limit` 4 MiB.
    pub const fn mac80211_no_vht() -> Self {
        FqParams { memory_limit: 4 << 20, ..Self::mac80211() }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check((1..=65_536).contains(&self.flows), "flows", "must be in 1..=65536")?;
        check(self.quantum > 0, "quantum", "must be > 0")?;
        check(self.limit > 0, "limit", "must be > 0")?;
        check(self.memory_limit > 0, "memory_limit", "must be > 0")
    }

    /// Bytes charged against `memory_limit` for a packet of `size` bytes.
    pub fn truesize(&self, size: u32) -> u64 {
        size as u64 + self.skb_overhead as u64
    }
}

/// A tin (mac80211 TXQ): returned by [`Fq::add_tin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct TinId(pub u16);

/// A flow: `0..flows` are the hashed table, the rest one default flow per tin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FlowId(pub u32);

/// Which of its tin's lists a flow is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum FlowList {
    New,
    Old,
}

/// How the table behaves: mac80211's FQ or the `fq_codel` qdisc built on the same pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `fq_impl.h`: cut max(1, min(32, qlen/2)) packets from the fattest flow until under the
    /// limits; CoDel's minimum-backlog check reads the flow's bytes.
    Mac80211,
    /// `sch_fq_codel.c`: one cut per enqueue of up to `drop_batch` packets until half the fattest
    /// flow's bytes are gone, adding the count to its CoDel `count`; CoDel reads the qdisc's bytes.
    FqCodel { drop_batch: u32 },
}

#[derive(Clone, Debug, Default)]
struct Flow {
    q: VecDeque<Packet>,
    bytes: u64,
    deficit: i64,
    list: Option<FlowList>,
    /// The tin that owns the flow (Linux `flow->tin`): set at enqueue, cleared when the flow
    /// leaves its tin's lists at dequeue.
    tin: Option<TinId>,
    cvars: CodelVars,
    /// A flow queue of its own ([`Fq::add_dedicated_flow`]): never hashed to, never a tin's default.
    dedicated: bool,
}

/// Counters of one tin (Linux `struct fq_tin` plus the TXQ's `cstats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TinStats {
    pub backlog_packets: u32,
    pub backlog_bytes: u64,
    /// Packets accepted.
    pub enqueued: u64,
    /// Flows this tin took ownership of (Linux `tin->flows`).
    pub flows: u64,
    /// Times a flow joined the `new` list (`fq_codel`'s `new_flow_count`).
    pub new_flows: u64,
    /// Packets sent to the default flow because their flow belonged to another tin.
    pub collisions: u64,
    /// Overlimit cuts that hit one of this tin's flows (Linux `tin->overlimit`: events).
    pub overlimit: u64,
    /// Packets lost to those cuts.
    pub overlimit_drops: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// CoDel counters over this tin's flows.
    pub codel: CodelStats,
}

/// Counters of the whole table (Linux `struct fq`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FqStats {
    pub backlog_packets: u32,
    pub backlog_bytes: u64,
    pub memory_usage: u64,
    /// Overlimit cuts (events), and the packets they dropped.
    pub overlimit: u64,
    pub overlimit_drops: u64,
    /// Cuts made while over `memory_limit` (events), and their packets.
    pub overmemory: u64,
    pub overmemory_drops: u64,
    pub collisions: u64,
}

/// One flow as seen from outside (like mac80211's debugfs `aqm` file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FlowInfo {
    pub flow: FlowId,
    pub tin: TinId,
    pub default_flow: bool,
    pub packets: u32,
    pub bytes: u64,
    pub deficit: i64,
    pub list: Option<FlowList>,
    pub codel_count: u32,
    pub codel_dropping: bool,
}

#[derive(Debug)]
struct Tin {
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    default_flow: u32,
    codel: CodelParams,
    stats: TinStats,
}

/// mac80211's FQ with per-flow CoDel. See the module docs.
#[derive(Debug)]
pub struct Fq {
    params: FqParams,
    flavor: Flavor,
    perturbation: u64,
    flows: Vec<Flow>,
    tins: Vec<Tin>,
    /// Hashed flows with bytes queued, in index order (Linux `flows_bitmap`).
    backlogged: BTreeSet<u32>,
    /// Tins whose default flow has bytes queued, most recent first (Linux `tin_backlog`).
    tin_backlog: VecDeque<TinId>,
    stats: FqStats,
    ecn_capable: EcnClassifier,
}

/// SplitMix64's finaliser: a seeded, well-mixed hash of a 64-bit key.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Linux `reciprocal_scale()`: maps a 32-bit hash onto `0..n` by a multiply-shift.
pub fn reciprocal_scale(hash: u32, n: u32) -> u32 {
    ((hash as u64 * n as u64) >> 32) as u32
}

/// The 32-bit flow hash of `p` under `perturbation`.
pub(crate) fn flow_hash(p: &Packet, perturbation: u64) -> u32 {
    let key = (p.src as u64) << 48 | (p.dst as u64) << 32 | p.flow as u64;
    (mix64(key ^ perturbation) >> 32) as u32
}

impl Fq {
    /// A table with no tins; the hash perturbation is drawn from `rng` (by convention
    /// `Rng::derive(seed, "<ap>/fq")`).
    pub fn new(params: FqParams, rng: &mut Rng) -> Self {
        Self::with_flavor(params, Flavor::Mac80211, rng)
    }

    pub(crate) fn with_flavor(params: FqParams, flavor: Flavor, rng: &mut Rng) -> Self {
        assert!(params.flows >= 1, "FqParams::flows must be ≥ 1");
        Fq {
            params,
            flavor,
            perturbation: rng.next_u64(),
            flows: vec![Flow::default(); params.flows as usize],
            tins: Vec::new(),
            backlogged: BTreeSet::new(),
            tin_backlog: VecDeque::new(),
            stats: FqStats::default(),
            ecn_capable: not_ecn_capable,
        }
    }

    /// Adds a tin (a TXQ) whose flows use `codel`; returns its id.
    pub fn add_tin(&mut self, codel: CodelParams) -> TinId {
        let id = TinId(u16::try_from(self.tins.len()).expect("at most 65536 tins"));
        let default_flow = self.flows.len() as u32;
        self.flows.push(Flow::default());
        self.tins.push(Tin { new_flows: VecDeque::new(), old_flows: VecDeque::new(), default_flow, codel, stats: TinStats::default() });
        id
    }

    /// Adds a flow queue outside the hashed table, for one flow that must never collide with others
    /// (LAST-PQ's prioritized flows, `qair-lastpq.md` §12 [LH]); packets go to it by
    /// [`Fq::enqueue_dedicated`]. It takes part in its tin's new/old DRR like any flow.
    pub fn add_dedicated_flow(&mut self) -> FlowId {
        let f = self.flows.len() as u32;
        self.flows.push(Flow { dedicated: true, ..Flow::default() });
        FlowId(f)
    }

    /// Queues `p` on `tin` in dedicated flow `f` (from [`Fq::add_dedicated_flow`]), with the limits of
    /// the whole table.
    pub fn enqueue_dedicated(&mut self, now: SimTime, tin: TinId, f: FlowId, p: Packet, drops: &mut Vec<Dropped>) {
        assert!(self.flows[f.0 as usize].dedicated, "flow {} is not dedicated", f.0);
        if self.flows[f.0 as usize].tin.is_none() {
            self.tins[tin.0 as usize].stats.flows += 1;
        }
        self.enqueue_flow(now, tin, f.0, p, drops);
    }

    /// Dequeues from dedicated flow `f` of `tin` directly, through its CoDel, charging its byte deficit
    /// as a DRR dequeue would; the flow keeps its place on its tin's lists (LAST-PQ's priority path).
    pub fn dequeue_dedicated(&mut self, now: SimTime, tin: TinId, f: FlowId, drops: &mut Vec<Dropped>) -> Option<Packet> {
        if self.flows[f.0 as usize].tin != Some(tin) {
            return None;
        }
        let p = self.codel_dequeue(now, tin, f.0, drops)?;
        self.flows[f.0 as usize].deficit -= p.size as i64;
        let s = &mut self.tins[tin.0 as usize].stats;
        s.tx_packets += 1;
        s.tx_bytes += p.size as u64;
        Some(p)
    }

    /// A flow's queue: (packets, enqueue time of its head packet, byte deficit).
    pub fn flow_head(&self, f: FlowId) -> (u32, Option<SimTime>, i64) {
        let fl = &self.flows[f.0 as usize];
        (fl.q.len() as u32, fl.q.front().map(|p| p.enqueued), fl.deficit)
    }

    /// Whether flow queue `f` holds a packet of scenario flow `flow`.
    pub fn flow_holds(&self, f: FlowId, flow: u32) -> bool {
        self.flows[f.0 as usize].q.iter().any(|p| p.flow == flow)
    }

    /// Changes a tin's CoDel parameters (mac80211's slow-station override does this at run time).
    pub fn set_tin_codel(&mut self, tin: TinId, codel: CodelParams) {
        self.tins[tin.0 as usize].codel = codel;
    }

    pub fn tin_codel(&self, tin: TinId) -> CodelParams {
        self.tins[tin.0 as usize].codel
    }

    /// Sets which packets are ECN-capable (default: none).
    pub fn set_ecn_classifier(&mut self, f: EcnClassifier) {
        self.ecn_capable = f;
    }

    pub fn params(&self) -> &FqParams {
        &self.params
    }

    pub fn num_tins(&self) -> usize {
        self.tins.len()
    }

    /// The table index of `p`'s flow (Linux `fq_flow_idx()`).
    pub fn flow_index(&self, p: &Packet) -> u32 {
        reciprocal_scale(flow_hash(p, self.perturbation), self.params.flows)
    }

    /// Queues `p` on `tin` at `now`; packets cut by the limits go to `drops` (possibly `p` itself).
    pub fn enqueue(&mut self, now: SimTime, tin: TinId, p: Packet, drops: &mut Vec<Dropped>) {
        let idx = self.flow_index(&p);
        self.enqueue_at(now, tin, idx, p, drops);
    }

    /// [`Fq::enqueue`] with the table index given (Linux `fq_tin_enqueue()` takes it from the caller).
    pub fn enqueue_at(&mut self, now: SimTime, tin: TinId, idx: u32, p: Packet, drops: &mut Vec<Dropped>) {
        assert!(idx < self.params.flows, "flow index {idx} out of range");
        let f = self.classify(tin, idx);
        self.enqueue_flow(now, tin, f, p, drops);
    }

    /// Queues `p` in flow `f` of `tin` (Linux `fq_tin_enqueue()` after classification).
    fn enqueue_flow(&mut self, now: SimTime, tin: TinId, f: u32, mut p: Packet, drops: &mut Vec<Dropped>) {
        p.enqueued = now;
        let size = p.size as u64;
        if self.flows[f as usize].bytes == 0 {
            if self.is_default(f) {
                self.tin_backlog.push_front(tin);
            } else {
                self.backlogged.insert(f);
            }
        }
        let flow = &mut self.flows[f as usize];
        flow.tin = Some(tin);
        flow.bytes += size;
        flow.q.push_back(p);
        let joins = flow.list.is_none();
        if joins {
            flow.deficit = self.params.quantum as i64;
            flow.list = Some(FlowList::New);
        }
        let t = &mut self.tins[tin.0 as usize];
        if joins {
            t.new_flows.push_back(f);
            t.stats.new_flows += 1;
        }
        t.stats.backlog_packets += 1;
        t.stats.backlog_bytes += size;
        t.stats.enqueued += 1;
        self.stats.backlog_packets += 1;
        self.stats.backlog_bytes += size;
        self.stats.memory_usage += self.params.truesize(p.size);
        self.enforce_limits(drops);
    }

    /// Linux `fq_flow_classify()`: the hashed flow, or the tin's default flow on a collision.
    fn classify(&mut self, tin: TinId, idx: u32) -> u32 {
        let mut f = idx;
        if self.flows[f as usize].tin.is_some_and(|owner| owner != tin) {
            f = self.tins[tin.0 as usize].default_flow;
            self.tins[tin.0 as usize].stats.collisions += 1;
            self.stats.collisions += 1;
        }
        if self.flows[f as usize].tin.is_none() {
            self.tins[tin.0 as usize].stats.flows += 1;
        }
        f
    }

    fn is_default(&self, f: u32) -> bool {
        f >= self.params.flows && !self.flows[f as usize].dedicated
    }

    /// Linux `__fq_adjust_removal()`: bookkeeping after `packets`/`bytes`/`mem` left flow `f`.
    fn adjust_removal(&mut self, f: u32, packets: u32, bytes: u64, mem: u64) {
        let flow = &mut self.flows[f as usize];
        let tin = flow.tin.expect("a flow with packets has an owner");
        flow.bytes -= bytes;
        let emptied = flow.bytes == 0;
        let t = &mut self.tins[tin.0 as usize].stats;
        t.backlog_packets -= packets;
        t.backlog_bytes -= bytes;
        self.stats.backlog_packets -= packets;
        self.stats.backlog_bytes -= bytes;
        self.stats.memory_usage -= mem;
        if emptied {
            if self.is_default(f) {
                self.tin_backlog.retain(|&x| x != tin);
            } else {
                self.backlogged.remove(&f);
            }
        }
    }

    /// Removes the head packet of flow `f` with its bookkeeping (Linux `fq_flow_dequeue()`).
    fn pop_flow(&mut self, f: u32) -> Option<Packet> {
        let p = self.flows[f as usize].q.pop_front()?;
        self.adjust_removal(f, 1, p.size as u64, self.params.truesize(p.size));
        Some(p)
    }

    /// Linux `fq_find_fattest_flow()`: most bytes; ties go to the lowest index, then to hashed
    /// flows over default flows, then to the most recently backlogged tin.
    fn fattest(&self) -> Option<u32> {
        let mut best = None;
        let mut len = 0;
        let defaults = self.tin_backlog.iter().map(|t| self.tins[t.0 as usize].default_flow);
        for f in self.backlogged.iter().copied().chain(defaults) {
            if self.flows[f as usize].bytes > len {
                len = self.flows[f as usize].bytes;
                best = Some(f);
            }
        }
        best
    }

    /// Cuts packets from the head of flow `f`: at most `max`, and for `fq_codel` only until
    /// `until_bytes` are gone (at least one). Returns the number cut.
    fn cut(&mut self, f: u32, max: u32, until_bytes: u64, drops: &mut Vec<Dropped>) -> u32 {
        let (mut n, mut bytes, mut mem) = (0u32, 0u64, 0u64);
        while let Some(p) = self.flows[f as usize].q.pop_front() {
            n += 1;
            bytes += p.size as u64;
            mem += self.params.truesize(p.size);
            drops.push((p, DropReason::QueueFull));
            if n >= max || bytes >= until_bytes {
                break;
            }
        }
        if n > 0 {
            self.adjust_removal(f, n, bytes, mem);
        }
        n
    }

    /// Counts one cut of `n` packets from flow `f`.
    fn count_cut(&mut self, f: u32, n: u32, over_memory: bool) {
        let tin = self.flows[f as usize].tin.expect("owned");
        let t = &mut self.tins[tin.0 as usize].stats;
        t.overlimit += 1;
        t.overlimit_drops += n as u64;
        self.stats.overlimit += 1;
        self.stats.overlimit_drops += n as u64;
        if over_memory {
            self.stats.overmemory += 1;
            self.stats.overmemory_drops += n as u64;
        }
    }

    fn over_memory(&self) -> bool {
        self.stats.memory_usage > self.params.memory_limit
    }

    fn enforce_limits(&mut self, drops: &mut Vec<Dropped>) {
        match self.flavor {
            Flavor::Mac80211 => {
                let mut oom = self.over_memory();
                while self.stats.backlog_packets > self.params.limit || oom {
                    let Some(f) = self.fattest() else { return };
                    let qlen = self.flows[f as usize].q.len() as u32;
                    let n = self.cut(f, (qlen / 2).clamp(1, 32), u64::MAX, drops);
                    if n == 0 {
                        return;
                    }
                    self.count_cut(f, n, oom);
                    if oom {
                        oom = self.over_memory();
                    }
                }
            }
            Flavor::FqCodel { drop_batch } => {
                let oom = self.over_memory();
                if self.stats.backlog_packets <= self.params.limit && !oom {
                    return;
                }
                let Some(f) = self.fattest() else { return };
                let half = self.flows[f as usize].bytes / 2;
                let n = self.cut(f, drop_batch.max(1), half, drops);
                self.flows[f as usize].cvars.bump_count(n);
                self.count_cut(f, n, oom);
            }
        }
    }

    /// The next packet of `tin` by DRR++ over its flows, each through its CoDel (Linux
    /// `fq_tin_dequeue()`). CoDel drops go to `drops` with [`DropReason::Aqm`].
    pub fn dequeue(&mut self, now: SimTime, tin: TinId, drops: &mut Vec<Dropped>) -> Option<Packet> {
        let quantum = self.params.quantum as i64;
        loop {
            let t = &mut self.tins[tin.0 as usize];
            let (from_new, f) = match (t.new_flows.front(), t.old_flows.front()) {
                (Some(&f), _) => (true, f),
                (None, Some(&f)) => (false, f),
                (None, None) => return None,
            };
            if self.flows[f as usize].deficit <= 0 {
                let head = if from_new { &mut t.new_flows } else { &mut t.old_flows };
                head.pop_front();
                t.old_flows.push_back(f);
                let flow = &mut self.flows[f as usize];
                flow.deficit += quantum;
                flow.list = Some(FlowList::Old);
                continue;
            }
            match self.codel_dequeue(now, tin, f, drops) {
                Some(p) => {
                    self.flows[f as usize].deficit -= p.size as i64;
                    let s = &mut self.tins[tin.0 as usize].stats;
                    s.tx_packets += 1;
                    s.tx_bytes += p.size as u64;
                    return Some(p);
                }
                None => self.retire_empty(tin, f, from_new),
            }
        }
    }

    /// An empty head flow: from `new` to the tail of `old` if `old` is non-empty ("force a pass
    /// through old_flows to prevent starvation"), otherwise off the lists and unowned.
    fn retire_empty(&mut self, tin: TinId, f: u32, from_new: bool) {
        let t = &mut self.tins[tin.0 as usize];
        let flow = &mut self.flows[f as usize];
        if from_new {
            t.new_flows.pop_front();
        } else {
            t.old_flows.pop_front();
        }
        if from_new && !t.old_flows.is_empty() {
            t.old_flows.push_back(f);
            flow.list = Some(FlowList::Old);
        } else {
            flow.list = None;
            flow.tin = None;
        }
    }

    /// One CoDel dequeue from flow `f` of `tin`.
    fn codel_dequeue(&mut self, now: SimTime, tin: TinId, f: u32, drops: &mut Vec<Dropped>) -> Option<Packet> {
        let params = self.tins[tin.0 as usize].codel;
        let mut cstats = self.tins[tin.0 as usize].stats.codel;
        let mut cvars = self.flows[f as usize].cvars;
        let out = cvars.dequeue(now, &params, &mut cstats, &mut FlowSource { fq: self, f }, drops);
        self.flows[f as usize].cvars = cvars;
        self.tins[tin.0 as usize].stats.codel = cstats;
        out.map(|(p, _verdict)| p)
    }

    pub fn tin_backlog_packets(&self, tin: TinId) -> u32 {
        self.tins[tin.0 as usize].stats.backlog_packets
    }

    pub fn tin_backlog_bytes(&self, tin: TinId) -> u64 {
        self.tins[tin.0 as usize].stats.backlog_bytes
    }

    /// When the oldest packet at the head of one of `tin`'s flows was enqueued (`None` if empty).
    pub fn tin_oldest_enqueued(&self, tin: TinId) -> Option<SimTime> {
        let t = &self.tins[tin.0 as usize];
        t.new_flows.iter().chain(t.old_flows.iter()).filter_map(|&f| self.flows[f as usize].q.front().map(|p| p.enqueued)).min()
    }

    pub fn tin_is_empty(&self, tin: TinId) -> bool {
        self.tin_backlog_packets(tin) == 0
    }

    /// Packets queued over all tins.
    pub fn backlog_packets(&self) -> u32 {
        self.stats.backlog_packets
    }

    /// Bytes queued over all tins.
    pub fn backlog_bytes(&self) -> u64 {
        self.stats.backlog_bytes
    }

    pub fn stats(&self) -> FqStats {
        self.stats
    }

    /// CoDel counters summed over all tins.
    pub fn codel_stats(&self) -> CodelStats {
        let mut sum = CodelStats::default();
        for t in &self.tins {
            sum.merge(&t.stats.codel);
        }
        sum
    }

    pub fn tin_stats(&self, tin: TinId) -> TinStats {
        self.tins[tin.0 as usize].stats
    }

    /// Lengths of `tin`'s `new` and `old` lists.
    pub fn tin_list_lens(&self, tin: TinId) -> (usize, usize) {
        let t = &self.tins[tin.0 as usize];
        (t.new_flows.len(), t.old_flows.len())
    }

    /// Every flow a tin currently owns (on a list or holding packets), hashed flows by index, then
    /// default flows by tin.
    pub fn flow_stats(&self) -> Vec<FlowInfo> {
        let n = self.params.flows;
        self.flows
            .iter()
            .enumerate()
            .filter_map(|(i, fl)| {
                let tin = fl.tin?;
                Some(FlowInfo {
                    flow: FlowId(i as u32),
                    tin,
                    default_flow: i as u32 >= n && !fl.dedicated,
                    packets: fl.q.len() as u32,
                    bytes: fl.bytes,
                    deficit: fl.deficit,
                    list: fl.list,
                    codel_count: fl.cvars.count(),
                    codel_dropping: fl.cvars.dropping(),
                })
            })
            .collect()
    }

    /// The flow a packet of `tin` at table index `idx` would join now.
    pub fn flow_for(&self, tin: TinId, idx: u32) -> FlowId {
        match self.flows[idx as usize].tin {
            Some(owner) if owner != tin => FlowId(self.tins[tin.0 as usize].default_flow),
            _ => FlowId(idx),
        }
    }

    /// Recomputes every counter from the queued packets and checks the list structure.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let mut total = (0u32, 0u64, 0u64);
        for (ti, t) in self.tins.iter().enumerate() {
            let tin = TinId(ti as u16);
            let mine = self.flows.iter().filter(|f| f.tin == Some(tin));
            let (p, b) = mine.fold((0, 0), |(p, b), f| (p + f.q.len() as u32, b + f.bytes));
            assert_eq!((t.stats.backlog_packets, t.stats.backlog_bytes), (p, b), "tin {ti} backlog");
            for (list, kind) in [(&t.new_flows, FlowList::New), (&t.old_flows, FlowList::Old)] {
                for &f in list {
                    assert_eq!(self.flows[f as usize].list, Some(kind));
                    assert_eq!(self.flows[f as usize].tin, Some(tin));
                }
            }
            total = (total.0 + p, total.1 + b, total.2);
        }
        for (i, f) in self.flows.iter().enumerate() {
            assert_eq!(f.bytes, f.q.iter().map(|p| p.size as u64).sum::<u64>(), "flow {i} bytes");
            assert!(f.q.is_empty() || f.list.is_some(), "flow {i} queued but unlisted");
            assert_eq!(f.tin.is_some(), f.list.is_some(), "flow {i} owned iff listed");
            let listed = self.tins.iter().map(|t| t.new_flows.iter().chain(&t.old_flows).filter(|&&x| x as usize == i).count()).sum::<usize>();
            assert_eq!(listed, f.list.is_some() as usize, "flow {i} list membership");
            total.2 += f.q.iter().map(|p| self.params.truesize(p.size)).sum::<u64>();
            if (i as u32) < self.params.flows || f.dedicated {
                assert_eq!(self.backlogged.contains(&(i as u32)), f.bytes > 0, "flow {i} bitmap");
            }
        }
        assert_eq!((self.stats.backlog_packets, self.stats.backlog_bytes, self.stats.memory_usage), total);
        for (ti, t) in self.tins.iter().enumerate() {
            let listed = self.tin_backlog.iter().filter(|x| x.0 as usize == ti).count();
            assert_eq!(listed, (self.flows[t.default_flow as usize].bytes > 0) as usize, "tin {ti} tin_backlog");
        }
    }
}

/// Flow `f` of the table as CoDel sees it.
struct FlowSource<'a> {
    fq: &'a mut Fq,
    f: u32,
}

impl CodelSource for FlowSource<'_> {
    fn pop(&mut self) -> Option<Packet> {
        self.fq.pop_flow(self.f)
    }
    fn backlog_bytes(&self) -> u64 {
        match self.fq.flavor {
            Flavor::Mac80211 => self.fq.flows[self.f as usize].bytes,
            Flavor::FqCodel { .. } => self.fq.stats.backlog_bytes,
        }
    }
    fn ecn_capable(&self, p: &Packet) -> bool {
        (self.fq.ecn_capable)(p)
    }
}

#[cfg(test)]
#[path = "fq_tests.rs"]
mod tests;
