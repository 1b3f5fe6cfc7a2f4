//! The Linux AP transmit path (`wifi-model.md` §5.1): mac80211 TXQs (one per station × AC) over one
//! shared FQ table with per-flow CoDel, the airtime-fairness scheduler, and an ath9k-style driver with
//! a software retry queue per TXQ and depth-limited hardware queues per AC.
//!
//! ```text
//! enqueue → mac80211 txq (FQ-CoDel tin)   ── t_txq_enq
//!   wake_tx_queue / every TX completion → driver schedule(ac): while the hardware queue has room
//!     txq = AFS next_txq(ac); form one PSDU: software retries first, then FQ-CoDel dequeues
//!     (A-MPDU caps: 32 subframes = half the BlockAck window, 65 535 B, ≤ min(TXOP, 4 ms) at the
//!     slowest chain rate, inside the window; VO never aggregated)   ── t_txq_deq, t_hw_enq
//!   → hardware queue per AC (2 A-MPDUs or 8 single frames)  → medium (EDCA, MRR)  ── t_hw_head
//! TX status → missing subframes back to the software retry queue until 30 hardware attempts, then
//!   dropped (the receiver's window moves as ath9k's BlockAckReq moves it: to the oldest subframe still
//!   outstanding, and past the dropped ones as older ones complete) — also when the MPDU went out alone, as ath9k
//!   retries every frame of a BlockAck session (`bf_isampdu`, not `bf_isaggr`); a frame outside one
//!   (VO, or A-MPDU off) is not retried in software;
//!   airtime (duration × attempts) charged to the station's deficit.
//! ```
//! The hardware signals a completion at once; the driver handles it (TX status, the freed slot, the
//! next scheduling round) `t_irq` later (0 by default), while the hardware goes on with its queue.
//! The hardware queues (depth per AC or one budget over all ACs, head, the optional per-PSDU time limit
//! `hw_time_limit`, completion) are in `hwq.rs`; the stages a mechanism installs (release gate, driver
//! policy, a driver of its own in place of ath9k's, the TXQ scheduler) are wired in `stages.rs`; the
//! interface's qdiscs above mac80211 (a `tbf` shaper, an AQM qdisc) and the hand-off into the TXQs are
//! in `qdisc.rs`; the settings in `params.rs`. The ath9k driver is this file's: with a mechanism's
//! driver installed ([`super::driver::Driver`], Law's), the path hands it each scheduling round and
//! completion, and it works on the same TXQs, schedulers, gate and hardware queues.
//!
//! Approximations: TID = AC (one TXQ per station and AC); AQL is not applied (ath9k does not enable
//! it); the qdisc is `noqueue` unless configured.
//!
//! The rate controller sees the queues through [`RateControl::on_queue_state`] before each PSDU
//! (the TXQ's backlog and head sojourn, and the channel-access delay of the link's last PSDU: from the
//! head of its hardware queue to its first attempt) and may limit the A-MPDU length and the software
//! retries through [`RateControl::tx_limits`] (LLRA does; the others keep the defaults).

use super::airtime::AirtimeScheduler;
use super::driver::{Driver, DriverPolicy, DriverView};
use super::scheduler::TxqScheduler;
use super::gate::{HeldPsdus, ReleaseGate};
use super::{Mpdu, PathOut, Psdu, RateChain, TxStatus};
use crate::mac::edca::AccessCategory;
use crate::packet::Packet;
use crate::phy::airtime::ppdu_duration_with;
use crate::phy::ampdu_len::ampdu_len_with;
use crate::phy::mcs::TxVector;
use crate::queue::AnyQueue;
use crate::ratectl::{AnyRateControl, QueueState, RateControl};
use crate::queue::fq::{Fq, FlowId, TinId};
use crate::rng::Rng;
use crate::stats::{DropReason, Stage};
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

mod hwq;
mod params;
mod qdisc;
mod stages;

pub use params::{AqlParams, HwQueueSetup, LinuxParams};

impl Txq {
    /// As ath9k's BlockAckReq after a drop: where the receiver's window moves now, if it must. It
    /// moves to the oldest sequence number still outstanding (in hardware or waiting for a retry),
    /// never past one, and on as those complete, until it is past every dropped one.
    fn window_move(&mut self) -> Option<u64> {
        if self.released >= self.dropped_upto {
            return None;
        }
        let start = self.in_hw.iter().copied().chain(self.retry.iter().map(|m| m.seq)).min().unwrap_or(self.next_seq);
        (start > self.released).then(|| {
            self.released = start;
            start
        })
    }
}

