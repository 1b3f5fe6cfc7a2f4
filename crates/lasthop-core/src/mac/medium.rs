//! One collision domain: every node's EDCAFs, the shared medium, frame exchanges, collisions, retries,
//! BlockAck windows and receiver reordering.
//!
//! Source: `wifi-model.md` §3 (channel access, collisions, ACK timeout), §2.3 (A-MPDU), §4.3 (per-MPDU
//! errors), §3.1 step 8 and §9 item 5 (retry limits: per-MPDU attempt limit without BlockAck, lifetime
//! under BlockAck, as in ns-3 ≥ 3.44).
//!
//! Event flow of one channel access:
//! ```text
//! Access(t) ── earliest backoff end over all nodes; equal ends in the same ns collide
//!   │ freeze every other EDCAF; form the PSDU(s); medium busy
//!   ▼
//! PpduEnd(t + max airtime)
//!   ├─ one PPDU, ≥ 1 MPDU received → deliver (through the receiver's reorder buffer),
//!   │     response SIFS later → ExchangeEnd(ack end): success, CW reset, TXOP may continue
//!   ├─ one PPDU, nothing received → transmitter: ExchangeEnd(end + ACK timeout), failure;
//!   │     others honour the NAV to the expected response's end
//!   └─ collision → every transmitter fails after its ACK timeout; others resume after the last
//!         PPDU ends (AIFS, or EIFS with `collision_ifs = "eifs"`)
//! ```
//! Control responses (ACK, BlockAck) are not subject to errors (approximation, see FIDELITY.md).

use super::ampdu::{self, PsduPlan};
use super::config::BssParams;
use super::edca::{dscp_to_user_priority, Access, AccessCategory, Edcaf};
use crate::channel::ChannelModel;
use crate::engine::TimerId;
use crate::packet::{NodeId, Packet};
use crate::phy::airtime::{ack_duration, block_ack_duration, response_duration, BlockAckBitmap, BLOCK_ACK_REQ_LEN};
use crate::phy::error::{mpdu_success_prob, preamble_detected, ErrorModel};
use crate::phy::mcs::{PhyStandard, TxVector};
use crate::queue::Dropped;
use crate::rng::Rng;
use crate::scenario::CollisionIfs;
use crate::stats::{DropReason, PacketLog, Stage};
use crate::time::{SimDuration, SimTime};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// Events of the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WifiEvent {
    /// The earliest backoff end: start transmissions.
    Access,
    /// The PPDU(s) started at the last access ended.
    PpduEnd,
    /// Node `node`'s frame exchange ended (response received, or its timeout).
    ExchangeEnd { node: u32 },
    /// Node `node` continues its TXOP with the next PSDU (SIFS after the last response).
    TxopContinue { node: u32 },
}

/// What the medium needs from the engine.
pub trait Scheduler {
    fn schedule(&mut self, at: SimTime, ev: WifiEvent) -> TimerId;
    fn cancel(&mut self, id: TimerId);
}

/// Where the medium puts what it produced during one call.
pub struct Outputs<'a> {
    pub log: &'a mut PacketLog,
    /// Packets received at node (in order, after reordering).
    pub delivered: &'a mut Vec<(NodeId, Packet)>,
    pub dropped: &'a mut Vec<Dropped>,
}

/// An MPDU waiting in (or retried from) a MAC queue.
#[derive(Clone, Copy, Debug)]
struct Mpdu {
    pkt: Packet,
    seq: u64,
    len: u32,
    attempts: u32,
    enq: SimTime,
}

/// Counters per link (transmitter → receiver).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LinkStats {
    pub ppdus: u64,
    pub ppdus_failed: u64,
    pub mpdus_sent: u64,
    pub mpdus_acked: u64,
    pub mpdus_dropped: u64,
    /// BlockAckReqs sent after missed BlockAcks.
    pub block_ack_reqs: u64,
    /// Airtime of this link's PPDUs, ns.
    pub airtime_ns: u64,
}

