//! Law's driver at an AP (seed 000 §3.3; `wifi-model.md` §8.1): the mac80211 flow queues read straight
//! into PSDUs as one driver queue structure, no software retry queue, and a hardware that holds at most
//! two PSDUs over all four ACs. The rate and retry decisions come from [`super::control`].
//!
//! Law installs it as stages of the AP's Linux path ([`crate::mac::txpath::linux`]), not as a path of
//! its own:
//! * the **driver** ([`LawDriver`], a [`Driver`]) in place of ath9k's;
//! * the **hardware queue**: one budget of `hw_psdus` PSDUs over all ACs, and Limit_h as the path's
//!   per-PSDU hardware time limit (`hw_time_limit`, the same the stock path offers);
//! * the **TXQ scheduler**: stations round robin per AC (mac80211's scheduler without airtime fairness);
//! * the **TXQs' AQM**: off (FQ's DRR per station × AC stays).
//!
//! The path's other stages work with it as with ath9k's driver: its qdiscs and shaper, t_irq, and a
//! release gate (QAir's) between this driver and the hardware queues.
//!
//! ```text
//! enqueue ─▶ driver queue: FQ (DRR over flows) per station × AC, CoDel off   ── t_txq_enq
//!            Algorithm 1 at entry: N_driver > Len_max → Cleanup
//! hardware has < 2 PSDUs ─▶ highest AC with packets, stations round robin:
//!            dequeue; latency since entry > Limit_q → drop (deadline) + Cleanup   ── t_txq_deq
//!            plan (rate, hardware tries) → PSDU (A-MPDU ≤ Limit_h at that rate) ── t_hw_enq
//!            head of its AC's hardware queue: deadline = now + Limit_h           ── t_hw_head
//! medium: EDCA, retries while tries remain; at the deadline the hardware stops (exactly then if the
//!         PSDU is waiting or backing off; at the end of an exchange that is on the air) and returns it
//! return ─▶ report (TX time = return − head); acked MPDUs done; failed ones: latency > Limit_q → drop
//!           (deadline) + Cleanup; a software retransmission left → re-selected rate, straight back to
//!           the *front* of the hardware queue; else drop (retry limit)
//! ```
//!
//! Choices beyond the paper (each also in [`crate::mech::law`]'s docs where it concerns the controller):
//! * t_hw_head is stamped when a PSDU reaches the head of its hardware queue (Limit_h's start), before
//!   the path's own stamp at its first attempt.
//! * With a release gate (QAir's), a retransmission goes to the front of the hardware queue without
//!   waiting at the gate (the PSDU was released once); the gate hears of it as of any PSDU entering
//!   the hardware (a token; QAir's Delay Monitor pairs it with a completion in FIFO order, so its t_k
//!   may take an older PSDU's start: an approximation). At the gate's `psdu` release point a formed
//!   PSDU may wait in the gate after Limit_q was checked and before Limit_h starts, so a packet's time
//!   at the AP can exceed Limit_q + Limit_h by that wait (at most one token interval per PSDU ahead).
//! * The driver queue keeps mac80211's FQ (4096 flows, 300-B quantum) per station × AC, so flows keep
//!   their DRR isolation after the move ("we moved the flow queues down to the driver", Fig. 12); CoDel
//!   is off (the paper leaves AQM in Law as future work, §5).
//! * ACs are served in strict priority when the hardware has room (the paper does not say how the two
//!   hardware slots are shared); stations within an AC round robin.
//! * A-MPDUs are capped at 32 MPDUs, 65 535 B and Limit_h of airtime at the chosen rate, so one attempt
//!   fits in Limit_h. A retransmission at a slower rate may no longer fit: it carries the longest prefix
//!   that does, and the other failed MPDUs wait at the head of their queue (older than anything there)
//!   for the next PSDU of that queue, keeping their software transmission counts — the one place where
//!   failed packets wait in the driver.
//! * A PSDU returned by Limit_h while on the air (ACK timeout pending) is returned when that exchange
//!   ends: the hardware does not cut a PPDU.

