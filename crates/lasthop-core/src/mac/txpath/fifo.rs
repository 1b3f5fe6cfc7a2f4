//! One MAC queue per AC with PSDUs formed at channel access, as ns-3 3.44's `WifiMacQueue` and
//! `QosTxop` do (the path the validation scenarios use).
//!
//! * The queue of an AC holds at most `queue_packets` MPDUs over all receivers, counting those in
//!   flight: ns-3 removes an MPDU from its `WifiMacQueue` only when it is acknowledged or dropped.
//! * Optionally ns-3's traffic-control layer sits above it ([`FifoPath::set_qdisc`]): one qdisc per AC
//!   (`mq` root with a child per device queue) and flow control — an AC's device queue is stopped
//!   while its MAC queue is full and woken when an MPDU leaves it, at which moment the qdisc is run
//!   (`WifiNetDevice` connects the `NetDeviceQueue` to the `WifiMacQueue`'s traces). The backlog then
//!   waits in the qdisc, where its AQM sees it.
//! * The receiver served is the one whose head MPDU is oldest (ns-3 serves receivers FCFS by age).
//! * Without aggregation an MPDU is dropped after `retry_limit` attempts (ns-3 `FrameRetryLimit`).
//! * Under BlockAck there is no retry limit; MPDUs older than `lifetime` are dropped at the head
//!   (ns-3 `MaxDelay`), and the receiver's window moves past them.
//! * With `explicit_bar`, a missed BlockAck makes the next access a BlockAckReq (ns-3
//!   `UseExplicitBarAfterMissedBlockAck`).
//! * A release gate (QAir's) may sit between the queue and the channel access
//!   ([`FifoPath::set_release_gate`]). PSDUs here form at channel access, so the gate holds at
//!   formation: an AC contends only while the gate has released its next PSDU (a TXOP continuation
//!   too). A release lasts until an exchange under it succeeds (the MPDUs a BlockAck missed go back
//!   under the next release, as ath9k's software retries pass the gate again) or none of its MPDUs
//!   goes back to the queue; the failed attempts in between are the hardware's own retries, as ath9k's
//!   multi-rate retry is under one release. It is the path's
//!   hardware-queue entry (t_w, QAir's `t_k_from = "hw_enqueue"`), the gate hears the attempts as
//!   typed transmit events, and a gate that refuses names when the path is woken. The gate is told the
//!   PSDU as it would be formed at release (the link's current rate, the MPDUs queued then); the one
//!   formed at access may carry MPDUs that arrived since. (The packet log's `t_hw_enq` stays the MAC
//!   enqueue, as without a gate.)
//! * A link sends at its fixed rate, or at the rate its adaptive controller picks for each attempt
//!   (ns-3's `WifiRemoteStationManager::GetDataTxVector` per transmission, each attempt reported back):
//!   one rate per attempt, retries as new channel accesses, a probe sent unaggregated.

use super::gate::{ReleaseGate, TxEvent};
use super::{Mpdu, PathOut, Psdu, RateChain, TxStatus};
use crate::mac::ampdu::{self, AmpduLimits, PsduPlan};
use crate::mac::edca::AccessCategory;
use crate::packet::Packet;
use crate::phy::airtime::{ppdu_duration_with, AirtimeOptions, BLOCK_ACK_REQ_LEN};
use crate::phy::mcs::{Band, TxVector};
use crate::queue::{AnyQueue, Dropped};
use crate::ratectl::{AnyRateControl, RateControl, RateEntry, RateSet};
use crate::stats::{DropReason, Stage};
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Per-BSS settings of the path.
#[derive(Clone, Debug)]
pub struct FifoParams {
    pub qos: bool,
    pub ampdu: bool,
    pub limits: AmpduLimits,
    pub band: Band,
    pub airtime: AirtimeOptions,
    pub queue_packets: u32,
    pub retry_limit: u32,
    pub lifetime: SimDuration,
    pub explicit_bar: bool,
    pub sifs: SimDuration,
}