/// A directed link with its MAC queues (one per AC) and the receiver's reorder state.
struct Link {
    tx: u32,
    rx: u32,
    rx_node: NodeId,
    txv: TxVector,
    channel: ChannelModel,
    err_rng: Rng,
    ack: SimDuration,
    block_ack: SimDuration,
    /// Airtime of a BlockAckReq at the control rate.
    bar: SimDuration,
    /// A BlockAckReq must precede the next data of this AC (explicit BAR after a missed BlockAck).
    bar_pending: [bool; 4],
    /// Last (SNR bits, MPDU length) → success probability: the error model is the costliest
    /// arithmetic per MPDU, and SNR and length rarely change between consecutive MPDUs.
    per_memo: (u64, u32, f64),
    queues: [VecDeque<Mpdu>; 4],
    next_seq: [u64; 4],
    rx_next: [u64; 4],
    held: [BTreeMap<u64, Packet>; 4],
    stats: LinkStats,
}

/// What happened on the medium, for timeline tests and debugging (off unless enabled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MediumTrace {
    /// `node` (world id) started a PPDU of `mpdus` MPDUs (0 = BlockAckReq) lasting `duration`.
    PpduStart { t: SimTime, node: NodeId, mpdus: u32, duration: SimDuration },
    /// The PPDU of `node` ended; `ok` MPDUs were received; `collided` if it overlapped another.
    PpduEnd { t: SimTime, node: NodeId, ok: u32, collided: bool },
}

/// Counters per node.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct NodeStats {
    pub accesses: u64,
    pub collisions: u64,
    pub internal_collisions: u64,
    pub ack_timeouts: u64,
}

/// The exchange a node has on the air or awaits the response of.
struct Exchange {
    ac: usize,
    link: u32,
    mpdus: Vec<Mpdu>,
    aggregated: bool,
    /// A BlockAckReq (no MPDUs), sent after a missed BlockAck.
    bar: bool,
    start: SimTime,
    end: SimTime,
    received: Vec<bool>,
    success: bool,
}

struct Node {
    node: NodeId,
    bss: usize,
    is_ap: bool,
    qos: bool,
    edcaf: Vec<Edcaf>,
    links: Vec<u32>,
    backlog: [u32; 4],
    rng: Rng,
    /// Reference instant for this node's IFS: the end of the last busy period it observed, or its own
    /// ACK timeout, NAV or EIFS end.
    ref_time: SimTime,
    exchange: Option<Exchange>,
    /// Buffers of the last finished exchange, reused so the hot path does not allocate.
    spare: (Vec<Mpdu>, Vec<bool>),
    txop_start: SimTime,
    stats: NodeStats,
}

/// Construction parameters of a node.
pub struct NodeSpec {
    pub node: NodeId,
    pub bss: usize,
    pub is_ap: bool,
    pub name: String,
}

/// Construction parameters of a link.
pub struct LinkSpec {
    pub tx: NodeId,
    pub rx: NodeId,
    pub txv: TxVector,
    pub channel: ChannelModel,
}

/// The shared medium of one collision domain.
pub struct Medium {
    bss: Vec<BssParams>,
    nodes: Vec<Node>,
    names: Vec<String>,
    links: Vec<Link>,
    /// `node_of[world node]` = index into `nodes`.
    node_of: Vec<Option<u32>>,
    error_model: ErrorModel,
    slot: SimDuration,
    sifs: SimDuration,
    ack_timeout: SimDuration,
    on_air: bool,
    in_flight: Vec<u32>,
    access_timer: Option<(TimerId, SimTime)>,
    starters: Vec<(u32, usize)>,
    trace: Option<Vec<MediumTrace>>,
    collision_ifs: Vec<CollisionIfs>,
}