use crate::mac::txpath::driver::Driver;
use crate::mac::txpath::linux::LinuxPath;
use crate::mac::txpath::{Mpdu, PathOut, Psdu, RateChain, TxStatus};
use crate::mac::edca::AccessCategory;
use crate::mech::law::{LawControl, LawParams, Loss, ProbeTag, SwTxReport, TxPlan};
use crate::packet::Packet;
use crate::phy::airtime::{ppdu_duration_with, AirtimeOptions};
use crate::phy::ampdu_len::ampdu_len_with;
use crate::phy::mcs::{Band, TxVector};
use crate::queue::codel::CodelParams;
use crate::queue::Dropped;
use crate::stats::{DropReason, Stage};
use crate::time::{SimDuration, SimTime};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Settings of the driver.
#[derive(Clone, Debug)]
pub struct LawDriverParams {
    pub qos: bool,
    pub ampdu: bool,
    pub band: Band,
    pub airtime: AirtimeOptions,
    pub law: LawParams,
    pub max_ampdu_bytes: u32,
    /// BlockAck window (64).
    pub baw: u64,
}

impl LawDriverParams {
    /// Law's settings on a BSS (its A-MPDU length capped by the BSS's).
    pub fn on(bss: &crate::mac::config::BssParams, law: &LawParams) -> Self {
        LawDriverParams {
            qos: bss.qos,
            ampdu: bss.ampdu,
            band: bss.timings.band,
            airtime: bss.airtime,
            law: LawParams { max_subframes: law.max_subframes.min(bss.ampdu_limits.max_mpdus), ..law.clone() },
            max_ampdu_bytes: bss.ampdu_limits.max_bytes,
            baw: bss.ampdu_limits.max_mpdus as u64,
        }
    }
}

/// CoDel that never acts: Law's driver queue has no AQM (the TXQs' AQM Law installs).
pub const CODEL_OFF: CodelParams = CodelParams { target_us: u32::MAX, interval_us: u32::MAX, ecn: false, mtu: 0 };

#[derive(Debug)]
struct LawTxq {
    /// Its FQ tin in the path's TXQs.
    tin: crate::queue::fq::TinId,
    /// A dequeued packet that did not fit the PSDU being formed.
    look: Option<Packet>,
    /// Failed MPDUs a slower retransmission could not carry (see the module docs).
    back: VecDeque<Mpdu>,
    next_seq: u64,
    /// Sequence numbers in hardware or in `back`.
    outstanding: BTreeSet<u64>,
    /// The receiver was told to move its window up to here.
    released: u64,
}

#[derive(Debug)]
struct LawLink {
    id: u32,
    txqs: Vec<LawTxq>,
    ctl: LawControl,
}

/// What the driver remembers of a PSDU in hardware (keyed by its first MPDU's packet id).
#[derive(Clone, Copy, Debug)]
struct PsduMeta {
    rate: usize,
    /// Software transmission number reported for the PSDU (the largest of its MPDUs).
    sw_tx: u32,
    probe: Option<ProbeTag>,
}

/// Counters of the driver.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct LawDriverStats {
    pub psdus: u64,
    pub sw_retransmissions: u64,
    /// Packets over Limit_q when about to be pushed into hardware.
    pub driver_deadline_drops: u64,
    /// Packets over Limit_q when the hardware returned them.
    pub returned_deadline_drops: u64,
    /// Packets whose last allowed software transmission failed.
    pub retry_drops: u64,
    /// PSDUs the hardware returned at Limit_h.
    pub hw_time_limit_returns: u64,
    /// Retransmissions split because the slower rate could not carry every failed MPDU.
    pub split_retransmissions: u64,
}

/// Law's driver.
#[derive(Debug)]
pub struct LawDriver {
    p: LawDriverParams,
    limit_q: SimDuration,
    limit_h: SimDuration,
    rates: Vec<TxVector>,
    links: Vec<LawLink>,
    meta: BTreeMap<u64, PsduMeta>,
    /// Software transmissions made so far, per packet in hardware or waiting in a `back` queue.
    sw_tx: BTreeMap<u64, u32>,
    drops: Vec<Dropped>,
    stats: LawDriverStats,
    /// Per AC, the first packet of the last head PSDU stamped t_hw_head (each head is stamped once).
    stamped_head: [Option<u64>; 4],
}

