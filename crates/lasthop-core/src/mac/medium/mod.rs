//! One collision domain: every node's EDCAFs, the shared medium, frame exchanges, collisions, hardware
//! retries along a rate chain, and receiver reordering. What is queued and how PSDUs are formed is the
//! node's [`TxPath`].
//!
//! Source: `wifi-model.md` §3 (channel access, collisions, ACK timeout, hardware retries §3.6), §4.3
//! (per-MPDU errors), §4.4 (receive diversity: a link's receiver has `rx_antennas`, and decodes a PPDU
//! of fewer streams, and every one-stream preamble, with the gain N_rx / N_SS; under fading, [LH], also
//! with the diversity order N_rx − N_SS + 1 of [`crate::channel`]), §1.1 (EIFS).
//!
//! Event flow of one channel access:
//! ```text
//! Access(t) ── earliest backoff end over all nodes; equal ends in the same ns collide
//!   │ freeze every other EDCAF; each winner transmits the head PSDU of its hardware queue at the
//!   │ current series of the PSDU's rate chain; medium busy
//!   ▼
//! PpduEnd(t + max airtime)
//!   ├─ one PPDU, ≥ 1 MPDU received → deliver (through the receiver's reorder buffer),
//!   │     response SIFS later → ExchangeEnd(ack end): success, CW reset, TXOP may continue
//!   ├─ one PPDU, nothing received → transmitter: ExchangeEnd(end + ACK timeout), failure; the
//!   │     receiver waits EIFS, others honour the NAV to the expected response's end
//!   └─ collision → every transmitter fails after its ACK timeout; others resume after the last
//!         PPDU ends (AIFS, or EIFS with `collision_ifs = "eifs"`)
//! ExchangeEnd: success → TxPath::complete; failure → retry in hardware while the chain has tries
//!   and the PSDU's hardware deadline has not passed, else TxPath::complete (XRETRY, or time limit)
//! HwDeadline(node, ac) ── a PSDU with `hw_deadline` (Law's Limit_h, the Linux path's time limit) waiting for the medium or backing
//!   off at its deadline goes back to the path at exactly that time; one whose exchange is on the air
//!   goes back when the exchange ends (a PPDU is never cut)
//! NodeWakeup(node) ── the time a node's transmit path asked for ([`TxPath::next_wakeup`], e.g. its
//!   release gate opens again): the path runs its driver, and the node requests access for what it
//!   pushed to the hardware
//! ```
//! A path whose hardware budget spans the ACs (Law) may queue PSDUs for any AC when one completes, and
//! a path may set hardware deadlines (Law, the Linux path's time limit) ([`TxPath::shares_hardware`]):
//! after each event the medium requests access for every AC of such a node that has a PSDU, releases
//! the ones that have none, and keeps one timer per AC on the head PSDU's deadline.
//! Control responses (ACK, BlockAck) are not subject to errors (approximation, see FIDELITY.md).

use super::config::BssParams;
use super::edca::{dscp_to_user_priority, Access, AccessCategory, Edcaf};
use super::txpath::{PathOut, Psdu, TxPath, TxStatus};
use crate::channel::{ChannelModel, SnrSample};
use crate::engine::TimerId;
use crate::packet::{NodeId, Packet};
use crate::phy::airtime::{ack_duration, block_ack_duration, ppdu_duration_with, response_duration, BlockAckBitmap};
use crate::phy::error::{mpdu_success_prob, preamble_detected, ErrorModel};
use crate::phy::mcs::{PhyStandard, TxVector};
use crate::queue::Dropped;
use crate::rng::Rng;
use crate::mac::wifi_config::CollisionIfs;
use crate::stats::{PacketLog, Stage};
use crate::time::{SimDuration, SimTime};
use serde::Serialize;
use std::collections::BTreeMap;