#[derive(Debug)]
struct FifoLink {
    /// Medium link index.
    id: u32,
    txv: TxVector,
    /// The adaptive rate controller, when the link has one (else `txv` always).
    rc: Option<AnyRateControl>,
    ack: SimDuration,
    block_ack: SimDuration,
    queues: [VecDeque<Mpdu>; 4],
    next_seq: [u64; 4],
    bar_pending: [bool; 4],
}

/// Counters of the path.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct FifoStats {
    pub queue_drops: u64,
    pub retry_drops: u64,
    pub lifetime_drops: u64,
}

/// ns-3's traffic-control layer: one qdisc per AC above the MAC queue, flow-controlled by it.
#[derive(Debug)]
struct TrafficControl {
    qdiscs: Vec<AnyQueue>,
    /// The local link to each next hop ([`Packet::hop`]) packets were queued for: a packet leaving a
    /// qdisc goes to the link its hop names, as ns-3's queue-disc item carries its destination address
    /// (links are fixed, so a hop is always the same link). A map from packet id before, whose lookups
    /// missed the cache: the ns-3 anchor's engine takes 0.84–0.91 of the time without it.
    link_of_hop: Vec<usize>,
    drops: Vec<Dropped>,
}

/// A release gate on the path and, per AC, its release outstanding (see the module docs).
#[derive(Debug)]
struct FifoGate {
    gate: Box<dyn ReleaseGate>,
    released: [Option<Release>; 4],
    /// When the gate opens again after refusing.
    wakeup: Option<SimTime>,
}

/// A release of the gate for an AC's next PSDU: when, and the attempts made under it so far (and when
/// the last one ended).
#[derive(Clone, Copy, Debug)]
struct Release {
    at: SimTime,
    /// The medium link the gate was told of.
    link: u32,
    attempts: u32,
    last_end: SimTime,
}

#[derive(Debug)]
pub struct FifoPath {
    p: FifoParams,
    links: Vec<FifoLink>,
    /// MPDUs of each AC in the MAC queue, in flight included.
    held: [usize; 4],
    tc: Option<Box<TrafficControl>>,
    gate: Option<Box<FifoGate>>,
    stats: FifoStats,
}

impl FifoPath {
    pub fn new(p: FifoParams) -> Self {
        FifoPath { p, links: Vec::new(), held: [0; 4], tc: None, gate: None, stats: FifoStats::default() }
    }

    /// Puts ns-3's traffic-control layer above the MAC queue: `make` builds the qdisc of each AC.
    pub fn set_qdisc(&mut self, mut make: impl FnMut() -> AnyQueue) {
        let qdiscs = (0..4).map(|_| make()).collect();
        self.tc = Some(Box::new(TrafficControl { qdiscs, link_of_hop: Vec::new(), drops: Vec::new() }));
    }

    /// Adds a link (in the node's local link order) with its fixed rate (or adaptive controller) and
    /// response durations.
    pub fn add_link(&mut self, id: u32, txv: TxVector, rc: Option<AnyRateControl>, ack: SimDuration, block_ack: SimDuration) {
        self.links.push(FifoLink { id, txv, rc, ack, block_ack, queues: Default::default(), next_seq: [0; 4], bar_pending: [false; 4] });
    }

    /// The rate of link `li`'s next attempt and whether it is a rate-control probe.
    fn attempt_rate(&mut self, now: SimTime, li: usize) -> (TxVector, bool) {
        let l = &mut self.links[li];
        match &mut l.rc {
            Some(rc) => {
                let rs = rc.rate_set(now, 1538);
                (rs.entries[0].map_or(l.txv, |e| e.txv), rs.probe)
            }
            None => (l.txv, false),
        }
    }

    fn aggregate(&self, ac: usize) -> bool {
        self.p.ampdu && !(self.p.qos && ac == AccessCategory::Vo as usize)
    }

    pub fn enqueue(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>) {
        self.queue(now, link, ac, pkt, out);
        self.arm_for(now, ac);
    }