impl LawDriver {
    /// A driver without links whose links may use `rates` (only single-stream rates are kept: Law runs
    /// on SISO).
    pub fn new(p: LawDriverParams, rates: Vec<TxVector>) -> Result<Self, String> {
        p.law.validate().map_err(|(f, m)| format!("{f}: {m}"))?;
        let rates: Vec<TxVector> = rates.into_iter().filter(|t| t.nss == 1).collect();
        // Fail early (and with a message) rather than at the first link.
        LawControl::new(&p.law, rates.clone())?;
        Ok(LawDriver {
            limit_q: p.law.limit_q(),
            limit_h: p.law.limit_h(),
            rates,
            links: Vec::new(),
            meta: BTreeMap::new(),
            sw_tx: BTreeMap::new(),
            drops: Vec::new(),
            stats: LawDriverStats::default(),
            stamped_head: [None; 4],
            p,
        })
    }

    /// The controller of local link `li` (for tests and stats).
    pub fn control(&self, li: usize) -> &LawControl {
        &self.links[li].ctl
    }

    fn txq_has_frames(&self, s: &LinuxPath, li: usize, ac: usize) -> bool {
        let t = &self.links[li].txqs[ac];
        t.look.is_some() || !t.back.is_empty() || !s.fq().tin_is_empty(t.tin)
    }

    /// Packets of link `li` in the driver ("current packets in driver" of Algorithm 1).
    fn in_driver(&self, s: &LinuxPath, li: usize) -> usize {
        self.links[li].txqs.iter().map(|t| s.fq().tin_backlog_packets(t.tin) as usize + t.look.is_some() as usize + t.back.len()).sum()
    }

    fn flush_drops(&mut self, out: &mut PathOut<'_>) {
        out.dropped.append(&mut self.drops);
    }

    /// Stamps t_hw_head on the MPDUs of AC `ac`'s head PSDU if it just reached the head (Limit_h's
    /// clock starts then: the path's hardware time limit).
    fn mark_head(&mut self, s: &LinuxPath, ac: usize, now: SimTime, out: &mut PathOut<'_>) {
        let Some(front) = s.waiting_head(ac) else { return };
        let first = front.mpdus[0].pkt.id;
        if self.stamped_head[ac] != Some(first) {
            self.stamped_head[ac] = Some(first);
            for m in &front.mpdus {
                out.log.stamp_first(m.pkt.id, Stage::HwHead, now);
            }
        }
    }

    /// Pushes a PSDU of link `li` into the hardware (at the back, or with `front` at the front); its
    /// [`PsduMeta`] is kept already.
    fn push_hw(&mut self, now: SimTime, s: &mut LinuxPath, li: usize, psdu: Psdu, front: bool, out: &mut PathOut<'_>) {
        let ac = psdu.ac;
        for m in &psdu.mpdus {
            out.log.stamp(m.pkt.id, Stage::HwEnq, now);
            *self.sw_tx.entry(m.pkt.id).or_insert(0) += 1;
        }
        self.stats.psdus += 1;
        if front {
            s.push_hw_front(now, li, ac, psdu);
        } else {
            s.hand_to_hw(now, li, ac, psdu, false);
        }
        self.mark_head(s, ac, now, out);
    }