pub use air_report::{AirEvent, AirReport, MpduSpan};
pub use tx_log::TxLog;

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
    /// Node `node` got the CTS to its RTS: its PSDU goes out now (SIFS after the CTS).
    RtsData { node: u32 },
    /// Node `node`'s PPDU ended, with hidden terminals ([`Medium::set_hidden`]): each PPDU ends on its
    /// own, as nodes that cannot sense each other start independently.
    AirEnd { node: u32 },
    /// The hardware deadline of the head PSDU of node `node`'s AC `ac` is reached.
    HwDeadline { node: u32, ac: u8 },
    /// Node `node`'s transmit path asked to be woken ([`TxPath::next_wakeup`]: its release gate opens).
    NodeWakeup { node: u32 },
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
    /// When set, the transmit events of the call (attempt starts, completions), for the mechanisms'
    /// hooks (`sim::mech`).
    pub air: Option<&'a mut AirReport>,
}

/// Counters per link (transmitter → receiver).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LinkStats {
    /// Data PPDUs sent (attempts, including hardware retries).
    pub ppdus: u64,
    pub ppdus_failed: u64,
    pub mpdus_sent: u64,
    pub mpdus_acked: u64,
    /// BlockAckReqs sent after missed BlockAcks.
    pub block_ack_reqs: u64,
    /// Airtime of this link's PPDUs, ns.
    pub airtime_ns: u64,
}

/// A directed link: channel, error draws and the receiver's reorder state.
struct Link {
    tx: u32,
    rx: u32,
    rx_node: NodeId,
    /// The configured (first-series) rate, for reporting.
    txv: TxVector,
    channel: ChannelModel,
    /// By N_SS (index; 0 unused): the array gain of an N_SS-stream PPDU's subframes, dB, and its fading
    /// diversity order (computed once: the PPDU path would take a log10 each). A preamble (an RTS
    /// too) is one stream: index 1.
    data_gain: [(f64, usize); 9],
    err_rng: Rng,
    bitmap: BlockAckBitmap,
    /// Last (SNR bits, MPDU length, rate) → success probability: the error model is the costliest
    /// arithmetic per MPDU, and these rarely change between consecutive MPDUs.
    per_memo: (u64, u32, TxVector, f64),
    rx_next: [u64; 4],
    held: [BTreeMap<u64, Packet>; 4],
    stats: LinkStats,
}

impl Link {
    /// The SNR a one-stream preamble (PHY header, RTS) is detected at, dB.
    fn preamble_snr_db(&self, s: &SnrSample) -> f64 {
        self.data_snr_db(s, 1)
    }

    /// The SNR the subframes of an `nss`-stream PPDU decode at, dB: array gain and, under fading,
    /// diversity order.
    fn data_snr_db(&self, s: &SnrSample, nss: u8) -> f64 {
        let (gain, order) = self.data_gain[(nss as usize).min(8)];
        s.db(order) + gain
    }
}

/// What happened on the medium, for timeline tests and debugging (off unless enabled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MediumTrace {
    /// `node` (world id) started a PPDU of `mpdus` MPDUs (0 = BlockAckReq) lasting `duration`.
    PpduStart { t: SimTime, node: NodeId, mpdus: u32, duration: SimDuration },
    /// `node` sent an RTS lasting `duration` (`rts_threshold_bytes`); its end is a `PpduEnd` only if
    /// it collided.
    Rts { t: SimTime, node: NodeId, duration: SimDuration },
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
    /// PSDUs abandoned by the hardware after their whole rate chain (XRETRY).
    pub xretries: u64,
    /// PSDUs returned at their hardware deadline ([`Psdu::hw_deadline`]).
    pub hw_time_limit_returns: u64,
    /// RTS frames sent (`rts_threshold_bytes`; left out of `summary.json` while none).
    #[serde(skip_serializing_if = "rts::is_zero")]
    pub rts_sent: u64,
}

/// The PSDU at the head of a hardware queue and how far its rate chain got.
struct Hw {
    psdu: Psdu,
    series: usize,
    tries: u8,
    attempts: u32,
    /// Since when its next attempt waits for the medium: it came to the head of the hardware queue,
    /// or its last exchange ended.
    waiting_since: SimTime,
}

