//! The `fq_codel` qdisc: Linux `net/sched/sch_fq_codel.c` (RFC 8290), baselines.md §2.3.
//!
//! Built on [`Fq`] with one tin and the qdisc's own rules ([`Flavor::FqCodel`]):
//! * 1024 hashed flows, DRR with new/old lists and quantum = MTU + 14 = 1514 B; an empty flow at the
//!   head of `new` moves to `old` only if `old` is non-empty (Linux; RFC 8290 says always);
//! * per-flow CoDel 5 ms / 100 ms, ECN on, whose minimum-backlog check (`mtu` 1514) reads the whole
//!   qdisc's bytes, not the flow's;
//! * over `limit` (10240 packets) or `memory_limit` (32 MiB), one cut per enqueue from the fattest
//!   flow: up to `drop_batch` (64) head packets until half its bytes are gone, and that many added to
//!   the flow's CoDel `count`.
//!
//! Drops made at enqueue that are not the arriving packet cannot travel through `enqueue`'s
//! `Result`; they wait in the qdisc until [`FqCodel::drain_drops`] or the next dequeue hands them out.
//!
//! Not modelled: external classifiers (`tc filter`) and `skb->priority` flow selection,
//! `ce_threshold`, the deferred `qdisc_tree_reduce_backlog` bookkeeping.