impl Medium {
    /// Builds the medium. All BSSs must share a band (one slot time).
    pub fn new(bss: Vec<(BssParams, CollisionIfs)>, nodes: Vec<NodeSpec>, links: Vec<LinkSpec>, world_nodes: usize, seed: u64) -> Self {
        let timings = bss[0].0.timings;
        let (bss, collision_ifs): (Vec<_>, Vec<_>) = bss.into_iter().unzip();
        let mut node_of = vec![None; world_nodes];
        let mut ns = Vec::new();
        let mut names = Vec::new();
        for (i, s) in nodes.into_iter().enumerate() {
            let b = &bss[s.bss];
            let mut rng = Rng::derive(seed, &format!("wifi/{}/edca", s.name));
            let acs: &[AccessCategory] = if b.qos { &AccessCategory::ALL } else { &AccessCategory::ALL[2..3] };
            let edcaf = acs.iter().map(|ac| Edcaf::new(b.edca(s.is_ap, *ac), b.qos, b.cw_reset_retries, &mut rng)).collect();
            node_of[s.node as usize] = Some(i as u32);
            ns.push(Node {
                node: s.node,
                bss: s.bss,
                is_ap: s.is_ap,
                qos: b.qos,
                edcaf,
                links: Vec::new(),
                backlog: [0; 4],
                rng,
                ref_time: SimTime::ZERO,
                exchange: None,
                spare: (Vec::new(), Vec::new()),
                txop_start: SimTime::ZERO,
                stats: NodeStats::default(),
            });
            names.push(s.name);
        }
        let mut ls = Vec::new();
        for l in links {
            let tx = node_of[l.tx as usize].expect("link transmitter is a Wi-Fi node");
            let rx = node_of[l.rx as usize].expect("link receiver is a Wi-Fi node");
            let b = &bss[ns[tx as usize].bss];
            let bitmap = if l.txv.standard == PhyStandard::He && b.ampdu_limits.max_mpdus > 64 { BlockAckBitmap::Compressed256 } else { BlockAckBitmap::Compressed64 };
            ns[tx as usize].links.push(ls.len() as u32);
            ls.push(Link {
                tx,
                rx,
                rx_node: l.rx,
                ack: ack_duration(&l.txv, &b.basic_rates_mbps, timings.band),
                block_ack: block_ack_duration(&l.txv, &b.basic_rates_mbps, timings.band, bitmap),
                bar: response_duration(&l.txv, &b.basic_rates_mbps, timings.band, BLOCK_ACK_REQ_LEN),
                bar_pending: [false; 4],
                per_memo: (u64::MAX, 0, 0.0),
                txv: l.txv,
                channel: l.channel,
                err_rng: Rng::derive(seed, &format!("wifi/{}->{}/errors", names[tx as usize], names[rx as usize])),
                queues: Default::default(),
                next_seq: [0; 4],
                rx_next: [0; 4],
                held: Default::default(),
                stats: LinkStats::default(),
            });
        }
        Medium {
            bss,
            nodes: ns,
            names,
            links: ls,
            node_of,
            error_model: ErrorModel::default(),
            slot: timings.slot,
            sifs: timings.sifs,
            ack_timeout: timings.ack_timeout,
            on_air: false,
            in_flight: Vec::new(),
            access_timer: None,
            starters: Vec::new(),
            trace: None,
            collision_ifs,
        }
    }

    /// Starts recording [`MediumTrace`] entries.
    pub fn enable_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// The entries recorded so far (empties the buffer).
    pub fn take_trace(&mut self) -> Vec<MediumTrace> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn record(&mut self, e: MediumTrace) {
        if let Some(t) = &mut self.trace {
            t.push(e);
        }
    }

    /// Whether world node `n` is a Wi-Fi node of this medium.
    pub fn has_node(&self, n: NodeId) -> bool {
        self.node_of.get(n as usize).is_some_and(|x| x.is_some())
    }

    fn ac_index(&self, node: u32, dscp: u8) -> usize {
        if self.nodes[node as usize].qos {
            AccessCategory::from_user_priority(dscp_to_user_priority(dscp)) as usize
        } else {
            0
        }
    }

    #[inline]
    fn grant(&self, n: &Node) -> SimTime {
        n.ref_time + self.sifs
    }