/// The exchange a node has on the air or awaits the response of.
struct Exchange {
    /// EDCAF index.
    eidx: usize,
    /// Queue (AC) index of the PSDU in `hw`.
    ac: usize,
    txv: TxVector,
    start: SimTime,
    end: SimTime,
    received: Vec<bool>,
    success: bool,
    /// The PPDU on the air is the RTS ahead of the PSDU (`rts.rs`).
    rts: bool,
}

struct Node {
    node: NodeId,
    bss: usize,
    is_ap: bool,
    qos: bool,
    edcaf: Vec<Edcaf>,
    links: Vec<u32>,
    path: TxPath,
    hw: [Option<Hw>; 4],
    rng: Rng,
    /// Reference instant for this node's IFS: the end of the last busy period it observed, or its own
    /// ACK timeout, NAV or EIFS end.
    ref_time: SimTime,
    exchange: Option<Exchange>,
    /// Buffer of the last finished exchange, reused so the hot path does not allocate.
    spare: Vec<bool>,
    txop_start: SimTime,
    /// The EDCAF whose TXOP continues at the pending `TxopContinue`.
    continue_eidx: Option<usize>,
    /// The path shares one hardware budget over the ACs and sets hardware deadlines.
    shares_hw: bool,
    /// The path has timers of its own ([`TxPath::has_timers`]): a release gate.
    timed_path: bool,
    wakeup_timer: Option<(TimerId, SimTime)>,
    /// Per AC: the armed timer on the head PSDU's hardware deadline.
    deadline_timers: [Option<(TimerId, SimTime)>; 4],
    /// Per AC: when the hardware slot last gave its PSDU back (completed or returned at its deadline).
    hw_vacated: [SimTime; 4],
    /// How many activities of other nodes it senses now (hidden terminals, `hidden.rs`; always 0 in one
    /// collision domain, where `Medium::on_air` stands for them).
    sensed: u32,
    stats: NodeStats,
}

/// Construction parameters of a node.
pub struct NodeSpec {
    pub node: NodeId,
    pub bss: usize,
    pub is_ap: bool,
    pub name: String,
    pub path: TxPath,
}

/// Construction parameters of a link. Links of a node must be given in the order its path knows them.
pub struct LinkSpec {
    pub tx: NodeId,
    pub rx: NodeId,
    pub txv: TxVector,
    pub channel: ChannelModel,
    /// The receiver's antennas (its spatial streams, `max_nss`): a PPDU of fewer streams is decoded,
    /// and every preamble (one stream) detected, with the receive-diversity gain N_rx / N_SS
    /// (`wifi-model.md` §4.4, as ns-3's AWGN models with `Antennas` = N_rx) and, under fading, the
    /// diversity order N_rx − N_SS + 1; `channel` needs a fading branch per antenna
    /// ([`ChannelModel::set_receive_branches`]).
    pub rx_antennas: u8,
}

/// The shared medium of one collision domain.
pub struct Medium {
    /// Every PSDU transmission on the air, for time series of rates and SNR.
    pub tx_log: TxLog,
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
    releases: Vec<(u32, usize, u64)>,
    trace: Option<Vec<MediumTrace>>,
    collision_ifs: Vec<CollisionIfs>,
    /// Some node's path shares its hardware over the ACs (see the module docs).
    any_shared_hw: bool,
    any_timed_path: bool,
    /// Hidden terminals ([`Medium::set_hidden`]); `None`: every node senses every node.
    hidden: Option<Box<hidden::Hidden>>,
}

impl Medium {
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

    /// Applies receiver-window moves requested by a transmit path, delivering what they release.
    #[inline]
    fn apply_releases(&mut self, out: &mut Outputs<'_>) {
        while let Some((link, ac, upto)) = self.releases.pop() {
            Self::release_held(&mut self.links[link as usize], ac, upto, out);
        }
    }