#[derive(Debug)]
struct Txq {
    tin: TinId,
    retry: VecDeque<Mpdu>,
    next_seq: u64,
    /// Sequence numbers handed to the hardware and not yet completed.
    in_hw: Vec<u64>,
    /// AQL: estimated airtime (µs) of this TXQ's frames in the driver and hardware.
    pending_us: u64,
    /// The receiver was told to move its window to here (ath9k's BlockAckReq after a drop) ...
    released: u64,
    /// ... and must move it at least past here: one above the highest sequence number dropped.
    dropped_upto: u64,
}

#[derive(Debug)]
struct LinuxLink {
    id: u32,
    /// The fixed chain, used when there is no adaptive controller.
    chain: RateChain,
    rc: Option<AnyRateControl>,
    txqs: Vec<Txq>,
    /// Channel-access delay of this link's last PSDU, not yet given to the controller.
    access_sample: Option<SimDuration>,
}

/// Counters of the path.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct LinuxStats {
    pub psdus: u64,
    pub sw_retries: u64,
    pub sw_retry_drops: u64,
    /// Frames outside a BlockAck session (VO, or A-MPDU off) lost after their rate chain.
    pub single_frame_drops: u64,
    /// Failed subframes dropped by the controller's software-retry deadline (LLRA).
    pub retry_deadline_drops: u64,
    /// PSDUs whose exchange succeeded (ACK or BlockAck), and the sum of their per-frame delays t_k
    /// (from reaching the head of their hardware queue to completion: QAir's Delay Monitor's quantity,
    /// spec `qair-lastpq.md` §3.1, here as the hardware sees it).
    pub delivered_psdus: u64,
    pub per_frame_delay_ns: u64,
}

impl LinuxStats {
    /// What the driver does with an unacknowledged subframe that has had `attempts` hardware attempts,
    /// counting it: drop it (the reason) or retry it in software (`None`). Without a BlockAck session
    /// the driver retries no single frame: a failed one is dropped (`single_frame_drops`), as
    /// `deadline` if the hardware's time limit returned it (`timed_out`). In a session the subframe is retried
    /// until `sw_retry_limit` attempts or, with `late`, past the rate controller's sojourn limit.
    fn unacked_fate(&mut self, attempts: u32, sw_retry_limit: u32, ba_session: bool, timed_out: bool, late: bool) -> Option<DropReason> {
        if !ba_session {
            self.single_frame_drops += 1;
            Some(if timed_out { DropReason::Deadline } else { DropReason::RetryLimit })
        } else if attempts >= sw_retry_limit {
            self.sw_retry_drops += 1;
            Some(DropReason::RetryLimit)
        } else if late {
            self.retry_deadline_drops += 1;
            Some(DropReason::Deadline)
        } else {
            self.sw_retries += 1;
            None
        }
    }
}

#[derive(Debug)]
pub struct LinuxPath {
    p: LinuxParams,
    fq: Fq,
    links: Vec<LinuxLink>,
    /// Per AC, the TXQ scheduler (mac80211's airtime fairness unless a mechanism replaced it).
    afs: Vec<Box<dyn TxqScheduler>>,
    /// Per AC: PSDUs waiting in the hardware queue, and how many (waiting + in the air) there are as
    /// ath9k counts them: (`axq_ampdu_depth`: non-probe PSDUs of a BlockAck session, one subframe or
    /// many; `axq_depth`: all).
    hwq: Vec<VecDeque<Psdu>>,
    hw_count: Vec<(usize, usize)>,
    stats: LinuxStats,
    drops: Vec<crate::queue::Dropped>,
    /// The qdisc on the wireless interface (`None` = noqueue); under the shaper when there is one.
    qdisc: Option<AnyQueue>,
    /// The shaper (Linux `tbf` as the root qdisc), the (link, AC) of each packet it holds, and when its
    /// head packet can leave.
    tbf: Option<crate::queue::tbf::Tbf>,
    tbf_of: std::collections::BTreeMap<u64, (usize, usize)>,
    tbf_wakeup: Option<SimTime>,
    /// The release gate between the driver and the hardware queues (`None`: open).
    gate: Option<Box<dyn ReleaseGate>>,
    /// When the gate opens again after refusing.
    gate_wakeup: Option<SimTime>,
    /// Formed PSDUs waiting for a gate that holds at the PSDU (counted in `hw_count`).
    held: HeldPsdus,
    /// Completions the hardware signalled that the driver has not handled yet (t_irq > 0).
    irq: VecDeque<stages::Irq>,
    /// Inside [`Self::on_wakeup`].
    waking: bool,
    /// AQL: estimated airtime pending over the whole interface, µs.
    aql_total_us: u64,
    /// Per AC: the medium holds its head PSDU (between `head` and `complete`), and since when the
    /// current head has been the head.
    in_air: Vec<bool>,
    head_since: Vec<SimTime>,
    /// Per AC: the hardware time limit in force when the head PSDU became the head (a run-time command
    /// changes it for the PSDUs that reach the head afterwards).
    head_limit: Vec<Option<SimDuration>>,
    /// The driver policy a mechanism installed (`None`: ath9k as is), and the dedicated FQ flow of
    /// each (scenario flow, TXQ, AC) it asked for.
    policy: Option<Box<dyn DriverPolicy>>,
    dedicated: std::collections::BTreeMap<(u32, usize, usize), FlowId>,
    /// The driver a mechanism put in place of ath9k's (`None`: ath9k's, the methods of this type).
    driver: Option<Box<dyn Driver>>,
    /// The time of the path's last enqueue, head or completion (a driver's counters are read at it).
    last_now: SimTime,
}