    /// Fills the hardware up to its PSDU budget: ACs in priority order, stations round robin (a release
    /// gate is asked only when some TXQ has frames). Then every AC's head PSDU that a gate released
    /// meanwhile is stamped as the head.
    fn fill(&mut self, now: SimTime, s: &mut LinuxPath, out: &mut PathOut<'_>) {
        let gated = s.has_gate();
        'outer: while s.hw_has_room(0) && (!gated || s.any_txq_active() && s.may_form(now)) {
            for ac in 0..s.num_acs() {
                while let Some(li) = s.txq_scheduler(ac).next_txq(now) {
                    let formed = self.form(now, s, li, ac, out);
                    let more = self.txq_has_frames(s, li, ac);
                    s.txq_scheduler(ac).return_txq(li, more);
                    if let Some((psdu, meta)) = formed {
                        self.meta.insert(psdu.mpdus[0].pkt.id, meta);
                        self.push_hw(now, s, li, psdu, false, out);
                        continue 'outer;
                    }
                    if more {
                        // The BlockAck window is full: wait for a completion of this queue.
                        break;
                    }
                }
            }
            break;
        }
        self.flush_drops(out);
        if gated {
            for ac in 0..s.num_acs() {
                self.mark_head(s, ac, now, out);
            }
        }
    }

    /// The next packet of TXQ (`li`, `ac`) within Limit_q; older ones are dropped on the way
    /// (Algorithm 1, line 4).
    fn take_fresh(&mut self, now: SimTime, s: &mut LinuxPath, li: usize, ac: usize, out: &mut PathOut<'_>) -> Option<Packet> {
        loop {
            let pkt = match self.links[li].txqs[ac].look.take() {
                Some(p) => p,
                None => {
                    let tin = self.links[li].txqs[ac].tin;
                    let p = s.fq_mut().dequeue(now, tin, &mut self.drops)?;
                    out.log.stamp(p.id, Stage::TxqDeq, now);
                    p
                }
            };
            if now.saturating_since(pkt.enqueued) > self.limit_q {
                self.stats.driver_deadline_drops += 1;
                self.drops.push((pkt, DropReason::Deadline));
                self.links[li].ctl.on_deadline_drop(now, None);
                continue;
            }
            return Some(pkt);
        }
    }

    /// The oldest failed MPDU waiting in `back` within Limit_q.
    fn take_back(&mut self, now: SimTime, li: usize, ac: usize) -> Option<Mpdu> {
        loop {
            let m = self.links[li].txqs[ac].back.pop_front()?;
            if now.saturating_since(m.enq) > self.limit_q {
                self.deadline_drop_returned(now, li, ac, m, None);
                continue;
            }
            return Some(m);
        }
    }

    fn baw_room(&self, li: usize, ac: usize) -> bool {
        let t = &self.links[li].txqs[ac];
        let start = t.outstanding.first().copied().unwrap_or(t.next_seq);
        t.next_seq < start + self.p.baw
    }

    fn aggregate(&self, ac: usize) -> bool {
        self.p.ampdu && !(self.p.qos && ac == AccessCategory::Vo as usize)
    }

    /// The largest duration of one attempt: Limit_h (and 4 ms, ath9k's cap).
    fn max_attempt(&self) -> SimDuration {
        self.limit_h.min(SimDuration::from_ms(4))
    }

    /// Forms a PSDU from TXQ (`li`, `ac`): MPDUs waiting in `back` first, then fresh packets.
    fn form(&mut self, now: SimTime, s: &mut LinuxPath, li: usize, ac: usize, out: &mut PathOut<'_>) -> Option<(Psdu, PsduMeta)> {
        let first = match self.take_back(now, li, ac) {
            Some(m) => m,
            None => {
                if !self.baw_room(li, ac) {
                    return None;
                }
                let pkt = self.take_fresh(now, s, li, ac, out)?;
                self.new_mpdu(li, ac, pkt)
            }
        };
        let n = self.in_driver(s, li);
        let ctl = &mut self.links[li].ctl;
        ctl.on_push(now, n);
        let plan = ctl.plan_first();
        let max_n = if self.aggregate(ac) { self.p.law.max_subframes } else { 1 };
        let mut mpdus = vec![first];
        let mut len = ampdu_len_with(0, first.len);
        while (mpdus.len() as u32) < max_n {
            let next = match self.take_back(now, li, ac) {
                Some(m) => m,
                None => {
                    if !self.baw_room(li, ac) {
                        break;
                    }
                    let Some(pkt) = self.take_fresh(now, s, li, ac, out) else { break };
                    let m = Mpdu { pkt, seq: u64::MAX, len: crate::mac::mpdu_len(pkt.size, self.p.qos), attempts: 0, enq: pkt.enqueued };
                    if !self.fits(&plan, len, m.len) {
                        self.links[li].txqs[ac].look = Some(pkt);
                        break;
                    }
                    self.new_mpdu(li, ac, pkt)
                }
            };
            if !self.fits(&plan, len, next.len) {
                self.links[li].txqs[ac].back.push_front(next);
                break;
            }
            len = ampdu_len_with(len, next.len);
            mpdus.push(next);
        }
        let sw_tx = mpdus.iter().map(|m| self.sw_tx.get(&m.pkt.id).copied().unwrap_or(0) + 1).max().unwrap_or(1);
        Some(self.psdu(li, ac, mpdus, &plan, sw_tx))
    }

    fn fits(&self, plan: &TxPlan, len: u32, mpdu: u32) -> bool {
        let new_len = ampdu_len_with(len, mpdu);
        new_len <= self.p.max_ampdu_bytes && ppdu_duration_with(&plan.txv, new_len, self.p.band, self.p.airtime) <= self.max_attempt()
    }

    /// Gives a fresh packet its sequence number.
    fn new_mpdu(&mut self, li: usize, ac: usize, pkt: Packet) -> Mpdu {
        let txq = &mut self.links[li].txqs[ac];
        let seq = txq.next_seq;
        txq.next_seq += 1;
        txq.outstanding.insert(seq);
        Mpdu { pkt, seq, len: crate::mac::mpdu_len(pkt.size, self.p.qos), attempts: 0, enq: pkt.enqueued }
    }

    fn psdu(&self, li: usize, ac: usize, mpdus: Vec<Mpdu>, plan: &TxPlan, sw_tx: u32) -> (Psdu, PsduMeta) {
        let aggregated = mpdus.len() > 1;
        let psdu_len = if aggregated { mpdus.iter().fold(0, |l, m| ampdu_len_with(l, m.len)) } else { mpdus[0].len };
        let psdu = Psdu {
            link: self.links[li].id,
            ac,
            mpdus,
            chain: RateChain::single(plan.txv, plan.hw_tries),
            aggregated,
            bar: false,
            psdu_len,
            probe: plan.probe.is_some(),
            hw_deadline: None,
        };
        (psdu, PsduMeta { rate: plan.rate, sw_tx, probe: plan.probe })
    }

    fn deadline_drop_returned(&mut self, now: SimTime, li: usize, ac: usize, m: Mpdu, probe: Option<ProbeTag>) {
        self.stats.returned_deadline_drops += 1;
        self.finish_mpdu(li, ac, &m);
        self.drops.push((m.pkt, DropReason::Deadline));
        self.links[li].ctl.on_deadline_drop(now, probe);
    }

    /// The MPDU leaves the originator (acked or dropped).
    fn finish_mpdu(&mut self, li: usize, ac: usize, m: &Mpdu) {
        self.links[li].txqs[ac].outstanding.remove(&m.seq);
        self.sw_tx.remove(&m.pkt.id);
    }

    /// Tells the receiver to move its window past everything the originator is done with.
    fn release(&mut self, li: usize, ac: usize, out: &mut PathOut<'_>) {
        let id = self.links[li].id;
        let t = &mut self.links[li].txqs[ac];
        let start = t.outstanding.first().copied().unwrap_or(t.next_seq);
        if start > t.released {
            t.released = start;
            out.releases.push((id, ac, start));
        }
    }

    /// The hardware is done with `psdu`: the report to the controller, then each MPDU acknowledged,
    /// dropped, or retransmitted at once.
    fn completed(&mut self, now: SimTime, s: &mut LinuxPath, psdu: Psdu, st: TxStatus<'_>, out: &mut PathOut<'_>) {
        let ac = psdu.ac;
        let li = self.links.iter().position(|l| l.id == psdu.link).expect("own link");
        let meta = self.meta.remove(&psdu.mpdus[0].pkt.id).expect("PSDU from this driver");
        let head = psdu.hw_deadline.map_or(now, |d| d - self.limit_h);
        if !st.success && psdu.hw_deadline.is_some_and(|d| now >= d) {
            self.stats.hw_time_limit_returns += 1;
        }
        let acked = st.received.iter().filter(|&&r| r).count() as u32;
        let report = SwTxReport { rate: meta.rate, tx_time: now.saturating_since(head), mpdus: psdu.mpdus.len() as u32, acked, sw_tx: meta.sw_tx, probe: meta.probe };
        self.links[li].ctl.on_report(now, &report);
        let mut retx: Vec<Mpdu> = Vec::new();
        for (i, m) in psdu.mpdus.iter().enumerate() {
            let mut m = *m;
            m.attempts += st.attempts;
            if st.received[i] {
                self.finish_mpdu(li, ac, &m);
                self.links[li].ctl.on_delivered();
            } else if now.saturating_since(m.enq) > self.limit_q {
                self.deadline_drop_returned(now, li, ac, m, meta.probe);
            } else if self.links[li].ctl.may_retransmit(self.sw_tx.get(&m.pkt.id).copied().unwrap_or(1)) {
                retx.push(m);
            } else {
                self.stats.retry_drops += 1;
                self.finish_mpdu(li, ac, &m);
                self.drops.push((m.pkt, DropReason::RetryLimit));
                self.links[li].ctl.lost(now, Loss::TxFailed, meta.probe);
            }
        }
        if !retx.is_empty() {
            self.retransmit(now, s, (li, ac), retx, meta, out);
        }
        let n = self.in_driver(s, li);
        self.links[li].ctl.on_hw_return(now, n);
        self.release(li, ac, out);
        self.mark_head(s, ac, now, out);
        if self.txq_has_frames(s, li, ac) {
            s.txq_scheduler(ac).activate(now, li);
        }
        // A PSDU held by a release gate may go now.
        s.release_held_for(now, ac);
        self.fill(now, s, out);
    }

    /// Pushes the failed MPDUs straight back to the front of the hardware queue at a re-selected rate;
    /// what the slower rate cannot carry within one attempt waits at the head of the TXQ.
    fn retransmit(&mut self, now: SimTime, s: &mut LinuxPath, (li, ac): (usize, usize), mut retx: Vec<Mpdu>, meta: PsduMeta, out: &mut PathOut<'_>) {
        let plan = self.links[li].ctl.plan_retransmission(meta.rate);
        self.stats.sw_retransmissions += retx.len() as u64;
        let mut len = ampdu_len_with(0, retx[0].len);
        let mut keep = 1;
        while keep < retx.len() && self.fits(&plan, len, retx[keep].len) {
            len = ampdu_len_with(len, retx[keep].len);
            keep += 1;
        }
        if keep < retx.len() {
            self.stats.split_retransmissions += 1;
            let txq = &mut self.links[li].txqs[ac];
            for m in retx.drain(keep..).rev() {
                txq.back.push_front(m);
            }
        }
        let (psdu, mut m) = self.psdu(li, ac, retx, &plan, meta.sw_tx + 1);
        m.probe = meta.probe;
        self.meta.insert(psdu.mpdus[0].pkt.id, m);
        self.push_hw(now, s, li, psdu, true, out);
    }

    /// Changes Limit_q and/or Limit_h from now on (a run-time command): packets queued are judged by
    /// the new Limit_q, and PSDUs that reach the head of a hardware queue from now on by the new Limit_h.
    fn set_limits(&mut self, s: &mut LinuxPath, limit_q: Option<SimDuration>, limit_h: Option<SimDuration>) {
        self.limit_q = limit_q.unwrap_or(self.limit_q);
        self.limit_h = limit_h.unwrap_or(self.limit_h);
        s.set_hw_time_limit(Some(self.limit_h));
    }
}