    /// Queues `pkt` at world node `from` for its neighbour `to`.
    pub fn enqueue<S: Scheduler>(&mut self, now: SimTime, from: NodeId, to: NodeId, pkt: Packet, sched: &mut S, out: &mut Outputs<'_>) {
        let ni = self.node_of[from as usize].expect("enqueue at a Wi-Fi node");
        let ac = self.ac_index(ni, pkt.dscp);
        let node = &self.nodes[ni as usize];
        let bss = &self.bss[node.bss];
        let li = *node.links.iter().find(|&&l| self.links[l as usize].rx_node == to).expect("route uses an existing Wi-Fi link");
        let link = &mut self.links[li as usize];
        if link.queues[ac].len() >= bss.queue_packets as usize {
            out.dropped.push((pkt, DropReason::QueueFull));
            return;
        }
        let seq = link.next_seq[ac];
        link.next_seq[ac] += 1;
        link.queues[ac].push_back(Mpdu { pkt, seq, len: super::mpdu_len(pkt.size, node.qos), attempts: 0, enq: now });
        out.log.stamp(pkt.id, Stage::HwEnq, now);
        let node = &mut self.nodes[ni as usize];
        let was_empty = node.backlog[ac] == 0;
        node.backlog[ac] += 1;
        let eidx = if node.qos { ac } else { 0 };
        if node.edcaf[eidx].access == Access::NotRequested && node.exchange.is_none() {
            let idle = (!self.on_air).then(|| node.ref_time + self.sifs);
            node.edcaf[eidx].request(now, was_empty, idle, self.slot, &mut node.rng);
            if !self.on_air {
                self.rearm_access(now, sched);
            }
        }
    }

    /// Handles a medium event.
    pub fn handle<S: Scheduler>(&mut self, now: SimTime, ev: WifiEvent, sched: &mut S, out: &mut Outputs<'_>) {
        match ev {
            WifiEvent::Access => {
                self.access_timer = None;
                self.on_access(now, sched, out);
            }
            WifiEvent::PpduEnd => self.on_ppdu_end(now, sched, out),
            WifiEvent::ExchangeEnd { node } => self.on_exchange_end(now, node, sched, out),
            WifiEvent::TxopContinue { node } => self.on_txop_continue(now, node, sched, out),
        }
    }

    /// Recomputes the earliest backoff end over all idle nodes and (re)arms the access timer.
    fn rearm_access<S: Scheduler>(&mut self, now: SimTime, sched: &mut S) {
        if self.on_air {
            // Re-armed when the medium frees; a node finishing its ACK timeout meanwhile just waits.
            debug_assert!(self.access_timer.is_none());
            return;
        }
        let mut best: Option<SimTime> = None;
        for n in &self.nodes {
            if n.exchange.is_some() {
                continue;
            }
            let g = self.grant(n);
            for e in &n.edcaf {
                if e.access == Access::Requested {
                    let t = e.backoff_end(g, self.slot).max(now);
                    best = Some(best.map_or(t, |b| b.min(t)));
                }
            }
        }
        match (self.access_timer, best) {
            (Some((_, at)), Some(t)) if at == t => {}
            (prev, best) => {
                if let Some((id, _)) = prev {
                    sched.cancel(id);
                }
                self.access_timer = best.map(|t| (sched.schedule(t, WifiEvent::Access), t));
            }
        }
    }

    fn on_access<S: Scheduler>(&mut self, now: SimTime, sched: &mut S, out: &mut Outputs<'_>) {
        debug_assert!(!self.on_air);
        // Winners: every idle node whose best EDCAF ends now.
        let mut starters = std::mem::take(&mut self.starters);
        starters.clear();
        for ni in 0..self.nodes.len() {
            let n = &self.nodes[ni];
            if n.exchange.is_some() {
                continue;
            }
            let g = self.grant(n);
            let (mut expired, mut k) = ([0usize; 4], 0);
            for (i, e) in n.edcaf.iter().enumerate() {
                if e.access == Access::Requested && e.backoff_end(g, self.slot) <= now {
                    expired[k] = i;
                    k += 1;
                }
            }
            if k > 0 {
                starters.push((ni as u32, expired[0]));
                let n = &mut self.nodes[ni];
                for &lose in &expired[1..k] {
                    // The lower-priority AC behaves as if it had collided (§3.2); it keeps contending.
                    n.stats.internal_collisions += 1;
                    n.edcaf[lose].internal_collision(now, &mut n.rng);
                    n.edcaf[lose].request(now, false, None, self.slot, &mut n.rng);
                }
            }
        }
        // Freeze everyone else's countdown at the start of the busy period.
        for ni in 0..self.nodes.len() {
            if starters.iter().any(|&(s, _)| s as usize == ni) {
                continue;
            }
            let g = self.grant(&self.nodes[ni]);
            for e in self.nodes[ni].edcaf.iter_mut() {
                e.freeze(now, g, self.slot);
            }
        }
        self.in_flight.clear();
        let mut end = now;
        for &(ni, eidx) in &starters {
            self.nodes[ni as usize].txop_start = now;
            self.nodes[ni as usize].stats.accesses += 1;
            if let Some(e) = self.start_psdu(now, ni, eidx, out) {
                end = end.max(e);
                self.in_flight.push(ni);
            } else {
                let n = &mut self.nodes[ni as usize];
                n.edcaf[eidx].release(now);
            }
        }
        self.starters = starters;
        if self.in_flight.is_empty() {
            self.rearm_access(now, sched);
            return;
        }
        self.on_air = true;
        sched.schedule(end, WifiEvent::PpduEnd);
    }