/// The driver's queues as its policy sees them.
struct View<'a> {
    fq: &'a Fq,
    dedicated: &'a std::collections::BTreeMap<(u32, usize, usize), FlowId>,
    afs: &'a [Box<dyn TxqScheduler>],
    links: &'a [LinuxLink],
    gate_hold: SimDuration,
}

impl DriverView for View<'_> {
    fn flow_head(&self, flow: u32, txq: usize, ac: usize) -> Option<super::driver::FlowHead> {
        self.dedicated.get(&(flow, txq, ac)).map(|&f| self.fq.flow_head(f))
    }
    fn flow_retry_head(&self, flow: u32, txq: usize, ac: usize) -> Option<SimTime> {
        let retry = &self.links.get(txq)?.txqs.get(ac)?.retry;
        retry.iter().filter(|m| m.pkt.flow == flow).map(|m| m.pkt.enqueued).min()
    }
    fn txq_deficit(&self, txq: usize, ac: usize) -> i64 {
        self.afs[ac].deficit(txq)
    }
    fn gate_hold(&self) -> SimDuration {
        self.gate_hold
    }
}

impl LinuxPath {
    pub fn new(p: LinuxParams, rng: &mut Rng) -> Self {
        let nq = if p.qos { 4 } else { 1 };
        LinuxPath {
            fq: Fq::new(p.fq, rng),
            afs: (0..nq).map(|_| afs(&p)).collect(),
            hwq: (0..nq).map(|_| VecDeque::new()).collect(),
            hw_count: vec![(0, 0); nq],
            links: Vec::new(),
            stats: LinuxStats::default(),
            drops: Vec::new(),
            qdisc: None,
            tbf: p.tbf.as_ref().map(crate::queue::tbf::Tbf::new),
            tbf_of: Default::default(),
            tbf_wakeup: None,
            gate: None,
            gate_wakeup: None,
            held: HeldPsdus::default(),
            irq: VecDeque::new(),
            waking: false,
            aql_total_us: 0,
            in_air: vec![false; nq],
            head_since: vec![SimTime::ZERO; nq],
            head_limit: vec![None; nq],
            policy: None,
            dedicated: Default::default(),
            driver: None,
            last_now: SimTime::ZERO,
            p,
        }
    }

    /// Puts a qdisc on the wireless interface. mac80211 never stops the netdev queue of a TXQ driver,
    /// so each packet passes straight through it into mac80211 (which is why Linux defaults to
    /// `noqueue` here); its AQM still sees every packet.
    pub fn set_qdisc(&mut self, q: AnyQueue) {
        self.qdisc = Some(q);
    }

    /// Replaces the TXQ scheduler of every AC (`make(ac)`), covering the links added so far.
    pub fn set_txq_scheduler(&mut self, make: &dyn Fn(usize) -> Box<dyn TxqScheduler>) {
        let n = self.links.len();
        for (ac, a) in self.afs.iter_mut().enumerate() {
            *a = make(ac);
            a.resize(n);
        }
    }

    /// Number of station links.
    pub fn num_links(&self) -> usize {
        self.links.len()
    }

    /// Sets a station's airtime weight (µs; default 256).
    pub fn set_weight(&mut self, link: usize, weight_us: i64) {
        for a in self.afs.iter_mut() {
            a.set_weight(link, weight_us);
        }
    }

    /// Adds a station link (medium link `id`) sent with a fixed rate, or by `rc` when given.
    pub fn add_link(&mut self, id: u32, txv: TxVector, rc: Option<AnyRateControl>) {
        let nq = self.hwq.len();
        let txqs = (0..nq).map(|_| Txq { tin: self.fq.add_tin(self.p.codel), retry: VecDeque::new(), next_seq: 0, in_hw: Vec::new(), pending_us: 0, released: 0, dropped_upto: 0 }).collect();
        self.links.push(LinuxLink { id, chain: RateChain::single(txv, self.p.fixed_tries), rc, txqs, access_sample: None });
        let n = self.links.len();
        for a in self.afs.iter_mut() {
            a.resize(n);
        }
        if let Some(mut d) = self.driver.take() {
            d.add_link(self, n - 1, id);
            self.driver = Some(d);
        }
    }