    /// Into the traffic-control layer if there is one, else into the MAC queue.
    fn queue(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>) {
        let Some(tc) = self.tc.as_mut() else {
            return self.mac_enqueue(now, link, ac, pkt, out);
        };
        out.log.stamp(pkt.id, Stage::QdiscEnq, now);
        let hop = pkt.hop as usize;
        if tc.link_of_hop.len() <= hop {
            tc.link_of_hop.resize(hop + 1, usize::MAX);
        }
        tc.link_of_hop[hop] = link;
        let r = tc.qdiscs[ac].enqueue(now, pkt);
        tc.qdiscs[ac].drain_drops(&mut tc.drops);
        if let Err(d) = r {
            tc.drops.push(d);
        }
        self.run_qdisc(now, ac, out);
    }

    fn mac_enqueue(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>) {
        if self.held[ac] >= self.p.queue_packets as usize {
            self.stats.queue_drops += 1;
            out.dropped.push((pkt, DropReason::QueueFull));
            return;
        }
        self.held[ac] += 1;
        let l = &mut self.links[link];
        let seq = l.next_seq[ac];
        l.next_seq[ac] += 1;
        l.queues[ac].push_back(Mpdu { pkt, seq, len: crate::mac::mpdu_len(pkt.size, self.p.qos), attempts: 0, enq: now });
        out.log.stamp(pkt.id, Stage::HwEnq, now);
    }

    /// The device queue of `ac` is awake while its MAC queue has room: moves packets from the qdisc
    /// until it is full or the qdisc is empty.
    fn run_qdisc(&mut self, now: SimTime, ac: usize, out: &mut PathOut<'_>) {
        let Some(mut tc) = self.tc.take() else { return };
        while self.held[ac] < self.p.queue_packets as usize {
            let Some(pkt) = tc.qdiscs[ac].dequeue(now, &mut tc.drops) else { break };
            out.log.stamp(pkt.id, Stage::QdiscDeq, now);
            let link = tc.link_of_hop[pkt.hop as usize];
            self.mac_enqueue(now, link, ac, pkt, out);
        }
        for (pkt, reason) in tc.drops.drain(..) {
            out.dropped.push((pkt, reason));
        }
        self.tc = Some(tc);
    }

    /// MPDUs wait in AC `ac`'s queue, and a release gate (if any) released its next PSDU.
    pub fn pending(&self, ac: usize) -> bool {
        self.queued(ac) && self.gate.as_ref().is_none_or(|g| g.released[ac].is_some())
    }

    fn queued(&self, ac: usize) -> bool {
        self.links.iter().any(|l| !l.queues[ac].is_empty())
    }

    /// The link whose head MPDU is oldest.
    fn pick(&self, ac: usize) -> Option<usize> {
        (0..self.links.len()).filter_map(|i| self.links[i].queues[ac].front().map(|m| (m.enq, m.seq, i))).min().map(|x| x.2)
    }

    /// Drops head MPDUs past their lifetime (under BlockAck only).
    fn expire(&mut self, now: SimTime, li: usize, ac: usize, out: &mut PathOut<'_>) {
        let lifetime = self.p.lifetime;
        let l = &mut self.links[li];
        while let Some(m) = l.queues[ac].front() {
            if now.saturating_since(m.enq) <= lifetime {
                break;
            }
            let m = l.queues[ac].pop_front().expect("front");
            self.held[ac] -= 1;
            self.stats.lifetime_drops += 1;
            out.dropped.push((m.pkt, DropReason::Deadline));
            out.releases.push((l.id, ac, m.seq + 1));
        }
    }