use super::codel::{CodelParams, EcnClassifier};
use super::error::{check, ParamError};
use super::fq::{Flavor, FlowInfo, Fq, FqParams, TinId};
use super::{Dropped, QueueStats};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `fq_codel` parameters (`tc qdisc … fq_codel limit flows quantum memory_limit drop_batch target
/// interval ecn`). Defaults from `fq_codel_init()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelParams {
    /// Hashed flows, 1..=65536 (1024).
    pub flows: u32,
    /// DRR quantum in bytes, ≥ 256 (`psched_mtu(dev)` = 1514 on Ethernet).
    pub quantum: u32,
    /// Packets before the fattest flow is cut (10240).
    pub limit: u32,
    /// Bytes of memory before the fattest flow is cut (32 MiB).
    pub memory_limit: u64,
    /// Most packets one cut removes (64).
    pub drop_batch: u32,
    /// Bytes charged per packet on top of its size (stands for `skb->truesize − len`; 768).
    pub skb_overhead: u32,
    /// Per-flow CoDel ([`CodelParams::fq_codel_default`]: 5 ms / 100 ms, ECN on, mtu 1514).
    pub codel: CodelParams,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            flows: 1024,
            quantum: 1514,
            limit: 10 * 1024,
            memory_limit: 32 << 20,
            drop_batch: 64,
            skb_overhead: 768,
            codel: CodelParams::fq_codel_default(),
        }
    }
}

impl FqCodelParams {
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.quantum >= 256, "quantum", "must be ≥ 256 (Linux raises smaller values to 256)")?;
        check(self.drop_batch >= 1, "drop_batch", "must be ≥ 1")?;
        self.fq_params().validate()?;
        self.codel.validate().map_err(ParamError::in_codel)
    }

    fn fq_params(&self) -> FqParams {
        FqParams { flows: self.flows, quantum: self.quantum, limit: self.limit, memory_limit: self.memory_limit, skb_overhead: self.skb_overhead }
    }
}

/// What `tc -s qdisc show` reports for `fq_codel` (`struct tc_fq_codel_qd_stats`), plus CoDel drops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FqCodelStats {
    pub maxpacket: u32,
    /// Packets cut over `limit` or `memory_limit`.
    pub drop_overlimit: u64,
    /// Of those, packets cut while over `memory_limit`.
    pub drop_overmemory: u64,
    /// Packets dropped by CoDel.
    pub codel_drops: u64,
    pub ecn_mark: u64,
    pub new_flow_count: u64,
    pub new_flows_len: u32,
    pub old_flows_len: u32,
    pub memory_usage: u64,
}

/// The `fq_codel` qdisc. See the module docs.
#[derive(Debug)]
pub struct FqCodel {
    params: FqCodelParams,
    fq: Fq,
    tin: TinId,
    /// Drops made at enqueue, waiting to be handed out.
    pending: Vec<Dropped>,
    scratch: Vec<Dropped>,
    pub stats: QueueStats,
}

impl FqCodel {
    /// An empty qdisc; the flow-hash perturbation is drawn from `rng` (by convention
    /// `Rng::derive(seed, "<link>/fq_codel")`).
    pub fn new(params: FqCodelParams, rng: &mut Rng) -> Self {
        let flavor = Flavor::FqCodel { drop_batch: params.drop_batch };
        let mut fq = Fq::with_flavor(params.fq_params(), flavor, rng);
        let tin = fq.add_tin(params.codel);
        FqCodel { params, fq, tin, pending: Vec::new(), scratch: Vec::new(), stats: QueueStats::default() }
    }

    /// Sets which packets are ECN-capable (default: none).
    pub fn set_ecn_classifier(&mut self, f: EcnClassifier) {
        self.fq.set_ecn_classifier(f);
    }

    pub fn params(&self) -> &FqCodelParams {
        &self.params
    }

    /// The flow index of `p` (Linux `fq_codel_hash()`).
    pub fn flow_index(&self, p: &Packet) -> u32 {
        self.fq.flow_index(p)
    }

    /// Offers a packet. `Err` if the overlimit cut took the arriving packet itself; other packets
    /// the cut took wait for [`FqCodel::drain_drops`] or the next [`FqCodel::dequeue`].
    pub fn enqueue(&mut self, now: SimTime, p: Packet) -> Result<(), Dropped> {
        let id = p.id;
        self.fq.enqueue(now, self.tin, p, &mut self.scratch);
        self.stats.dropped += self.scratch.len() as u64;
        let mut own = None;
        for d in self.scratch.drain(..) {
            if d.0.id == id && own.is_none() {
                own = Some(d);
            } else {
                self.pending.push(d);
            }
        }
        if let Some(d) = own {
            return Err(d);
        }
        self.stats.enqueued += 1;
        self.stats.max_packets = self.stats.max_packets.max(self.fq.backlog_packets() as u64);
        self.stats.max_bytes = self.stats.max_bytes.max(self.fq.backlog_bytes());
        Ok(())
    }

    /// Moves the drops made at enqueue to `out` (reason [`super::DropReason::QueueFull`]).
    pub fn drain_drops(&mut self, out: &mut Vec<Dropped>) {
        out.append(&mut self.pending);
    }

    /// The next packet by DRR over the flows' CoDel; CoDel drops, and any drops left from enqueue,
    /// go to `drops`.
    pub fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.drain_drops(drops);
        let before = drops.len();
        let p = self.fq.dequeue(now, self.tin, drops);
        self.stats.dropped += (drops.len() - before) as u64;
        if p.is_some() {
            self.stats.dequeued += 1;
        }
        p
    }

    pub fn len_packets(&self) -> usize {
        self.fq.backlog_packets() as usize
    }

    pub fn len_bytes(&self) -> u64 {
        self.fq.backlog_bytes()
    }

    pub fn fq_codel_stats(&self) -> FqCodelStats {
        let t = self.fq.tin_stats(self.tin);
        let s = self.fq.stats();
        let (new_len, old_len) = self.fq.tin_list_lens(self.tin);
        FqCodelStats {
            maxpacket: t.codel.maxpacket,
            drop_overlimit: s.overlimit_drops,
            drop_overmemory: s.overmemory_drops,
            codel_drops: t.codel.drop_count,
            ecn_mark: t.codel.ecn_mark,
            new_flow_count: t.new_flows,
            new_flows_len: new_len as u32,
            old_flows_len: old_len as u32,
            memory_usage: s.memory_usage,
        }
    }

    /// Every flow on a list, by index.
    pub fn flow_stats(&self) -> Vec<FlowInfo> {
        self.fq.flow_stats()
    }

    #[cfg(test)]
    pub(crate) fn fq(&self) -> &Fq {
        &self.fq
    }
}

#[cfg(test)]
#[path = "fq_codel_tests.rs"]
mod tests;