    fn aggregate(&self, ac: usize) -> bool {
        self.p.ampdu && !(self.p.qos && ac == AccessCategory::Vo as usize)
    }

    fn txq_has_frames(&self, li: usize, ac: usize) -> bool {
        let t = &self.links[li].txqs[ac];
        !t.retry.is_empty() || !self.fq.tin_is_empty(t.tin)
    }

    fn flush_drops(&mut self, now: SimTime, out: &mut PathOut<'_>) {
        let from = out.dropped.len();
        out.dropped.append(&mut self.drops);
        self.policy_sees_drops(now, &out.dropped[from..]);
    }

    /// The driver policy hears of its dedicated flows' packets among `dropped`.
    fn policy_sees_drops(&mut self, now: SimTime, dropped: &[crate::queue::Dropped]) {
        let Some(policy) = self.policy.as_mut() else { return };
        for (pkt, _) in dropped {
            if policy.dedicated(pkt.flow) {
                policy.on_dropped(now, pkt);
            }
        }
    }

    /// AQL's airtime estimate of one MPDU at the chain's first rate, µs (0 without AQL). mac80211
    /// divides the per-PPDU overhead by an assumed aggregation; here the MPDU's data-symbol time alone
    /// stands for that (approximation).
    fn aql_estimate_us(&self, chain: &RateChain, len: u32) -> u64 {
        if self.p.aql.is_none() {
            return 0;
        }
        chain.get(0).map_or(0, |(txv, _)| (len as u64 * 8 * 1_000_000).div_ceil(txv.data_rate().bps()).clamp(4, 4092))
    }

    pub fn pending(&self, ac: usize) -> bool {
        !self.hwq[ac].is_empty()
    }

    /// The driver's scheduling round for one AC (`ath_txq_schedule`): while the hardware queue has
    /// room, the policy's priority TXQ or the scheduler's next one forms a PSDU.
    fn schedule(&mut self, now: SimTime, ac: usize, out: &mut PathOut<'_>) {
        let mut refused = None;
        while self.hw_has_room(ac) {
            let prio = self.priority_txq(now, ac).filter(|&li| refused != Some(li));
            if prio.is_none() && self.afs[ac].is_empty() || !self.may_form(now) {
                break;
            }
            if let Some(li) = prio {
                // Served ahead of the scheduler; the TXQ keeps its place in the scheduler's lists.
                match self.form(now, li, ac, true, out) {
                    Some(psdu) => self.hand_to_hw(now, li, ac, psdu, true),
                    None => refused = Some(li),
                }
                continue;
            }
            let Some(li) = self.afs[ac].next_txq(now) else { break };
            match self.form(now, li, ac, false, out) {
                Some(psdu) => {
                    self.hand_to_hw(now, li, ac, psdu, false);
                    let more = self.txq_has_frames(li, ac);
                    self.afs[ac].return_txq(li, more);
                }
                // Nothing sendable (BlockAck window full, or CoDel dropped what was queued): the TXQ
                // is re-activated when one of its PSDUs completes or a packet arrives.
                None => self.afs[ac].return_txq(li, false),
            }
        }
    }