    /// Queues `pkt` at world node `from` for its neighbour `to`.
    pub fn enqueue<S: Scheduler>(&mut self, now: SimTime, from: NodeId, to: NodeId, mut pkt: Packet, sched: &mut S, out: &mut Outputs<'_>) {
        pkt.hop = to;
        let ni = self.node_of[from as usize].expect("enqueue at a Wi-Fi node");
        let ac = self.ac_index(ni, pkt.dscp);
        let node = &mut self.nodes[ni as usize];
        let local = node.links.iter().position(|&l| self.links[l as usize].rx_node == to).expect("route uses an existing Wi-Fi link");
        let was_empty = node.hw[ac].is_none() && !node.path.pending(ac);
        let mut po = PathOut { log: out.log, dropped: out.dropped, releases: &mut self.releases };
        node.path.enqueue(now, local, ac, pkt, &mut po);
        self.apply_releases(out);
        if self.request_if_pending(now, ni, ac, was_empty) {
            self.rearm_access(now, sched);
        }
        self.service_shared_hw(now, sched, out);
    }

    /// Starts AC `ac`'s channel access at node `ni` if it has a frame and has not asked yet. Every AC
    /// requests access when it gets a frame, also while the node's other ACs are in a frame exchange
    /// (the node's own transmission counts as a busy medium: a backoff is drawn). Returns whether it
    /// asked (the caller re-arms the access timer).
    #[inline]
    fn request_if_pending(&mut self, now: SimTime, ni: u32, ac: usize, was_empty: bool) -> bool {
        let node = &mut self.nodes[ni as usize];
        let sensing = node.sensed > 0;
        let eidx = if node.qos { ac } else { 0 };
        if !(node.path.pending(ac) && node.edcaf[eidx].access == Access::NotRequested) {
            return false;
        }
        let idle = (!self.on_air && !sensing && node.exchange.is_none()).then(|| node.ref_time + self.sifs);
        node.edcaf[eidx].request(now, was_empty, idle, self.slot, &mut node.rng);
        true
    }

    /// Handles a medium event.
    #[inline]
    pub fn handle<S: Scheduler>(&mut self, now: SimTime, ev: WifiEvent, sched: &mut S, out: &mut Outputs<'_>) {
        match ev {
            WifiEvent::Access => {
                self.access_timer = None;
                self.on_access(now, sched, out);
            }
            WifiEvent::PpduEnd => self.on_ppdu_end(now, sched, out),
            WifiEvent::ExchangeEnd { node } => self.on_exchange_end(now, node, sched, out),
            WifiEvent::TxopContinue { node } => {
                let eidx = self.nodes[node as usize].exchange_eidx_for_continue();
                match self.transmit(now, node, eidx, out) {
                    Some(end) => self.on_air_alone(now, node, end, sched),
                    // Its PSDU went back at its hardware deadline in the SIFS gap: the TXOP ends here.
                    None => self.txop_abandoned(now, node, eidx, sched),
                }
            }
            WifiEvent::AirEnd { node } => self.on_air_end(now, node, sched, out),
            WifiEvent::RtsData { node } => self.after_cts(now, node, sched, out),
            // The timer fired: forget it; `service_shared_hw` returns the PSDU (or leaves it to the end
            // of its exchange).
            WifiEvent::HwDeadline { node, ac } => self.nodes[node as usize].deadline_timers[ac as usize] = None,
            WifiEvent::NodeWakeup { node } => self.on_node_wakeup(now, node, sched, out),
        }
        self.service_shared_hw(now, sched, out);
    }