impl Driver for LawDriver {
    fn add_link(&mut self, s: &LinuxPath, li: usize, id: u32) {
        debug_assert_eq!(li, self.links.len());
        let ctl = LawControl::new(&self.p.law, self.rates.clone()).expect("checked in new");
        let txq = |ac| LawTxq { tin: s.tin(li, ac), look: None, back: VecDeque::new(), next_seq: 0, outstanding: BTreeSet::new(), released: 0 };
        self.links.push(LawLink { id, txqs: (0..s.num_acs()).map(txq).collect(), ctl });
    }

    /// Algorithm 1 at entry (N_driver > Len_max → Cleanup), then the hardware is filled.
    fn on_txq_enqueue(&mut self, now: SimTime, s: &mut LinuxPath, li: usize, ac: usize, out: &mut PathOut<'_>) {
        let n = self.in_driver(s, li);
        self.links[li].ctl.on_enqueue(now, n);
        if self.txq_has_frames(s, li, ac) {
            s.txq_scheduler(ac).activate(now, li);
        }
        self.fill(now, s, out);
    }

    fn schedule(&mut self, now: SimTime, s: &mut LinuxPath, out: &mut PathOut<'_>) {
        self.fill(now, s, out);
    }

    fn complete(&mut self, now: SimTime, s: &mut LinuxPath, psdu: Psdu, st: TxStatus<'_>, out: &mut PathOut<'_>) {
        self.completed(now, s, psdu, st, out);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn stats(&self, now: SimTime, s: &LinuxPath) -> serde_json::Value {
        let rc: Vec<serde_json::Value> = self.links.iter().map(|l| l.ctl.stats_json(now)).collect();
        serde_json::json!({ "type": "law", "driver": self.stats, "fq": s.fq().stats(), "rate_control": rc })
    }

    fn info(&self, _s: &LinuxPath) -> crate::mac::txpath::PathInfo {
        let law = &self.p.law;
        let queues = format!("mac80211 TXQs (FQ, no CoDel, stations round robin) read by Law's driver as one queue (latency limit {} ms), {} PSDUs in hardware over all ACs (time limit {} ms)", law.limit_q_ms, law.hw_psdus, law.limit_h_ms);
        let detail = format!("joint rate + retry control (Stable/Probing/Cleanup), {} rates", self.rates.len());
        let rc = crate::ratectl::RateControlInfo::new("law", detail, self.rates.iter().copied());
        crate::mac::txpath::PathInfo { path: "linux".into(), queues, rate_control: vec![rc; self.links.len()] }
    }

    /// `limit_q_ms` / `limit_h_ms` (checked when the command was resolved).
    fn on_command(&mut self, _now: SimTime, s: &mut LinuxPath, set: &serde_json::Map<String, serde_json::Value>) -> Result<(), (String, String)> {
        let ms = |k: &str| set.get(k).and_then(serde_json::Value::as_f64).and_then(|v| SimDuration::from_secs_f64(v * 1e-3));
        self.set_limits(s, ms("limit_q_ms"), ms("limit_h_ms"));
        Ok(())
    }
}

/// The Linux path settings Law's stages change: one budget of `hw_psdus` PSDUs over all ACs, Limit_h
/// as the hardware time limit, and TXQs without CoDel.
pub fn law_stages(p: &mut crate::mac::txpath::linux::LinuxParams, law: &LawParams) {
    p.hw_shared = Some(law.hw_psdus as usize);
    p.hw_time_limit = Some(law.limit_h());
    p.codel = CODEL_OFF;
}

/// A Linux path (`linux`, the rest of its settings) with Law's stages, as Law's mechanism installs
/// them ([`crate::mech::law::install`]); for tests and tools.
pub fn law_path(driver: LawDriverParams, rates: Vec<TxVector>, mut linux: crate::mac::txpath::linux::LinuxParams, rng: &mut crate::rng::Rng) -> Result<LinuxPath, String> {
    let law = driver.law.clone();
    let driver = LawDriver::new(driver, rates)?;
    law_stages(&mut linux, &law);
    let mut path = LinuxPath::new(linux, rng);
    path.set_txq_scheduler(&|_| Box::new(crate::mac::txpath::airtime::AirtimeScheduler::new(0, false)));
    path.set_driver(Box::new(driver));
    Ok(path)
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