    /// Forms one PSDU from TXQ (`li`, `ac`): software retries first, then FQ-CoDel (on the priority
    /// path: the policy's dedicated flows first).
    fn form(&mut self, now: SimTime, li: usize, ac: usize, priority: bool, out: &mut PathOut<'_>) -> Option<Psdu> {
        // ath9k looks up rates only for a TID that has a frame (`ath_tx_get_tid_subframe` first): a
        // TXQ left listed while empty (served on the priority path, or emptied by FQ's overlimit cuts)
        // must not make the rate controller draw a rate.
        if !self.txq_has_frames(li, ac) {
            return None;
        }
        let (chain, probe, cap) = self.rate_chain(now, li, ac);
        let air_cap = if priority { None } else { self.policy.as_ref().and_then(|p| p.aggregation_cap(now, li, ac)) };
        // A rate-control probe is sent alone (ath9k never aggregates a probe).
        let aggregate = self.aggregate(ac) && !probe;
        let slowest = (0..4).filter_map(|i| chain.get(i)).map(|(t, _)| t).min_by_key(|t| t.data_rate().bps())?;
        let max_n = if aggregate { self.p.max_subframes.min(cap.unwrap_or(u32::MAX).max(1)) } else { 1 };
        let mut mpdus: Vec<Mpdu> = Vec::new();
        let mut len = 0u32;
        loop {
            if mpdus.len() as u32 >= max_n {
                break;
            }
            let Some(next) = self.peek_mpdu(now, li, ac, priority, out) else { break };
            let new_len = if aggregate { ampdu_len_with(len, next.len) } else { next.len };
            if !mpdus.is_empty() && self.too_long(&chain, &slowest, new_len, air_cap) {
                break;
            }
            let est = self.aql_estimate_us(&chain, next.len);
            self.aql_total_us += est;
            let txq = &mut self.links[li].txqs[ac];
            txq.pending_us += est;
            let m = txq.retry.pop_front().expect("peeked");
            txq.in_hw.push(m.seq);
            out.log.stamp(m.pkt.id, Stage::HwEnq, now);
            mpdus.push(m);
            len = new_len;
        }
        self.flush_drops(now, out);
        if mpdus.is_empty() {
            return None;
        }
        let aggregated = aggregate && mpdus.len() > 1;
        let psdu_len = if aggregated { len } else { mpdus[0].len };
        Some(Psdu { link: self.links[li].id, ac, mpdus, chain, aggregated, bar: false, psdu_len, probe, hw_deadline: None })
    }

    /// Whether an A-MPDU of `len` bytes breaks ath9k's limits (65 535 B; min(TXOP, 4 ms) at the slowest
    /// rate of `chain`) or the policy's airtime cap.
    fn too_long(&self, chain: &RateChain, slowest: &TxVector, len: u32, air_cap: Option<SimDuration>) -> bool {
        len > self.p.max_ampdu_bytes
            || ppdu_duration_with(slowest, len, self.p.band, self.p.airtime) > self.p.max_aggr_duration
            || air_cap.is_some_and(|c| data_airtime(chain, len) > c)
    }

    /// The rate chain for TXQ (`li`, `ac`)'s next PSDU: from its rate controller (told the queue state
    /// first) or the link's fixed chain; whether it is a probe; the controller's cap on MPDUs.
    fn rate_chain(&mut self, now: SimTime, li: usize, ac: usize) -> (RateChain, bool, Option<u32>) {
        let qs = self.links[li].rc.is_some().then(|| self.queue_state(now, li, ac));
        let link = &mut self.links[li];
        match &mut link.rc {
            Some(rc) => {
                let qs = QueueState { access_delay: link.access_sample.take(), ..qs.expect("computed with rc") };
                rc.on_queue_state(now, &qs);
                let rs = rc.rate_set(now, 1538);
                let mut chain = RateChain { series: [None; 4] };
                for (i, e) in rs.entries.iter().enumerate() {
                    chain.series[i] = e.map(|e| (e.txv, e.tries.max(1)));
                }
                (chain, rs.probe, rc.tx_limits().max_mpdus)
            }
            None => (link.chain, false, None),
        }
    }

    /// The next MPDU of TXQ (`li`, `ac`), left at the front of its retry queue: a software retry, or
    /// a packet dequeued from FQ-CoDel now; `None` when the BlockAck window is full, AQL holds the
    /// station back, or nothing is queued.
    fn peek_mpdu(&mut self, now: SimTime, li: usize, ac: usize, priority: bool, out: &mut PathOut<'_>) -> Option<Mpdu> {
        let txq = &mut self.links[li].txqs[ac];
        if let Some(m) = txq.retry.front() {
            return Some(*m);
        }
        let baw_start = txq.in_hw.iter().copied().min().unwrap_or(txq.next_seq);
        if txq.next_seq >= baw_start + self.p.baw {
            return None; // the BlockAck window is full
        }
        if let Some(a) = self.p.aql {
            if !(txq.pending_us < a.low_us || (self.aql_total_us < a.threshold_us && txq.pending_us < a.high_us)) {
                return None; // AQL: this station has enough airtime queued below mac80211
            }
        }
        let tin = txq.tin;
        let pkt = self.dequeue(now, li, ac, tin, priority)?;
        out.log.stamp(pkt.id, Stage::TxqDeq, now);
        let txq = &mut self.links[li].txqs[ac];
        let m = Mpdu { pkt, seq: txq.next_seq, len: crate::mac::mpdu_len(pkt.size, self.p.qos), attempts: 0, enq: now };
        txq.next_seq += 1;
        txq.retry.push_front(m);
        Some(m)
    }