    pub fn head(&mut self, now: SimTime, ac: usize, budget: Option<SimDuration>, out: &mut PathOut<'_>) -> Option<Psdu> {
        if self.gate.as_ref().is_some_and(|g| g.released[ac].is_none()) {
            // Not released (a TXOP continuation asks without `pending`): the gate holds the AC.
            return None;
        }
        let li = self.pick(ac)?;
        let under_ba = self.aggregate(ac);
        if under_ba {
            self.expire(now, li, ac, out);
            self.run_qdisc(now, ac, out);
        }
        if self.links[li].queues[ac].is_empty() {
            // Lifetime drops emptied the queue the release was for.
            self.end_release_if_idle(now, ac);
            return None;
        }
        if self.links[li].bar_pending[ac] {
            if budget.is_some() {
                return None;
            }
            let l = &self.links[li];
            let txv = l.rc.as_ref().map_or(l.txv, |rc| rc.current_rate());
            return Some(Psdu { link: l.id, ac, mpdus: Vec::new(), chain: RateChain::single(txv, 1), aggregated: true, bar: true, psdu_len: BLOCK_ACK_REQ_LEN, probe: false, hw_deadline: None });
        }
        let (txv, probe) = self.attempt_rate(now, li);
        let aggregate = under_ba && !probe;
        let l = &self.links[li];
        let mut limits = self.p.limits;
        if let Some(b) = budget {
            let resp = if aggregate { l.block_ack } else { l.ack };
            limits.max_duration = limits.max_duration.min(b.saturating_sub(self.p.sifs + resp));
        }
        let win_end = l.queues[ac].front().map(|m| m.seq + limits.max_mpdus as u64).unwrap_or(0);
        let lens = l.queues[ac].iter().take_while(|m| m.seq < win_end).map(|m| m.len);
        let PsduPlan { mpdus, psdu_len, duration } = ampdu::plan(lens, &txv, self.p.band, self.p.airtime, &limits, aggregate);
        if budget.is_some() && duration > limits.max_duration {
            return None;
        }
        let l = &mut self.links[li];
        let taken: Vec<Mpdu> = l.queues[ac].drain(..mpdus as usize).collect();
        let psdu = Psdu { link: l.id, ac, mpdus: taken, chain: RateChain::single(txv, 1), aggregated: aggregate && mpdus > 1, bar: false, psdu_len, probe, hw_deadline: None };
        self.gate_attempt(now, &psdu);
        Some(psdu)
    }

    pub fn complete(&mut self, now: SimTime, psdu: Psdu, st: TxStatus<'_>, out: &mut PathOut<'_>) {
        let li = self.links.iter().position(|l| l.id == psdu.link).expect("own link");
        let ac = psdu.ac;
        if psdu.bar {
            self.links[li].bar_pending[ac] = !st.success;
            return;
        }
        if let (Some(rc), Some((txv, _))) = (&mut self.links[li].rc, psdu.chain.series[0]) {
            let rs = RateSet { entries: [Some(RateEntry { txv, tries: 1, rts: false }), None, None, None], probe: psdu.probe };
            let acked = st.received.iter().filter(|&&r| r).count() as u16;
            rc.on_tx_status(now, &rs.report(st.attempts, psdu.mpdus.len() as u16, acked));
        }
        if !st.success && psdu.aggregated && self.p.explicit_bar {
            self.links[li].bar_pending[ac] = true;
        }
        let under_ba = self.aggregate(ac);
        let retry_limit = self.p.retry_limit;
        let l = &mut self.links[li];
        let mut requeued = false;
        // Back to the queue head in sequence order: walk the PSDU backwards.
        for (i, m) in psdu.mpdus.iter().enumerate().rev() {
            if st.received[i] {
                self.held[ac] -= 1;
                continue;
            }
            let mut m = *m;
            m.attempts += st.attempts;
            if !under_ba && m.attempts >= retry_limit {
                self.held[ac] -= 1;
                self.stats.retry_drops += 1;
                out.dropped.push((m.pkt, DropReason::RetryLimit));
                out.releases.push((l.id, ac, m.seq + 1));
            } else {
                l.queues[ac].push_front(m);
                requeued = true;
            }
        }
        self.gate_completed(now, &psdu, &st, requeued);
        self.run_qdisc(now, ac, out);
        self.arm_for(now, ac);
    }