    /// Requests access for every AC of node `ni` that has a PSDU and releases the EDCAFs of the ACs
    /// that have none (not while the node has an exchange: its end does this).
    fn wake(&mut self, now: SimTime, ni: u32) {
        let (slot, sifs) = (self.slot, self.sifs);
        let n = &mut self.nodes[ni as usize];
        let on_air = self.on_air || n.sensed > 0;
        if n.exchange.is_some() {
            return;
        }
        for eidx in 0..n.edcaf.len() {
            let ac = if n.qos { eidx } else { 0 };
            let has = n.hw[ac].is_some() || n.path.pending(ac);
            let access = n.edcaf[eidx].access;
            if has && access == Access::NotRequested {
                let idle = (!on_air).then_some(n.ref_time + sifs);
                n.edcaf[eidx].request(now, true, idle, slot, &mut n.rng);
            } else if !has && access == Access::Requested && n.continue_eidx != Some(eidx) {
                n.edcaf[eidx].release(now);
            }
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
            if n.exchange.is_some() || n.sensed > 0 {
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

    /// Every idle node whose best EDCAF's backoff ends now, with that EDCAF; its other expired EDCAFs
    /// lose an internal collision.
    #[inline]
    fn access_winners(&mut self, now: SimTime) -> Vec<(u32, usize)> {
        let mut starters = std::mem::take(&mut self.starters);
        starters.clear();
        for ni in 0..self.nodes.len() {
            let n = &self.nodes[ni];
            if n.exchange.is_some() || n.sensed > 0 {
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
                    n.edcaf[lose].lose_internal_collision(now, self.slot, &mut n.rng);
                }
            }
        }
        starters
    }

    fn on_access<S: Scheduler>(&mut self, now: SimTime, sched: &mut S, out: &mut Outputs<'_>) {
        debug_assert!(!self.on_air);
        let starters = self.access_winners(now);
        // Freeze every other countdown at the start of the busy period, the winners' other ACs included
        // (their own transmission is a busy medium to them). With hidden terminals only the winners'
        // here; the nodes that sense a transmission freeze when it starts (`air_start`).
        let hidden = self.hidden.is_some();
        for ni in 0..self.nodes.len() {
            let winner = starters.iter().find(|&&(s, _)| s as usize == ni).map(|&(_, e)| e);
            if hidden && winner.is_none() {
                continue;
            }
            let g = self.grant(&self.nodes[ni]);
            for (i, e) in self.nodes[ni].edcaf.iter_mut().enumerate() {
                if Some(i) != winner {
                    e.freeze(now, g, self.slot);
                }
            }
        }
        self.in_flight.clear();
        let mut end = now;
        for &(ni, eidx) in &starters {
            self.nodes[ni as usize].txop_start = now;
            self.nodes[ni as usize].stats.accesses += 1;
            // A deadline that falls on this very instant wins over the access (no attempt starts at
            // or after it), whatever order the two events were queued in.
            if self.nodes[ni as usize].shares_hw {
                self.expire_due(now, ni, out);
            }
            if self.load_hw(now, ni, eidx, None, out) {
                let e = if self.wants_rts(ni, eidx) { self.transmit_rts(now, ni, eidx, out) } else { self.transmit(now, ni, eidx, out).expect("hardware queue loaded") };
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
        if self.hidden.is_some() {
            self.air_start_group(now, sched);
            return;
        }
        self.on_air = true;
        sched.schedule(end, WifiEvent::PpduEnd);
    }

    /// Makes sure the hardware queue of EDCAF `eidx` holds a PSDU; `budget` as in [`TxPath::head`].
    fn load_hw(&mut self, now: SimTime, ni: u32, eidx: usize, budget: Option<SimDuration>, out: &mut Outputs<'_>) -> bool {
        let n = &mut self.nodes[ni as usize];
        let ac = if n.qos { eidx } else { 0 };
        if n.hw[ac].is_none() {
            // It has waited since its EDCAF asked for the medium or the hardware slot was last vacated
            // (a PSDU completed or went back at its deadline), whichever is later; within a TXOP, since
            // the last response ended.
            let waiting_since = if budget.is_some() { now } else { n.edcaf[eidx].requested_at.max(n.hw_vacated[ac]) };
            let mut po = PathOut { log: out.log, dropped: out.dropped, releases: &mut self.releases };
            n.hw[ac] = n.path.head(now, ac, budget, &mut po).map(|psdu| Hw { psdu, series: 0, tries: 0, attempts: 0, waiting_since });
            self.apply_releases(out);
        }
        self.nodes[ni as usize].hw[ac].is_some()
    }

    /// Starts the next attempt of the hardware-queue head of EDCAF `eidx`; returns its end.
    fn transmit(&mut self, now: SimTime, ni: u32, eidx: usize, out: &mut Outputs<'_>) -> Option<SimTime> {
        let n = &mut self.nodes[ni as usize];
        let ac = if n.qos { eidx } else { 0 };
        let bss = &self.bss[n.bss];
        let hw = n.hw[ac].as_ref()?;
        let (txv, _) = hw.psdu.chain.get(hw.series).expect("a PSDU in hardware has a series left");
        let duration = if hw.psdu.bar {
            response_duration(&txv, &bss.basic_rates_mbps, bss.timings.band, hw.psdu.psdu_len)
        } else {
            ppdu_duration_with(&txv, hw.psdu.psdu_len, bss.timings.band, bss.airtime)
        };
        let link = &mut self.links[hw.psdu.link as usize];
        link.stats.airtime_ns += duration.as_ns();
        if hw.psdu.bar {
            link.stats.block_ack_reqs += 1;
        } else {
            link.stats.ppdus += 1;
            link.stats.mpdus_sent += hw.psdu.mpdus.len() as u64;
        }
        for m in &hw.psdu.mpdus {
            out.log.stamp_first(m.pkt.id, Stage::AirStart, now);
        }
        let mpdus = hw.psdu.mpdus.len() as u32;
        // After a CTS the attempt started with its RTS (`transmit_rts`).
        let after_cts = n.exchange.take().map(|e| {
            debug_assert!(e.rts, "only an RTS exchange precedes a PSDU's transmission");
            n.spare = e.received;
        });
        let after_cts = after_cts.is_some();
        let received = n.begin_attempt(now, ac, out.air.as_deref_mut().filter(|_| !after_cts));
        let end = now + duration;
        n.exchange = Some(Exchange { eidx, ac, txv, start: now, end, received, success: false, rts: false });
        let node = n.node;
        self.record(MediumTrace::PpduStart { t: now, node, mpdus, duration });
        Some(end)
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

    /// Draws which MPDUs of node `ni`'s PPDU were received; returns (any received, preamble detected,
    /// the SNR drawn).
    fn draw_reception(&mut self, ni: u32) -> (bool, bool, f64) {
        let n = &mut self.nodes[ni as usize];
        let ex = n.exchange.as_mut().expect("transmitting node has an exchange");
        let hw = n.hw[ex.ac].as_ref().expect("exchange PSDU");
        let link = &mut self.links[hw.psdu.link as usize];
        let sample = link.channel.sample(ex.start);
        let snr = sample.db(1);
        let detected = preamble_detected(link.preamble_snr_db(&sample));
        let mut any = hw.psdu.bar && detected;
        if detected {
            let data_snr = link.data_snr_db(&sample, ex.txv.nss);
            for (i, m) in hw.psdu.mpdus.iter().enumerate() {
                let memo = &link.per_memo;
                let p = if memo.0 == data_snr.to_bits() && memo.1 == m.len && memo.2 == ex.txv {
                    memo.3
                } else {
                    let p = mpdu_success_prob(self.error_model, data_snr, &ex.txv, m.len);
                    link.per_memo = (data_snr.to_bits(), m.len, ex.txv, p);
                    p
                };
                let ok = p >= 1.0 || link.err_rng.bernoulli(p);
                ex.received[i] = ok;
                any |= ok;
            }
        }
        (any, detected, snr)
    }

    /// Duration of the ACK (or BlockAck, for an A-MPDU) answering `psdu` sent at `txv` by node `n`.
    fn response_to(&self, n: &Node, psdu: &Psdu, txv: &TxVector) -> SimDuration {
        let b = &self.bss[n.bss];
        if psdu.aggregated {
            block_ack_duration(txv, &b.basic_rates_mbps, b.timings.band, self.links[psdu.link as usize].bitmap)
        } else {
            ack_duration(txv, &b.basic_rates_mbps, b.timings.band)
        }
    }

    fn response_duration(&self, ni: u32) -> SimDuration {
        let n = &self.nodes[ni as usize];
        let ex = n.exchange.as_ref().expect("exchange");
        let hw = n.hw[ex.ac].as_ref().expect("exchange PSDU");
        self.response_to(n, &hw.psdu, &ex.txv)
    }

    #[inline]
    fn finish_single<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S, out: &mut Outputs<'_>) {
        if self.nodes[ni as usize].exchange.as_ref().is_some_and(|e| e.rts) {
            return self.rts_answered(now, ni, sched);
        }
        let (any, detected, snr) = self.draw_reception(ni);
        let resp = self.response_duration(ni);
        let n = &mut self.nodes[ni as usize];
        let ex = n.exchange.as_mut().expect("exchange");
        let hw = n.hw[ex.ac].as_ref().expect("exchange PSDU");
        let ok = ex.received.iter().filter(|&&r| r).count() as u32;
        let (li, txv, bar) = (hw.psdu.link as usize, ex.txv, hw.psdu.bar);
        self.tx_log.push(ex.start, li as u32, &txv, snr, hw.psdu.mpdus.len(), ok as usize, false);
        let node = n.node;
        if any {
            ex.success = true;
            let qos = n.qos;
            let ac = if qos { hw.psdu.ac } else { 0 };
            let link = &mut self.links[li];
            for (i, m) in hw.psdu.mpdus.iter().enumerate() {
                if ex.received[i] {
                    out.log.stamp(m.pkt.id, Stage::AirEnd, now);
                    Self::receive(link, ac, m.seq, m.pkt, out);
                }
            }
            self.record(MediumTrace::PpduEnd { t: now, node, ok, collided: false });
            // Medium busy through SIFS + response; the exchange ends when the response has been received.
            sched.schedule(now + self.sifs + resp, WifiEvent::ExchangeEnd { node: ni });
            if self.hidden.is_some() {
                // The receiver's response: whoever hears it defers too.
                let rx = self.links[li].rx;
                self.listen(now, ni, rx);
                self.rearm_access(now, sched);
            }
            return;
        }
        self.record(MediumTrace::PpduEnd { t: now, node, ok, collided: false });
        if !bar {
            self.links[li].stats.ppdus_failed += 1;
        }
        // Third parties decoded the header and honour the NAV up to the expected response; the
        // intended receiver saw an FCS error and waits EIFS (`wifi-model.md` §1.1, ns-3's
        // estimated-ACK rule); with no preamble detected it saw only energy and waits AIFS.
        let rx = self.links[li].rx as usize;
        let nav_end = if detected { now + self.sifs + resp } else { now };
        let eifs_end = if detected { now + self.sifs + crate::phy::timing::estimated_ack_tx_time(&txv) } else { now };
        let timeout = now + self.ack_timeout;
        for (i, n) in self.nodes.iter_mut().enumerate() {
            let at = if i == ni as usize {
                timeout
            } else if !hidden::hears(&self.hidden, i, ni as usize) {
                // Hidden terminals: a node that sensed only an earlier response of this TXOP resumes now.
                if !hidden::in_audience(&self.hidden, ni, i) {
                    continue;
                }
                now
            } else if i == rx {
                eifs_end
            } else {
                nav_end
            };
            n.ref_time = hidden::later_ref(&self.hidden, n.ref_time, at);
        }
        self.nodes[ni as usize].stats.ack_timeouts += 1;
        self.on_air = false;
        self.end_activity(ni);
        sched.schedule(timeout, WifiEvent::ExchangeEnd { node: ni });
        self.rearm_access(now, sched);
    }

    fn finish_collision<S: Scheduler>(&mut self, now: SimTime, group: &[u32], sched: &mut S) {
        let eifs_extra = self.collision_ifs_extra(group[0]);
        for n in self.nodes.iter_mut() {
            n.ref_time = now + eifs_extra;
        }
        for &ni in group {
            self.fail_collided(now, ni, sched);
        }
        self.on_air = false;
        self.rearm_access(now, sched);
    }

    /// What a collision adds to the IFS of those who saw it: EIFS − DIFS with `collision_ifs = "eifs"`
    /// (their PPDUs' rates as node `ni`'s), else nothing.
    fn collision_ifs_extra(&self, ni: u32) -> SimDuration {
        if self.collision_ifs[self.nodes[ni as usize].bss] == CollisionIfs::Eifs {
            let n = &self.nodes[ni as usize];
            let ex = n.exchange.as_ref().expect("exchange");
            // An RTS went at the control rate of its PSDU's.
            let txv = if ex.rts { crate::phy::airtime::control_response_vector(&ex.txv, &self.bss[n.bss].basic_rates_mbps) } else { ex.txv };
            crate::phy::timing::estimated_ack_tx_time(&txv) + self.sifs
        } else {
            SimDuration::ZERO
        }
    }

    /// Node `ni`'s PPDU collided: nothing was received; it fails after its ACK timeout.
    fn fail_collided<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S) {
        let n = &self.nodes[ni as usize];
        let ex = n.exchange.as_ref().expect("exchange");
        let hw = n.hw[ex.ac].as_ref().expect("exchange PSDU");
        let (node, own_end, li, bar) = (n.node, ex.end, hw.psdu.link, hw.psdu.bar || ex.rts);
        if !ex.rts {
            self.tx_log.push(ex.start, li, &ex.txv, f64::NAN, hw.psdu.mpdus.len(), 0, true);
        }
        self.record(MediumTrace::PpduEnd { t: own_end, node, ok: 0, collided: true });
        if !bar {
            self.links[li as usize].stats.ppdus_failed += 1;
        }
        let t = (own_end + self.ack_timeout).max(now);
        let n = &mut self.nodes[ni as usize];
        n.ref_time = t;
        n.stats.collisions += 1;
        n.stats.ack_timeouts += 1;
        sched.schedule(t, WifiEvent::ExchangeEnd { node: ni });
    }

    fn on_exchange_end<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S, out: &mut Outputs<'_>) {
        let ex = self.nodes[ni as usize].exchange.take().expect("exchange to end");
        let (eidx, ac, success) = (ex.eidx, ex.ac, ex.success);
        let n = &mut self.nodes[ni as usize];
        let hw = n.hw[ac].as_mut().expect("exchange PSDU");
        hw.attempts += 1;
        hw.tries += 1;
        hw.waiting_since = now;
        let mut exhausted = false;
        let done = if success {
            true
        } else {
            let tries = hw.psdu.chain.get(hw.series).map_or(0, |s| s.1);
            if hw.tries >= tries {
                hw.series += 1;
                hw.tries = 0;
            }
            exhausted = hw.psdu.chain.get(hw.series).is_none();
            exhausted || hw.psdu.hw_deadline.is_some_and(|d| now >= d)
        };
        if done {
            let hw = n.hw[ac].take().expect("exchange PSDU");
            n.hw_vacated[ac] = now;
            if exhausted {
                n.stats.xretries += 1;
            } else if !success {
                n.stats.hw_time_limit_returns += 1;
            }
            let acked = ex.received.iter().filter(|&&r| r).count() as u64;
            self.links[hw.psdu.link as usize].stats.mpdus_acked += acked;
            let st = TxStatus { success, received: &ex.received, attempts: hw.attempts };
            let n = &mut self.nodes[ni as usize];
            air_report::report_air_complete(&mut out.air, n.node, ac, &hw.psdu, st, acked as u32);
            let mut po = PathOut { log: out.log, dropped: out.dropped, releases: &mut self.releases };
            n.path.complete(now, hw.psdu, st, &mut po);
            self.apply_releases(out);
        }
        self.nodes[ni as usize].spare = ex.received;
        if success {
            if self.hidden.is_some() {
                // The exchange ended with its response: the sender and its audience count from now.
                self.audience_waits_until(ni, now);
                let r = &mut self.nodes[ni as usize].ref_time;
                *r = (*r).max(now);
            } else {
                for n in self.nodes.iter_mut() {
                    n.ref_time = now;
                }
            }
            if self.try_continue_txop(now, ni, eidx, sched, out) {
                return;
            }
            self.on_air = false;
            self.end_activity(ni);
        }
        self.end_txop(now, ni, eidx, success);
        self.rearm_access(now, sched);
    }
}

impl Node {
    fn exchange_eidx_for_continue(&mut self) -> usize {
        self.continue_eidx.take().expect("TxopContinue follows try_continue_txop")
    }
}

mod hw;
mod air_report;
mod hidden;
mod rts;
mod txop;
mod tx_log;
mod rx;
mod setup;
#[cfg(test)]
mod tests;