    /// The next packet of TXQ (`li`, `ac`) from FQ-CoDel; on the priority path, from the dedicated flow
    /// the policy names first.
    fn dequeue(&mut self, now: SimTime, li: usize, ac: usize, tin: TinId, priority: bool) -> Option<Packet> {
        let Some(policy) = self.policy.as_mut() else { return self.fq.dequeue(now, tin, &mut self.drops) };
        let flow = priority.then(|| policy.priority_flow(now, li, ac, &View { fq: &self.fq, dedicated: &self.dedicated, afs: &self.afs, links: &self.links, gate_hold: SimDuration::ZERO })).flatten();
        let from_flow = flow.and_then(|fl| self.dedicated.get(&(fl, li, ac))).and_then(|&f| self.fq.dequeue_dedicated(now, tin, f, &mut self.drops));
        let (pkt, on_priority) = match from_flow {
            Some(p) => (p, true),
            None => (self.fq.dequeue(now, tin, &mut self.drops)?, false),
        };
        if policy.dedicated(pkt.flow) {
            policy.on_dequeue(now, &pkt, on_priority);
        }
        Some(pkt)
    }

    /// The TXQ (`li`, `ac`) as the rate controller sees it (without an access-delay sample).
    fn queue_state(&self, now: SimTime, li: usize, ac: usize) -> QueueState {
        let t = &self.links[li].txqs[ac];
        let oldest = t.retry.iter().map(|m| m.pkt.enqueued).chain(self.fq.tin_oldest_enqueued(t.tin)).min();
        QueueState {
            backlog_packets: self.fq.tin_backlog_packets(t.tin) + t.retry.len() as u32,
            backlog_bytes: self.fq.tin_backlog_bytes(t.tin) + t.retry.iter().map(|m| m.pkt.size as u64).sum::<u64>(),
            head_sojourn: oldest.map_or(SimDuration::ZERO, |o| now.saturating_since(o)),
            access_delay: None,
        }
    }

    /// The hardware is done with `psdu`: the driver handles it now, or t_irq later ([`Self::on_wakeup`]).
    pub fn complete(&mut self, now: SimTime, psdu: Psdu, st: TxStatus<'_>, out: &mut PathOut<'_>) {
        self.last_now = now;
        let ev = self.left_hardware(now, &psdu, &st);
        let timed_out = hwq::returned_at_time_limit(now, &psdu, &st);
        if self.p.t_irq > SimDuration::ZERO {
            let (received, success, attempts) = (st.received.to_vec(), st.success, st.attempts);
            self.irq.push_back(stages::Irq { due: now + self.p.t_irq, psdu, received, success, attempts, timed_out, ev });
            return;
        }
        self.tx_event(now, ev);
        self.driver_complete(now, psdu, st, timed_out, out);
    }

    /// The driver's completion handling (`ath_tx_complete_aggr`): TX status to the rate controller,
    /// airtime to the scheduler, subframes done, retried or dropped, and the AC's next scheduling round.
    fn driver_complete(&mut self, now: SimTime, psdu: Psdu, st: TxStatus<'_>, timed_out: bool, out: &mut PathOut<'_>) {
        let ac = psdu.ac;
        let li = self.links.iter().position(|l| l.id == psdu.link).expect("own link");
        let ampdu = self.counts_as_ampdu(&psdu) as usize;
        let c = &mut self.hw_count[ac];
        c.0 -= ampdu;
        c.1 -= 1;
        if let Some(mut d) = self.driver.take() {
            d.complete(now, self, psdu, st, out);
            self.driver = Some(d);
            return;
        }
        // Airtime charged to the station: the PSDU's duration times the attempts made.
        let (txv, _) = psdu.chain.get(0).expect("chain");
        let d = ppdu_duration_with(&txv, psdu.psdu_len, self.p.band, self.p.airtime);
        self.afs[ac].charge(li, d.as_ns() / 1000 * st.attempts as u64);
        self.report_status(now, li, &psdu, &st);
        let retry_limit = self.links[li].rc.as_ref().and_then(|rc| rc.tx_limits().retry_sojourn_limit);
        let ba_session = self.aggregate(ac);
        let est: u64 = psdu.mpdus.iter().map(|m| self.aql_estimate_us(&psdu.chain, m.len)).sum();
        self.aql_total_us -= est;
        let txq = &mut self.links[li].txqs[ac];
        txq.pending_us -= est;
        let mut back = Vec::new();
        let first_drop = out.dropped.len();
        for (i, m) in psdu.mpdus.iter().enumerate() {
            txq.in_hw.retain(|&s| s != m.seq);
            if st.received[i] {
                if let Some(p) = self.policy.as_mut().filter(|p| p.dedicated(m.pkt.flow)) {
                    p.on_acked(now, &m.pkt);
                }
                continue;
            }
            let mut m = *m;
            m.attempts += st.attempts;
            let late = retry_limit.is_some_and(|l| now.saturating_since(m.pkt.enqueued) >= l);
            match self.stats.unacked_fate(m.attempts, self.p.sw_retry_limit, ba_session, timed_out, late) {
                Some(reason) => {
                    out.dropped.push((m.pkt, reason));
                    txq.dropped_upto = txq.dropped_upto.max(m.seq + 1);
                }
                None => back.push(m),
            }
        }
        // Retried subframes go back to the head of the retry queue, in sequence order.
        for m in back.into_iter().rev() {
            txq.retry.push_front(m);
        }
        if let Some(start) = txq.window_move() {
            out.releases.push((psdu.link, ac, start));
        }
        self.policy_sees_drops(now, &out.dropped[first_drop..]);
        if self.txq_has_frames(li, ac) {
            self.afs[ac].activate(now, li);
        }
        // A held PSDU may go now (the completion may have raised the gate's rate).
        self.release_held_for(now, ac);
        self.schedule(now, ac, out);
    }