    pub fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "type": "fifo", "drops": self.stats });
        if let Some(g) = &self.gate {
            v["release_gate"] = g.gate.stats();
        }
        if self.links.iter().any(|l| l.rc.is_some()) {
            v["rate_control"] = self.links.iter().map(|l| l.rc.as_ref().map_or(serde_json::Value::Null, |r| r.stats())).collect();
        }
        if let Some(tc) = &self.tc {
            v["qdiscs"] = tc.qdiscs.iter().map(|q| serde_json::json!({ "queue": q.stats(), "aqm": q.aqm_stats() })).collect();
        }
        v
    }

    /// Airtime of the PSDU at series rate `txv` (for the medium).
    pub fn airtime(&self, txv: &TxVector, psdu_len: u32) -> SimDuration {
        ppdu_duration_with(txv, psdu_len, self.p.band, self.p.airtime)
    }
}

/// The release gate's part (see the module docs).
impl FifoPath {
    /// Puts a release gate between the queue and the channel access (only the `formation` release
    /// point exists here: a PSDU is formed when its AC wins access).
    pub fn set_release_gate(&mut self, gate: Box<dyn ReleaseGate>) -> Result<(), Box<dyn ReleaseGate>> {
        if gate.release_point() != super::gate::ReleasePoint::Formation {
            return Err(gate);
        }
        self.gate = Some(Box::new(FifoGate { gate, released: [None; 4], wakeup: None }));
        Ok(())
    }

    /// [`Self::arm`] while the medium attends to AC `ac` only (a packet of `ac` arrived or one of its
    /// PSDUs completed): if another AC got a release, the path asks to be woken at once, so that the
    /// medium requests access for every AC.
    fn arm_for(&mut self, now: SimTime, ac: usize) {
        if self.arm(now) & !(1 << ac) != 0 {
            if let Some(g) = self.gate.as_mut() {
                g.wakeup = Some(now);
            }
        }
    }

    /// Releases the next PSDU of every AC with MPDUs queued and none released, highest AC first, while
    /// the gate lets them through (remembering when it opens if not). Returns the ACs released, as a
    /// bit set.
    fn arm(&mut self, now: SimTime) -> u8 {
        let Some(mut g) = self.gate.take() else { return 0 };
        let mut acs = 0;
        for ac in 0..if self.p.qos { 4 } else { 1 } {
            if g.released[ac].is_some() || !self.queued(ac) {
                continue;
            }
            if let Err(t) = g.gate.may_release(now) {
                g.wakeup = Some(g.wakeup.map_or(t, |w| w.min(t)).max(now));
                break;
            }
            let li = self.pick(ac).expect("queued");
            let (bytes, mpdus) = self.planned(li, ac);
            g.gate.on_release(now, self.links[li].id, ac, bytes, mpdus);
            g.released[ac] = Some(Release { at: now, link: self.links[li].id, attempts: 0, last_end: now });
            acs |= 1 << ac;
        }
        self.gate = Some(g);
        acs
    }

    /// The PSDU link `li` would send for AC `ac` if it won access now, (bytes, MPDUs): at the link's
    /// current rate, from the MPDUs queued now (the one formed at access may differ: MPDUs that arrived
    /// since, another rate, a TXOP's budget).
    fn planned(&self, li: usize, ac: usize) -> (u32, u32) {
        let l = &self.links[li];
        let txv = l.rc.as_ref().map_or(l.txv, |rc| rc.current_rate());
        let win_end = l.queues[ac].front().map_or(0, |m| m.seq + self.p.limits.max_mpdus as u64);
        let lens = l.queues[ac].iter().take_while(|m| m.seq < win_end).map(|m| m.len);
        let plan = ampdu::plan(lens, &txv, self.p.band, self.p.airtime, &self.p.limits, self.aggregate(ac));
        (plan.psdu_len, plan.mpdus)
    }

    /// A PSDU formed under AC `ac`'s release starts an attempt.
    fn gate_attempt(&mut self, now: SimTime, psdu: &Psdu) {
        let Some(g) = self.gate.as_mut() else { return };
        let Some(r) = g.released[psdu.ac] else { return };
        let access_delay = now.saturating_since(r.last_end);
        g.gate.on_tx_event(now, &TxEvent::AttemptStart { link: psdu.link, ac: psdu.ac, bytes: psdu.psdu_len, access_delay });
    }