    /// Picks the link to serve for AC `eidx` at node `ni`: the one whose head MPDU is oldest.
    fn pick_link(&self, ni: u32, ac: usize) -> Option<u32> {
        self.nodes[ni as usize]
            .links
            .iter()
            .filter_map(|&l| self.links[l as usize].queues[ac].front().map(|m| (m.enq, m.seq, l)))
            .min()
            .map(|(_, _, l)| l)
    }

    /// Forms and starts a PSDU; returns its end time, or `None` if nothing is queued.
    fn start_psdu(&mut self, now: SimTime, ni: u32, eidx: usize, out: &mut Outputs<'_>) -> Option<SimTime> {
        let n = &self.nodes[ni as usize];
        let ac = if n.qos { eidx } else { 0 };
        let bss = &self.bss[n.bss];
        let edca = n.edcaf[eidx].params;
        let txop_left = if edca.txop_limit.is_zero() { None } else { Some((n.txop_start + edca.txop_limit).saturating_since(now)) };
        let li = self.pick_link(ni, ac)?;
        let lifetime = bss.lifetime;
        let aggregate = bss.ampdu && !(n.qos && ac == AccessCategory::Vo as usize);
        // Drop MPDUs whose lifetime expired (under BlockAck there is no retry limit).
        {
            let link = &mut self.links[li as usize];
            while let Some(m) = link.queues[ac].front() {
                if aggregate && now.saturating_since(m.enq) > lifetime {
                    let m = link.queues[ac].pop_front().expect("front");
                    link.stats.mpdus_dropped += 1;
                    self.nodes[ni as usize].backlog[ac] -= 1;
                    out.dropped.push((m.pkt, DropReason::Deadline));
                    Self::release_held(link, ac, m.seq + 1, out);
                } else {
                    break;
                }
            }
            if link.queues[ac].is_empty() {
                return None;
            }
        }
        if self.links[li as usize].bar_pending[ac] {
            return Some(self.start_bar(now, ni, eidx, li));
        }
        let link = &self.links[li as usize];
        let mut limits = bss.ampdu_limits;
        if let Some(left) = txop_left {
            let resp = if aggregate { link.block_ack } else { link.ack };
            limits.max_duration = limits.max_duration.min(left.saturating_sub(self.sifs + resp));
        }
        let win_end = link.queues[ac].front().map(|m| m.seq + limits.max_mpdus as u64).unwrap_or(0);
        let lens = link.queues[ac].iter().take_while(|m| m.seq < win_end).map(|m| m.len);
        let PsduPlan { mpdus, duration, .. } = ampdu::plan(lens, &link.txv, bss.timings.band, bss.airtime, &limits, aggregate);
        let end = now + duration;
        let link = &mut self.links[li as usize];
        let (mut taken, mut received) = std::mem::take(&mut self.nodes[ni as usize].spare);
        taken.clear();
        received.clear();
        received.resize(mpdus as usize, false);
        for _ in 0..mpdus {
            let mut m = link.queues[ac].pop_front().expect("planned MPDUs are queued");
            m.attempts += 1;
            out.log.stamp_first(m.pkt.id, Stage::AirStart, now);
            taken.push(m);
        }
        link.stats.ppdus += 1;
        link.stats.mpdus_sent += mpdus as u64;
        link.stats.airtime_ns += duration.as_ns();
        let aggregated = aggregate && mpdus > 1;
        let node = self.nodes[ni as usize].node;
        self.record(MediumTrace::PpduStart { t: now, node, mpdus, duration });
        self.nodes[ni as usize].exchange =
            Some(Exchange { ac: eidx, link: li, received, mpdus: taken, aggregated, bar: false, start: now, end, success: false });
        Some(end)
    }