    /// The driver's counters (ath9k's, or those of the driver a mechanism installed), and those of the
    /// other stages that are there: release gate, shaper, driver policy.
    pub fn stats(&self) -> serde_json::Value {
        let mut v = match &self.driver {
            Some(d) => d.stats(self.last_now, self),
            None => {
                let airtime: Vec<Vec<u64>> = self.afs.iter().map(|a| a.charged_us().to_vec()).collect();
                let rc: Vec<serde_json::Value> = self.links.iter().map(|l| l.rc.as_ref().map(|r| r.stats()).unwrap_or(serde_json::Value::Null)).collect();
                serde_json::json!({ "type": "linux", "driver": self.stats, "fq": self.fq.stats(), "airtime_charged_us": airtime, "rate_control": rc })
            }
        };
        if let Some(g) = &self.gate {
            v["release_gate"] = g.stats();
        }
        if let Some(t) = &self.tbf {
            v["tbf"] = serde_json::json!(t.stats());
        }
        if let Some(p) = &self.policy {
            v["driver_policy"] = p.stats();
        }
        v
    }
}

impl super::TransmitPath for LinuxPath {
    fn add_link(&mut self, l: super::LinkSetup) {
        LinuxPath::add_link(self, l.id, l.txv, l.rc);
    }
    fn enqueue(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>) {
        LinuxPath::enqueue(self, now, link, ac, pkt, out);
    }
    fn pending(&self, ac: usize) -> bool {
        LinuxPath::pending(self, ac)
    }
    fn head(&mut self, now: SimTime, ac: usize, budget: Option<SimDuration>, out: &mut PathOut<'_>) -> Option<Psdu> {
        LinuxPath::head(self, now, ac, budget, out)
    }
    fn complete(&mut self, now: SimTime, psdu: Psdu, st: TxStatus<'_>, out: &mut PathOut<'_>) {
        LinuxPath::complete(self, now, psdu, st, out);
    }
    fn stats(&self) -> serde_json::Value {
        LinuxPath::stats(self)
    }
    fn info(&self) -> super::PathInfo {
        if let Some(d) = &self.driver {
            return d.info(self);
        }
        let p = &self.p;
        let mut queues = format!(
            "mac80211 TXQs, fq_codel {}/{} ms{}{}, hw queue {} A-MPDUs / {} frames",
            p.codel.target_us as f64 / 1e3,
            p.codel.interval_us as f64 / 1e3,
            match (p.airtime_fairness, p.afs_variant) {
                (false, _) => "",
                (true, crate::mac::wifi_config::AfsVariant::Mac80211) => ", airtime fairness",
                (true, crate::mac::wifi_config::AfsVariant::Ath9kDrrPlus) => ", airtime fairness (ath9k DRR++)",
            },
            if p.aql.is_some() { ", AQL" } else { "" },
            p.hw_depth_aggr,
            p.hw_depth_single
        );
        if let Some(q) = &self.qdisc {
            queues = format!("qdisc {} over {queues}", q.kind());
        }
        if let Some(t) = &p.tbf {
            queues = format!("tbf {} Mbit/s over {queues}", t.rate_mbps);
        }
        let rate_control = self
            .links
            .iter()
            .map(|l| match &l.rc {
                Some(rc) => crate::ratectl::RateControl::info(rc),
                None => {
                    let chain: Vec<_> = (0..crate::ratectl::MAX_CHAIN).map_while(|i| l.chain.get(i)).collect();
                    let detail: Vec<String> = chain.iter().map(|(t, n)| format!("{} ×{n}", crate::ratectl::rate_name(t))).collect();
                    crate::ratectl::RateControlInfo::new("fixed", detail.join(", "), chain.iter().map(|c| c.0))
                }
            })
            .collect();
        super::PathInfo { path: "linux".into(), queues, rate_control }
    }
    /// ath9k's driver takes a rate controller; a mechanism's driver brings its own rate decisions.
    fn takes_rate_control(&self) -> bool {
        self.driver.is_none()
    }
    fn set_airtime_weight(&mut self, link: usize, weight_us: i64) {
        self.set_weight(link, weight_us);
    }
    fn set_release_gate(&mut self, gate: Box<dyn ReleaseGate>) -> Result<(), Box<dyn ReleaseGate>> {
        LinuxPath::set_release_gate(self, gate);
        Ok(())
    }
    fn set_txq_scheduler(&mut self, make: &dyn Fn(usize) -> Box<dyn TxqScheduler>) -> bool {
        LinuxPath::set_txq_scheduler(self, make);
        true
    }
    /// A policy hooks into ath9k's driver: refused when a mechanism's driver replaced it.
    fn set_driver_policy(&mut self, policy: Box<dyn DriverPolicy>) -> Result<(), Box<dyn DriverPolicy>> {
        if self.driver.is_some() {
            return Err(policy);
        }
        LinuxPath::set_driver_policy(self, policy);
        Ok(())
    }
    fn set_driver(&mut self, driver: Box<dyn Driver>) -> Result<(), Box<dyn Driver>> {
        if self.policy.is_some() || !self.links.is_empty() {
            return Err(driver);
        }
        LinuxPath::set_driver(self, driver);
        Ok(())
    }
    /// `time_limit_us` (`aps.<ap>.hw`, resolved beforehand): the hardware time limit of the PSDUs that
    /// reach the head of a hardware queue from now on; any other key goes to the driver policy.
    fn on_command(&mut self, now: SimTime, set: &serde_json::Map<String, serde_json::Value>) -> Result<(), (String, String)> {
        if let Some(mut d) = self.driver.take() {
            let r = d.on_command(now, self, set);
            self.driver = Some(d);
            return r;
        }
        if let Some(us) = set.get("time_limit_us").and_then(serde_json::Value::as_f64) {
            self.p.hw_time_limit = Some(SimDuration::from_ns((us * 1e3).round() as u64));
            return Ok(());
        }
        match &mut self.policy {
            Some(p) => p.on_command(now, set),
            None => set.keys().next().map_or(Ok(()), |k| Err((k.clone(), "this transmit path takes no run-time commands".into()))),
        }
    }
    fn has_timers(&self) -> bool {
        self.has_gate() || self.p.t_irq > SimDuration::ZERO || self.tbf.is_some()
    }
    fn hw_deadline(&self, ac: usize) -> Option<SimTime> {
        if self.hwq[ac].is_empty() || self.in_air[ac] {
            return None;
        }
        self.head_deadline(ac)
    }
    fn shares_hardware(&self) -> bool {
        self.p.hw_time_limit.is_some() || self.p.hw_shared.is_some()
    }
    /// The head PSDU leaves its hardware queue unsent: no attempt started, so no `AttemptStart` event
    /// and no `hw_head` stamp (its completion comes as usual).
    fn expire_head(&mut self, now: SimTime, ac: usize, _out: &mut PathOut<'_>) -> Option<Psdu> {
        let deadline = self.head_deadline(ac)?;
        let mut psdu = self.hwq[ac].pop_front()?;
        self.last_now = now;
        psdu.hw_deadline = Some(deadline);
        self.in_air[ac] = true;
        Some(psdu)
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        LinuxPath::next_wakeup(self)
    }
    fn on_wakeup(&mut self, now: SimTime, out: &mut PathOut<'_>) {
        LinuxPath::on_wakeup(self, now, out);
    }
}

/// The configured TXQ scheduler of one AC, over no station yet.
fn afs(p: &LinuxParams) -> Box<dyn TxqScheduler> {
    match p.afs_variant {
        crate::mac::wifi_config::AfsVariant::Mac80211 => Box::new(AirtimeScheduler::new(0, p.airtime_fairness)),
        crate::mac::wifi_config::AfsVariant::Ath9kDrrPlus => Box::new(super::ath9k_airtime::Ath9kAirtimeScheduler::new(0, p.airtime_fairness)),
    }
}

/// 8·`len` / rate at the first series of `chain` (the data airtime a PSDU's length stands for).
fn data_airtime(chain: &RateChain, len: u32) -> SimDuration {
    chain.get(0).map_or(SimDuration::ZERO, |(txv, _)| SimDuration::from_ns((len as u64 * 8_000_000_000).div_ceil(txv.data_rate().bps())))
}

#[cfg(test)]
mod tests;