    /// An attempt of a PSDU ended: its release ends when the exchange succeeded or none of its MPDUs
    /// went back to the queue (they were acknowledged or dropped).
    fn gate_completed(&mut self, now: SimTime, psdu: &Psdu, st: &TxStatus<'_>, requeued: bool) {
        let Some(g) = self.gate.as_mut() else { return };
        let Some(r) = g.released[psdu.ac].as_mut() else { return };
        r.attempts += st.attempts;
        r.last_end = now;
        if st.success || !requeued {
            let (attempts, head_to_done) = (r.attempts, now.saturating_since(r.at));
            g.released[psdu.ac] = None;
            let ev = TxEvent::Complete { link: psdu.link, ac: psdu.ac, bytes: psdu.psdu_len, success: st.success, attempts, head_to_done, irq_delay: SimDuration::ZERO };
            g.gate.on_tx_event(now, &ev);
        }
    }

    /// AC `ac`'s queue emptied (lifetime drops) under a release: it ends unsent.
    fn end_release_if_idle(&mut self, now: SimTime, ac: usize) {
        if self.queued(ac) {
            return;
        }
        let Some(g) = self.gate.as_mut() else { return };
        if let Some(r) = g.released[ac].take() {
            let ev = TxEvent::Complete { link: r.link, ac, bytes: 0, success: false, attempts: r.attempts, head_to_done: now.saturating_since(r.at), irq_delay: SimDuration::ZERO };
            g.gate.on_tx_event(now, &ev);
        }
    }

    /// When the gate opens again, if it refused.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.gate.as_ref().and_then(|g| g.wakeup)
    }

    /// The gate's time came: the ACs waiting for it are released if it lets them through (the medium
    /// then requests access for every AC).
    pub fn on_wakeup(&mut self, now: SimTime) {
        if let Some(g) = self.gate.as_mut() {
            g.wakeup = None;
        }
        self.arm(now);
    }
}

impl super::TransmitPath for FifoPath {
    fn add_link(&mut self, l: super::LinkSetup) {
        FifoPath::add_link(self, l.id, l.txv, l.rc, l.ack, l.block_ack);
    }
    fn takes_rate_control(&self) -> bool {
        true
    }
    fn info(&self) -> super::PathInfo {
        let mut queues = format!("{} FIFO of {} packets", if self.p.qos { "one per AC," } else { "one" }, self.p.queue_packets);
        if let Some(tc) = &self.tc {
            queues = format!("qdisc {} over {queues}", tc.qdiscs.first().map_or("none", |q| q.kind()));
        }
        let rate_control = self.links.iter().map(|l| super::PathInfo::link_rate_control(l.rc.as_ref(), &l.txv)).collect();
        super::PathInfo { path: "fifo".into(), queues, rate_control }
    }
    fn enqueue(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>) {
        FifoPath::enqueue(self, now, link, ac, pkt, out);
    }
    fn pending(&self, ac: usize) -> bool {
        FifoPath::pending(self, ac)
    }
    fn head(&mut self, now: SimTime, ac: usize, budget: Option<SimDuration>, out: &mut PathOut<'_>) -> Option<Psdu> {
        FifoPath::head(self, now, ac, budget, out)
    }
    fn complete(&mut self, now: SimTime, psdu: Psdu, st: TxStatus<'_>, out: &mut PathOut<'_>) {
        FifoPath::complete(self, now, psdu, st, out);
    }
    fn stats(&self) -> serde_json::Value {
        FifoPath::stats(self)
    }
    fn set_release_gate(&mut self, gate: Box<dyn super::gate::ReleaseGate>) -> Result<(), Box<dyn super::gate::ReleaseGate>> {
        FifoPath::set_release_gate(self, gate)
    }
    fn has_timers(&self) -> bool {
        self.gate.is_some()
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        FifoPath::next_wakeup(self)
    }
    fn on_wakeup(&mut self, now: SimTime, _out: &mut PathOut<'_>) {
        FifoPath::on_wakeup(self, now);
    }
}

#[cfg(test)]
#[path = "fifo_tests.rs"]
mod tests;