    /// Starts a BlockAckReq exchange; the BlockAck that answers it ends the recovery.
    fn start_bar(&mut self, now: SimTime, ni: u32, eidx: usize, li: u32) -> SimTime {
        let link = &mut self.links[li as usize];
        let end = now + link.bar;
        link.stats.block_ack_reqs += 1;
        link.stats.airtime_ns += link.bar.as_ns();
        let duration = link.bar;
        let node = self.nodes[ni as usize].node;
        self.record(MediumTrace::PpduStart { t: now, node, mpdus: 0, duration });
        self.nodes[ni as usize].exchange =
            Some(Exchange { ac: eidx, link: li, mpdus: Vec::new(), received: Vec::new(), aggregated: true, bar: true, start: now, end, success: false });
        end
    }

    fn on_ppdu_end<S: Scheduler>(&mut self, now: SimTime, sched: &mut S, out: &mut Outputs<'_>) {
        let group = std::mem::take(&mut self.in_flight);
        if group.len() == 1 {
            self.finish_single(now, group[0], sched, out);
        } else {
            self.finish_collision(now, &group, sched);
        }
        self.in_flight = group;
        self.in_flight.clear();
    }

    fn finish_single<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S, out: &mut Outputs<'_>) {
        let qos = self.nodes[ni as usize].qos;
        let ex = self.nodes[ni as usize].exchange.as_mut().expect("transmitting node has an exchange");
        let link = &mut self.links[ex.link as usize];
        let snr = link.channel.snr_db(ex.start);
        let mut any = ex.bar && preamble_detected(snr);
        if preamble_detected(snr) {
            for (i, m) in ex.mpdus.iter().enumerate() {
                let p = if link.per_memo.0 == snr.to_bits() && link.per_memo.1 == m.len {
                    link.per_memo.2
                } else {
                    let p = mpdu_success_prob(self.error_model, snr, &link.txv, m.len);
                    link.per_memo = (snr.to_bits(), m.len, p);
                    p
                };
                let ok = p >= 1.0 || link.err_rng.bernoulli(p);
                ex.received[i] = ok;
                any |= ok;
            }
        }
        let resp = if ex.aggregated { link.block_ack } else { link.ack };
        let ok = ex.received.iter().filter(|&&r| r).count() as u32;
        let (rx, txv, detected) = (link.rx as usize, link.txv, preamble_detected(snr));
        let node = self.nodes[ni as usize].node;
        self.record(MediumTrace::PpduEnd { t: now, node, ok, collided: false });
        let ex = self.nodes[ni as usize].exchange.as_mut().expect("exchange");
        let link = &mut self.links[ex.link as usize];
        if any {
            ex.success = true;
            let rx_node = link.rx_node;
            let acq = if qos { ex.ac } else { 0 };
            let ex = self.nodes[ni as usize].exchange.as_ref().expect("exchange");
            for (i, m) in ex.mpdus.iter().enumerate() {
                if ex.received[i] {
                    out.log.stamp(m.pkt.id, Stage::AirEnd, now);
                    Self::receive(&mut self.links[ex.link as usize], acq, m.seq, m.pkt, rx_node, out);
                }
            }
            // Medium busy through SIFS + response; the exchange ends when the response has been received.
            sched.schedule(now + self.sifs + resp, WifiEvent::ExchangeEnd { node: ni });
        } else {
            if !ex.bar {
                link.stats.ppdus_failed += 1;
            }
            // Third parties decoded the header and honour the NAV up to the expected response; the
            // intended receiver saw an FCS error and waits EIFS (`wifi-model.md` §1.1, ns-3's
            // estimated-ACK rule); with no preamble detected it saw only energy and waits AIFS.
            let nav_end = if detected { now + self.sifs + resp } else { now };
            let eifs_end = if detected { now + self.sifs + crate::phy::timing::estimated_ack_tx_time(&txv) } else { now };
            let timeout = now + self.ack_timeout;
            for (i, n) in self.nodes.iter_mut().enumerate() {
                n.ref_time = if i == ni as usize {
                    timeout
                } else if i == rx {
                    eifs_end
                } else {
                    nav_end
                };
            }
            self.nodes[ni as usize].stats.ack_timeouts += 1;
            self.on_air = false;
            sched.schedule(timeout, WifiEvent::ExchangeEnd { node: ni });
            self.rearm_access(now, sched);
        }
    }

    fn finish_collision<S: Scheduler>(&mut self, now: SimTime, group: &[u32], sched: &mut S) {
        let eifs = self.collision_ifs[self.nodes[group[0] as usize].bss] == CollisionIfs::Eifs;
        let eifs_extra = if eifs {
            let ex = self.nodes[group[0] as usize].exchange.as_ref().expect("exchange");
            let txv = self.links[ex.link as usize].txv;
            crate::phy::timing::estimated_ack_tx_time(&txv) + self.sifs
        } else {
            SimDuration::ZERO
        };
        for n in self.nodes.iter_mut() {
            n.ref_time = now + eifs_extra;
        }
        for &ni in group {
            let (node, own_end) = (self.nodes[ni as usize].node, self.nodes[ni as usize].exchange.as_ref().expect("exchange").end);
            self.record(MediumTrace::PpduEnd { t: own_end, node, ok: 0, collided: true });
            let n = &mut self.nodes[ni as usize];
            let t = (own_end + self.ack_timeout).max(now);
            n.ref_time = t;
            n.stats.collisions += 1;
            n.stats.ack_timeouts += 1;
            let ex = n.exchange.as_ref().expect("exchange");
            if !ex.bar {
                self.links[ex.link as usize].stats.ppdus_failed += 1;
            }
            sched.schedule(t, WifiEvent::ExchangeEnd { node: ni });
        }
        self.on_air = false;
        self.rearm_access(now, sched);
    }

    /// Receiver side: in-order release through the reorder buffer.
    fn receive(link: &mut Link, ac: usize, seq: u64, pkt: Packet, rx_node: NodeId, out: &mut Outputs<'_>) {
        if seq < link.rx_next[ac] {
            return; // duplicate
        }
        if seq == link.rx_next[ac] {
            out.delivered.push((rx_node, pkt));
            link.rx_next[ac] += 1;
            while let Some(p) = link.held[ac].remove(&link.rx_next[ac]) {
                out.delivered.push((rx_node, p));
                link.rx_next[ac] += 1;
            }
        } else {
            link.held[ac].insert(seq, pkt);
        }
    }

    /// The originator gave up on everything below `upto`: the receiver releases what it held
    /// (as a BlockAckReq moving the window would).
    fn release_held(link: &mut Link, ac: usize, upto: u64, out: &mut Outputs<'_>) {
        if link.rx_next[ac] >= upto {
            return;
        }
        link.rx_next[ac] = upto;
        let rx_node = link.rx_node;
        let below: Vec<u64> = link.held[ac].range(..upto).map(|(s, _)| *s).collect();
        for s in below {
            let p = link.held[ac].remove(&s).expect("held");
            out.delivered.push((rx_node, p));
        }
        while let Some(p) = link.held[ac].remove(&link.rx_next[ac]) {
            out.delivered.push((rx_node, p));
            link.rx_next[ac] += 1;
        }
    }

    fn on_exchange_end<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S, out: &mut Outputs<'_>) {
        let ex = self.nodes[ni as usize].exchange.take().expect("exchange to end");
        let success = ex.success;
        let ac = if self.nodes[ni as usize].qos { ex.ac } else { 0 };
        let bss = &self.bss[self.nodes[ni as usize].bss];
        let (retry_limit, ba, explicit_bar) = (bss.retry_limit, bss.ampdu, bss.explicit_bar);
        let link = &mut self.links[ex.link as usize];
        if ex.bar {
            link.bar_pending[ac] = !success;
        } else if !success && ex.aggregated && explicit_bar {
            link.bar_pending[ac] = true;
        }
        // Back to the queue head in sequence order: walk the exchange backwards.
        for (i, m) in ex.mpdus.iter().enumerate().rev() {
            if ex.received[i] {
                link.stats.mpdus_acked += 1;
                self.nodes[ni as usize].backlog[ac] -= 1;
            } else if !ba && m.attempts >= retry_limit {
                link.stats.mpdus_dropped += 1;
                self.nodes[ni as usize].backlog[ac] -= 1;
                out.dropped.push((m.pkt, DropReason::RetryLimit));
                Self::release_held(link, ac, m.seq + 1, out);
            } else {
                link.queues[ac].push_front(*m);
            }
        }
        let eidx_done = ex.ac;
        self.nodes[ni as usize].spare = (ex.mpdus, ex.received);
        if success {
            for n in self.nodes.iter_mut() {
                n.ref_time = now;
            }
            if self.try_continue_txop(now, ni, eidx_done, sched) {
                return;
            }
            self.on_air = false;
        }
        self.end_txop(now, ni, eidx_done, success);
        self.rearm_access(now, sched);
    }

    /// Within a TXOP limit, sends the next PSDU SIFS after the response without contending.
    fn try_continue_txop<S: Scheduler>(&mut self, now: SimTime, ni: u32, eidx: usize, sched: &mut S) -> bool {
        let n = &self.nodes[ni as usize];
        let limit = n.edcaf[eidx].params.txop_limit;
        let ac = if n.qos { eidx } else { 0 };
        if limit.is_zero() || n.backlog[ac] == 0 {
            return false;
        }
        let Some(li) = self.pick_link(ni, ac) else { return false };
        let link = &self.links[li as usize];
        let bss = &self.bss[n.bss];
        let first = link.queues[ac].front().expect("picked link has a head");
        let d = crate::phy::airtime::ppdu_duration_with(&link.txv, first.len, bss.timings.band, bss.airtime);
        let fits = now + self.sifs + d + self.sifs + link.ack <= n.txop_start + limit;
        if fits {
            sched.schedule(now + self.sifs, WifiEvent::TxopContinue { node: ni });
        }
        fits
    }

    fn on_txop_continue<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S, out: &mut Outputs<'_>) {
        let eidx = (0..self.nodes[ni as usize].edcaf.len()).find(|&i| self.nodes[ni as usize].edcaf[i].access == Access::Requested).unwrap_or(0);
        match self.start_psdu(now, ni, eidx, out) {
            Some(end) => {
                self.in_flight.clear();
                self.in_flight.push(ni);
                sched.schedule(end, WifiEvent::PpduEnd);
            }
            None => {
                self.on_air = false;
                self.end_txop(now, ni, eidx, true);
                self.rearm_access(now, sched);
            }
        }
    }

    fn end_txop(&mut self, now: SimTime, ni: u32, eidx: usize, success: bool) {
        let n = &mut self.nodes[ni as usize];
        n.edcaf[eidx].end_txop(now, success, &mut n.rng);
        let ac = if n.qos { eidx } else { 0 };
        if n.backlog[ac] > 0 {
            n.edcaf[eidx].request(now, false, None, self.slot, &mut n.rng);
        }
    }

    /// Per-node and per-link counters for `summary.json`.
    pub fn stats(&self) -> serde_json::Value {
        let nodes: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .zip(&self.names)
            .map(|(n, name)| serde_json::json!({"node": name, "is_ap": n.is_ap, "mac": n.stats, "cw": n.edcaf.iter().map(|e| e.cw()).collect::<Vec<_>>()}))
            .collect();
        let links: Vec<serde_json::Value> = self
            .links
            .iter()
            .map(|l| {
                serde_json::json!({
                    "link": format!("{}->{}", self.names[l.tx as usize], self.names[l.rx as usize]),
                    "txvector": l.txv,
                    "stats": l.stats,
                })
            })
            .collect();
        serde_json::json!({"nodes": nodes, "links": links})
    }

    /// Airtime per link, ns (for fairness metrics).
    pub fn link_airtime(&self) -> Vec<(NodeId, NodeId, u64)> {
        self.links.iter().map(|l| (self.nodes[l.tx as usize].node, l.rx_node, l.stats.airtime_ns)).collect()
    }
}

#[cfg(test)]
#[path = "medium_tests.rs"]
mod tests;
