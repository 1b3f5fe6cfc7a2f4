//! The event loop and packet forwarding.

use super::build::Built;
use crate::app::UdpSource;
use crate::engine::EventQueue;
use crate::engine::TimerId;
use crate::link::{Pipe, PipeTarget};
use crate::mac::medium::{Medium, Outputs, Scheduler, WifiEvent};
use crate::packet::{NodeId, Packet};
use crate::queue::Dropped;
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::stats::{DropReason, FlowSummary, FlowTracker, PacketLog, Stage};
use crate::time::SimTime;

/// Events of the world. Each names the component it is for by index.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    /// Flow `flow` sends its next packet.
    Send { flow: u32 },
    /// Pipe `pipe` finished serializing its packet.
    PipeTxEnd { pipe: u32 },
    /// A packet reached the far end of pipe `pipe`.
    PipeArrive { pipe: u32, pkt: Packet },
    /// An event of the 802.11 medium.
    Wifi(WifiEvent),
    /// A transport timer of flow `flow` (TCP pacing, RTO, delayed ACK).
    FlowTimer { flow: u32 },
    /// The timer of the mechanism at AP mechanism index `ap`.
    Mech { ap: u32 },
}

/// The next hop of a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    Pipe(u32),
    /// Over the air to this neighbour.
    Wifi(NodeId),
}

/// Lets the medium schedule its events on the world's queue.
struct WifiSched<'a>(&'a mut EventQueue<Event>);

impl Scheduler for WifiSched<'_> {
    fn schedule(&mut self, at: SimTime, ev: WifiEvent) -> TimerId {
        self.0.schedule(at, Event::Wifi(ev))
    }
    fn cancel(&mut self, id: TimerId) {
        self.0.cancel(id);
    }
}

impl Event {
    fn tag(&self) -> u64 {
        match self {
            Event::Send { flow } => 1 | (*flow as u64) << 8,
            Event::PipeTxEnd { pipe } => 2 | (*pipe as u64) << 8,
            Event::PipeArrive { pipe, pkt } => 3 | (*pipe as u64) << 8 | pkt.id << 24,
            Event::Wifi(WifiEvent::Access) => 4,
            Event::Wifi(WifiEvent::PpduEnd) => 5,
            Event::Wifi(WifiEvent::ExchangeEnd { node }) => 6 | (*node as u64) << 8,
            Event::Wifi(WifiEvent::TxopContinue { node }) => 7 | (*node as u64) << 8,
            Event::Wifi(WifiEvent::HwDeadline { node, ac }) => 9 | (*node as u64) << 8 | (*ac as u64) << 40,
            Event::FlowTimer { flow } => 8 | (*flow as u64) << 8,
            Event::Mech { ap } => 9 | (*ap as u64) << 8,
        }
    }
}

/// How a flow generates packets.
pub(crate) enum SourceKind {
    Udp(UdpSource),
    /// Closed loop: one new packet per delivered or dropped one, until `stop`.
    Saturated { start: SimTime, stop: SimTime, backlog: u32 },
    /// A TCP connection: both ends and the flow's pending timer.
    Tcp(Box<TcpFlow>),
    /// An RTC video call: both ends and the flow's pending timer.
    Rtc(Box<RtcFlow>),
}

/// Both ends of an RTC video call.
pub(crate) struct RtcFlow {
    pub session: crate::app::rtc::RtcSession,
    pub deadline: crate::time::SimDuration,
    pub timer: Option<(TimerId, SimTime)>,
}

/// Both ends of a TCP connection.
pub(crate) struct TcpFlow {
    pub sender: crate::transport::tcp::TcpSender,
    pub receiver: crate::transport::tcp::TcpReceiver,
    pub start: SimTime,
    pub stop: SimTime,
    pub timer: Option<(TimerId, SimTime)>,
    /// The ECN codepoint of the last data segment the receiver got, echoed in its ACKs (ABC).
    pub ecn_echo: crate::packet::Ecn,
    /// A video application writing frames into the connection (`tcp_video` flows).
    pub video: Option<Box<TcpVideoApp>>,
}

/// Both ends of a video-over-TCP application.
pub(crate) struct TcpVideoApp {
    pub sender: crate::app::tcp_video::TcpVideoSender,
    pub receiver: crate::app::tcp_video::TcpVideoReceiver,
    pub deadline: crate::time::SimDuration,
}

/// A running flow source.
pub(crate) struct FlowSource {
    /// Echo flow: the destination answers every packet; latency is the round trip.
    pub echo: bool,
    pub src: NodeId,
    pub dst: NodeId,
    pub dscp: u8,
    pub packet_bytes: u32,
    pub kind: SourceKind,
    pub rng: Rng,
    pub seq: u64,
}

pub(crate) struct World {
    pub q: EventQueue<Event>,
    pub end: SimTime,
    pub pipes: Vec<Pipe>,
    /// `route[node][dst]` = the next hop.
    pub route: Vec<Vec<Option<Hop>>>,
    /// Echo replies in flight → the send time of the request they answer.
    pub echo_origin: std::collections::BTreeMap<u64, SimTime>,
    /// TCP ACKs in flight → the SACK blocks they carry.
    pub sack_blocks: std::collections::BTreeMap<u64, Vec<(u64, u64)>>,
    /// RTP packets in flight → the RTP packet they carry (the network packet holds its header fields).
    pub rtp: std::collections::BTreeMap<u64, crate::rtc::rtp::RtpPacket>,
    /// RTCP packets in flight → the feedback they carry.
    pub rtcp: std::collections::BTreeMap<u64, crate::app::rtc::Rtcp>,
    pub medium: Option<Medium>,
    pub delivered: Vec<(NodeId, Packet)>,
    pub sources: Vec<FlowSource>,
    pub trackers: Vec<FlowTracker>,
    pub log: PacketLog,
    pub next_packet_id: u64,
    pub drops: Vec<Dropped>,
    /// MPDUs whose transmission began during a medium call, when an AP mechanism watches them.
    pub air_started: Vec<(u64, NodeId)>,
    pub digest: u64,
    /// AP mechanisms (Zhuge, FastAck, ABC), and which AP node, stand-in pipe and station each serves.
    pub mechs: Vec<super::mech::ApMech>,
    pub mech_of_node: Vec<Option<usize>>,
    pub mech_of_pipe: Vec<Option<usize>>,
    pub mech_of_station: Vec<Option<usize>>,
    /// FastAck local retransmissions decided while handling an uplink ACK: (mech, flow, seq, len,
    /// header, station).
    pub pending_local: Vec<(usize, u32, u64, u32, crate::packet::Hdr, NodeId)>,
}

/// Points `timer` at `next`: unchanged if it already fires then, else the old event is cancelled and
/// `ev` is scheduled at `next` (never in the past).
pub(crate) fn rearm(q: &mut EventQueue<Event>, timer: &mut Option<(TimerId, SimTime)>, next: Option<SimTime>, ev: Event) {
    if timer.map(|x| x.1) == next {
        return;
    }
    if let Some((id, _)) = timer.take() {
        q.cancel(id);
    }
    let now = q.now();
    *timer = next.map(|at| (q.schedule(at.max(now), ev), at));
}

/// Called periodically with the simulated time; return `false` to stop the run.
pub type Progress<'a> = &'a mut dyn FnMut(SimTime) -> bool;

/// Why a run did not complete.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RunError {
    #[error("run interrupted at simulated time {0}")]
    Interrupted(SimTime),
}

/// Everything a finished run produced.
#[derive(Debug)]
pub struct RunOutput {
    pub packets: PacketLog,
    pub flows: Vec<FlowSummary>,
    /// Per-component counters (queues, links), JSON for `summary.json`.
    pub components: serde_json::Value,
    pub events: u64,
    /// A digest of the (time, event) sequence: equal digests mean identical event traces.
    pub event_digest: u64,
    pub sim_end: SimTime,
    /// Every RTT sample of every flow.
    pub rtt: crate::stats::RttSeries,
    /// Every video frame decoded or given up.
    pub frames: crate::stats::FrameSeries,
}

/// Runs `scenario` (already validated) with `seed`.
pub fn run(scenario: &Scenario, seed: u64, progress: Progress<'_>) -> Result<RunOutput, RunError> {
    let mut w = Built::world(scenario, seed);
    w.start();
    let mut n: u64 = 0;
    while let Some(t) = w.q.peek_time() {
        if t > w.end {
            break;
        }
        let (now, ev) = w.q.pop().expect("peeked");
        w.digest = (w.digest ^ now.as_ns().wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ev.tag()).wrapping_mul(0x0000_0100_0000_01b3);
        w.handle(now, ev);
        n += 1;
        if n & 0xffff == 0 && !progress(now) {
            return Err(RunError::Interrupted(now));
        }
    }
    progress(w.end);
    Ok(w.finish())
}

impl World {
    fn start(&mut self) {
        for i in 0..self.sources.len() {
            let s = &mut self.sources[i];
            match &mut s.kind {
                SourceKind::Udp(u) => {
                    if let Some(t) = u.first(&mut s.rng) {
                        self.q.schedule(t, Event::Send { flow: i as u32 });
                    }
                }
                SourceKind::Saturated { start, stop, backlog } => {
                    if *start < *stop {
                        for _ in 0..*backlog {
                            self.q.schedule(*start, Event::Send { flow: i as u32 });
                        }
                    }
                }
                SourceKind::Tcp(t) => {
                    if t.start < t.stop {
                        let at = t.start;
                        t.timer = Some((self.q.schedule(at, Event::FlowTimer { flow: i as u32 }), at));
                    }
                }
                SourceKind::Rtc(_) => self.rtc_rearm(i as u32),
            }
        }
    }

    fn handle(&mut self, now: SimTime, ev: Event) {
        match ev {
            Event::Send { flow } => self.on_send(now, flow),
            Event::PipeTxEnd { pipe } => self.on_pipe_tx_end(now, pipe),
            Event::PipeArrive { pipe, pkt } => {
                let at = match self.pipes[pipe as usize].target {
                    PipeTarget::Node(n) => n,
                    PipeTarget::Destination => pkt.dst,
                };
                self.arrive(now, at, pkt);
            }
            Event::FlowTimer { flow } => self.on_flow_timer(now, flow),
            Event::Mech { ap } => self.on_mech_timer(now, ap as usize),
            Event::Wifi(ev) => {
                let m = self.medium.as_mut().expect("Wi-Fi events need a medium");
                let air_started = (!self.mechs.is_empty()).then_some(&mut self.air_started);
                let mut out = Outputs { log: &mut self.log, delivered: &mut self.delivered, dropped: &mut self.drops, air_started };
                m.handle(now, ev, &mut WifiSched(&mut self.q), &mut out);
                self.drain(now);
            }
        }
    }

    /// Processes what the medium delivered and dropped.
    fn drain(&mut self, now: SimTime) {
        self.drain_air_started(now);
        while let Some(d) = self.drops.pop() {
            self.dropped(now, d);
        }
        let mut i = 0;
        while i < self.delivered.len() {
            let (at, pkt) = self.delivered[i];
            i += 1;
            if let Some(&Some(m)) = self.mech_of_station.get(at as usize) {
                if self.mechs[m].down_pipe.is_none() {
                    self.mech_departed(now, m, pkt.id, pkt.dst);
                }
            }
            self.arrive(now, at, pkt);
        }
        self.delivered.clear();
    }

    fn on_send(&mut self, now: SimTime, flow: u32) {
        let s = &mut self.sources[flow as usize];
        let pkt = Packet {
            id: self.next_packet_id,
            flow,
            seq: s.seq,
            size: s.packet_bytes,
            src: s.src,
            dst: s.dst,
            dscp: s.dscp,
            sent: now,
            enqueued: now,
            hdr: crate::packet::Hdr::None,
        };
        s.seq += 1;
        self.next_packet_id += 1;
        if let SourceKind::Udp(u) = &mut s.kind {
            if let Some(t) = u.advance(&mut s.rng) {
                self.q.schedule(t, Event::Send { flow });
            }
        }
        self.log.open(&pkt);
        self.trackers[flow as usize].on_sent(&pkt);
        self.arrive(now, pkt.src, pkt);
    }

    /// A packet is at node `at`: deliver it or forward it along its route.
    pub(crate) fn arrive(&mut self, now: SimTime, at: NodeId, mut pkt: Packet) {
        if at == pkt.dst {
            self.log.stamp(pkt.id, Stage::Delivered, now);
            if !self.mechs.is_empty() {
                self.mech_delivered(now, &pkt);
            }
            if self.sources[pkt.flow as usize].echo {
                self.echo(now, pkt);
                return;
            }
            match pkt.hdr {
                crate::packet::Hdr::Tcp { seq, len, ack, ts_echo, .. } => {
                    self.tcp_arrival(now, pkt, seq, len, ack, ts_echo);
                    return;
                }
                crate::packet::Hdr::Rtp { .. } => {
                    self.rtp_arrival(now, pkt);
                    return;
                }
                crate::packet::Hdr::Rtcp { .. } => {
                    self.rtcp_arrival(now, pkt);
                    return;
                }
                crate::packet::Hdr::None => {}
            }
            self.trackers[pkt.flow as usize].on_delivered(&pkt, pkt.sent, now);
            self.refill(now, pkt.flow);
            return;
        }
        let hop = self.route[at as usize][pkt.dst as usize].expect("validated scenarios are routable");
        if let Some(m) = self.mech_at(at) {
            if self.mech_of_station.get(pkt.src as usize).copied().flatten() == Some(m) {
                if self.mech_uplink(now, m, pkt) {
                    return;
                }
            } else {
                self.mech_downlink(now, m, &mut pkt, hop);
            }
        }
        let pipe = match hop {
            Hop::Pipe(p) => p,
            Hop::Wifi(next) => {
                let m = self.medium.as_mut().expect("Wi-Fi hops need a medium");
                let air_started = (!self.mechs.is_empty()).then_some(&mut self.air_started);
                let mut out = Outputs { log: &mut self.log, delivered: &mut self.delivered, dropped: &mut self.drops, air_started };
                m.enqueue(now, at, next, pkt, &mut WifiSched(&mut self.q), &mut out);
                self.drain_air_started(now);
                if !self.drops.is_empty() {
                    let ds: Vec<Dropped> = self.drops.drain(..).collect();
                    for d in ds {
                        self.dropped(now, d);
                    }
                }
                return;
            }
        };
        let p = &mut self.pipes[pipe as usize];
        self.log.stamp(pkt.id, p.stage_enq, now);
        let r = p.offer(now, pkt);
        // fq_codel may cut other flows' packets to admit this one.
        p.queue.drain_drops(&mut self.drops);
        match r {
            Ok(()) => self.kick_pipe(now, pipe),
            Err(d) => self.dropped(now, d),
        }
        while let Some(d) = self.drops.pop() {
            self.dropped(now, d);
        }
    }

    fn kick_pipe(&mut self, now: SimTime, pipe: u32) {
        let p = &mut self.pipes[pipe as usize];
        if let Some((pkt, end)) = p.start_next(now, &mut self.drops) {
            self.log.stamp(pkt.id, p.stage_tx, now);
            if p.is_last_hop {
                self.log.stamp_first(pkt.id, Stage::AirStart, now);
            }
            self.q.schedule(end, Event::PipeTxEnd { pipe });
            if !self.mechs.is_empty() {
                self.mech_pipe_start(now, pipe, &pkt);
            }
        }
        while let Some(d) = self.drops.pop() {
            self.dropped(now, d);
        }
    }

    fn on_pipe_tx_end(&mut self, now: SimTime, pipe: u32) {
        let p = &mut self.pipes[pipe as usize];
        let pkt = p.finish();
        if p.is_last_hop {
            self.log.stamp(pkt.id, Stage::AirEnd, now);
        }
        let at = now + p.delay;
        self.q.schedule(at, Event::PipeArrive { pipe, pkt });
        if let Some(&Some(m)) = self.mech_of_pipe.get(pipe as usize) {
            self.mech_departed(now, m, pkt.id, pkt.dst);
        }
        self.kick_pipe(now, pipe);
    }

    fn dropped(&mut self, now: SimTime, (pkt, reason): Dropped) {
        debug_assert_ne!(reason, DropReason::None);
        self.log.drop(pkt.id, reason);
        if !self.mechs.is_empty() {
            self.mech_dropped(now, &pkt);
        }
        let origin = self.echo_origin.remove(&pkt.id).unwrap_or(pkt.sent);
        self.sack_blocks.remove(&pkt.id);
        self.rtp.remove(&pkt.id);
        self.rtcp.remove(&pkt.id);
        // Feedback against the flow's direction (TCP ACKs, RTCP) is not the flow's loss.
        let feedback = matches!(pkt.hdr, crate::packet::Hdr::Tcp { len: 0, .. } | crate::packet::Hdr::Rtcp { .. });
        if !feedback {
            self.trackers[pkt.flow as usize].on_dropped(origin, pkt.seq);
        }
        self.refill(now, pkt.flow);
    }

    /// An echo packet arrived at its destination: a request is answered, a reply ends a round trip.
    fn echo(&mut self, now: SimTime, pkt: Packet) {
        match self.echo_origin.remove(&pkt.id) {
            Some(origin) => self.trackers[pkt.flow as usize].on_delivered(&pkt, origin, now),
            None => {
                let reply = Packet { id: self.next_packet_id, src: pkt.dst, dst: pkt.src, sent: now, enqueued: now, ..pkt };
                self.next_packet_id += 1;
                self.log.open(&reply);
                self.log.mark_reverse(reply.id);
                self.echo_origin.insert(reply.id, pkt.sent);
                self.arrive(now, reply.src, reply);
            }
        }
    }

    /// Emits a packet of flow `flow` from `src` to `dst` (a TCP segment or ACK, an echo reply).
    pub(crate) fn emit(&mut self, now: SimTime, flow: u32, seq: u64, size: u32, (src, dst): (NodeId, NodeId), hdr: crate::packet::Hdr) -> Packet {
        let dscp = self.sources[flow as usize].dscp;
        let pkt = Packet { id: self.next_packet_id, flow, seq, size, src, dst, dscp, sent: now, enqueued: now, hdr };
        self.next_packet_id += 1;
        self.log.open(&pkt);
        pkt
    }

    /// Sends what the TCP sender of `flow` may send now, then re-arms the flow's timer.
    fn tcp_pump(&mut self, now: SimTime, flow: u32) {
        let (src, dst) = (self.sources[flow as usize].src, self.sources[flow as usize].dst);
        if let SourceKind::Tcp(t) = &mut self.sources[flow as usize].kind {
            if let Some(v) = &mut t.video {
                let unsent = t.sender.unsent();
                if let Some(f) = v.sender.poll(now, unsent) {
                    t.sender.write(f.bytes);
                    v.receiver.on_written(f.id, f.capture, f.end);
                    v.sender.on_unsent(now, t.sender.unsent());
                }
            }
        }
        loop {
            let SourceKind::Tcp(t) = &mut self.sources[flow as usize].kind else { return };
            if now >= t.stop {
                break;
            }
            let Some(seg) = t.sender.poll_send(now) else { break };
            if let Some(v) = &mut t.video {
                v.sender.on_unsent(now, t.sender.unsent());
            }
            let hdr = crate::packet::Hdr::Tcp { seq: seg.seq, len: seg.len, ack: 0, ts_echo: SimTime::ZERO, ecn: Default::default() };
            let pkt = self.emit(now, flow, seg.seq, seg.len + crate::transport::tcp::HEADER_BYTES, (src, dst), hdr);
            self.trackers[flow as usize].on_sent(&pkt);
            self.arrive(now, src, pkt);
        }
        self.tcp_rearm(flow);
    }

    fn tcp_rearm(&mut self, flow: u32) {
        let SourceKind::Tcp(t) = &mut self.sources[flow as usize].kind else { return };
        let now = self.q.now();
        let video = t.video.as_ref().and_then(|v| v.sender.next_wakeup());
        let next = [t.sender.next_wakeup(now).filter(|&w| w < t.stop), t.receiver.next_wakeup(), video].into_iter().flatten().min();
        rearm(&mut self.q, &mut t.timer, next, Event::FlowTimer { flow });
    }

    fn on_flow_timer(&mut self, now: SimTime, flow: u32) {
        if let SourceKind::Rtc(r) = &mut self.sources[flow as usize].kind {
            r.timer = None;
            self.rtc_poll(now, flow);
            return;
        }
        let SourceKind::Tcp(t) = &mut self.sources[flow as usize].kind else { return };
        t.timer = None;
        t.sender.on_timer(now);
        if let Some(a) = t.receiver.on_timer(now) {
            self.tcp_send_ack(now, flow, a);
        }
        self.tcp_pump(now, flow);
    }

    fn tcp_send_ack(&mut self, now: SimTime, flow: u32, a: crate::transport::tcp::Ack) {
        let (src, dst) = (self.sources[flow as usize].src, self.sources[flow as usize].dst);
        let SourceKind::Tcp(t) = &self.sources[flow as usize].kind else { return };
        let blocks = t.receiver.sack_blocks();
        let hdr = crate::packet::Hdr::Tcp { seq: 0, len: 0, ack: a.ack, ts_echo: a.ts_echo, ecn: t.ecn_echo };
        let pkt = self.emit(now, flow, a.ack, crate::transport::tcp::HEADER_BYTES, (dst, src), hdr);
        self.log.mark_reverse(pkt.id);
        if !blocks.is_empty() {
            self.sack_blocks.insert(pkt.id, blocks);
        }
        self.arrive(now, dst, pkt);
    }

    /// A TCP segment reached the receiver, or an ACK reached the sender.
    fn tcp_arrival(&mut self, now: SimTime, pkt: Packet, seq: u64, len: u32, ack: u64, ts_echo: SimTime) {
        let flow = pkt.flow;
        if len > 0 {
            self.trackers[flow as usize].on_delivered(&pkt, pkt.sent, now);
            let SourceKind::Tcp(t) = &mut self.sources[flow as usize].kind else { return };
            if let crate::packet::Hdr::Tcp { ecn, .. } = pkt.hdr {
                t.ecn_echo = ecn;
            }
            let before = t.receiver.delivered_bytes;
            let ack = t.receiver.on_segment(now, seq, len, pkt.sent);
            let after = t.receiver.delivered_bytes;
            if let Some(v) = &mut t.video {
                v.receiver.on_delivered(now, after);
            }
            self.trackers[flow as usize].on_goodput(now, before, after);
            if let Some(a) = ack {
                self.tcp_send_ack(now, flow, a);
            }
            self.tcp_rearm(flow);
        } else {
            let blocks = self.sack_blocks.remove(&pkt.id).unwrap_or_default();
            if ts_echo > SimTime::ZERO {
                self.trackers[flow as usize].on_rtt(now, now - ts_echo);
            }
            let SourceKind::Tcp(t) = &mut self.sources[flow as usize].kind else { return };
            t.sender.on_ack(now, ack, &blocks, ts_echo);
            if let crate::packet::Hdr::Tcp { ecn, .. } = pkt.hdr {
                if ecn != crate::packet::Ecn::NotEct {
                    t.sender.on_ecn_echo(now, ecn);
                }
            }
            self.tcp_pump(now, flow);
        }
    }

    /// Does what the RTC call of `flow` has due now and sends what it produced.
    fn rtc_poll(&mut self, now: SimTime, flow: u32) {
        let (mut send, mut feedback) = (Vec::new(), Vec::new());
        if let SourceKind::Rtc(r) = &mut self.sources[flow as usize].kind {
            r.session.poll(now, &mut send, &mut feedback);
        }
        self.rtc_send(now, flow, send, feedback);
        self.rtc_rearm(flow);
    }

    /// Puts RTP packets on the forward path and RTCP packets on the reverse path.
    fn rtc_send(&mut self, now: SimTime, flow: u32, send: Vec<crate::rtc::rtp::RtpPacket>, feedback: Vec<crate::app::rtc::Rtcp>) {
        let (src, dst) = (self.sources[flow as usize].src, self.sources[flow as usize].dst);
        for p in send {
            let (frame, index, count, fec) = match &p.payload {
                crate::rtc::rtp::Payload::Media(m) => (m.frame_id as u32, m.index, m.count, false),
                crate::rtc::rtp::Payload::Repair(_) => (0, 0, 0, true),
                crate::rtc::rtp::Payload::Padding => (0, 0, 0, false),
            };
            let twcc = p.transport_seq.unwrap_or(0) as u32;
            let hdr = crate::packet::Hdr::Rtp { twcc, frame, index, count, fec, rtx: p.retransmission };
            let seq = self.sources[flow as usize].seq;
            self.sources[flow as usize].seq += 1;
            let pkt = self.emit(now, flow, seq, p.wire_bytes() as u32, (src, dst), hdr);
            self.rtp.insert(pkt.id, p);
            self.trackers[flow as usize].on_sent(&pkt);
            self.arrive(now, src, pkt);
        }
        for m in feedback {
            let pkt = self.emit(now, flow, 0, m.wire_bytes(), (dst, src), crate::packet::Hdr::Rtcp { report: 0 });
            self.log.mark_reverse(pkt.id);
            self.rtcp.insert(pkt.id, m);
            self.arrive(now, dst, pkt);
        }
    }

    fn rtc_rearm(&mut self, flow: u32) {
        let SourceKind::Rtc(r) = &mut self.sources[flow as usize].kind else { return };
        let next = r.session.next_wakeup().filter(|&t| t <= self.end);
        rearm(&mut self.q, &mut r.timer, next, Event::FlowTimer { flow });
    }

    /// An RTP packet reached the receiver of its call.
    fn rtp_arrival(&mut self, now: SimTime, pkt: Packet) {
        let flow = pkt.flow;
        self.trackers[flow as usize].on_delivered(&pkt, pkt.sent, now);
        let Some(p) = self.rtp.remove(&pkt.id) else { return };
        let mut feedback = Vec::new();
        if let SourceKind::Rtc(r) = &mut self.sources[flow as usize].kind {
            r.session.on_rtp(now, &p, &mut feedback);
        }
        self.rtc_send(now, flow, Vec::new(), feedback);
        self.rtc_rearm(flow);
    }

    /// An RTCP packet reached the sender of its call.
    fn rtcp_arrival(&mut self, now: SimTime, pkt: Packet) {
        let flow = pkt.flow;
        let Some(m) = self.rtcp.remove(&pkt.id) else { return };
        if let SourceKind::Rtc(r) = &mut self.sources[flow as usize].kind {
            r.session.on_rtcp(now, &m);
        }
        self.rtc_poll(now, flow);
    }

    /// A saturated flow replaces every packet that left the network.
    fn refill(&mut self, now: SimTime, flow: u32) {
        if let SourceKind::Saturated { stop, .. } = self.sources[flow as usize].kind {
            if now < stop {
                self.on_send(now, flow);
            }
        }
    }

    fn finish(mut self) -> RunOutput {
        for (s, tr) in self.sources.iter().zip(self.trackers.iter_mut()) {
            if let SourceKind::Rtc(r) = &s.kind {
                let rtt: Vec<(SimTime, crate::time::SimDuration)> = r.session.samples.rtt.clone();
                for (at, v) in rtt {
                    tr.on_rtt(at, v);
                }
                let frame_bytes = r.session.samples.frames.iter().filter(|(t, _)| *t >= tr.measure_from && *t < tr.measure_to).map(|f| f.1).sum();
                tr.video = Some((r.session.report(r.deadline), frame_bytes));
            }
            if let SourceKind::Tcp(t) = &s.kind {
                if let Some(v) = &t.video {
                    let frame_bytes = v.sender.frames.iter().filter(|(c, _)| *c >= tr.measure_from && *c < tr.measure_to).map(|f| f.1).sum();
                    tr.video = Some((v.receiver.quality.report(v.deadline), frame_bytes));
                }
            }
        }
        let mut rtt = crate::stats::RttSeries::default();
        let mut frames = crate::stats::FrameSeries::default();
        for (i, (s, tr)) in self.sources.iter().zip(&self.trackers).enumerate() {
            let i = i as u32;
            for &(t, v) in &tr.rtt_series {
                rtt.push(i, t, v);
            }
            let mut log: Vec<(u64, SimTime, SimTime, bool)> = Vec::new();
            match &s.kind {
                SourceKind::Rtc(r) => {
                    let smp = &r.session.samples;
                    log.extend(r.session.quality.decoded_log.iter().map(|&(id, c, d)| (id, c, d, false)));
                    log.extend(smp.dropped.iter().filter_map(|&(id, at)| smp.frames.get(id as usize).map(|f| (id, f.0, at, true))));
                }
                SourceKind::Tcp(t) => {
                    if let Some(v) = &t.video {
                        log.extend(v.receiver.quality.decoded_log.iter().map(|&(id, c, d)| (id, c, d, false)));
                    }
                }
                _ => {}
            }
            log.sort_by_key(|x| x.0);
            for (id, c, d, dropped) in log {
                frames.push(i, id, c, d, dropped);
            }
        }
        let flows = self.trackers.iter_mut().map(|t| t.summarize()).collect();
        let links: Vec<serde_json::Value> = self
            .pipes
            .iter()
            .map(|p| {
                serde_json::json!({
                    "link": p.name,
                    "queue": p.queue.stats(),
                    "utilization": p.busy_ns as f64 / self.end.as_ns().max(1) as f64,
                })
            })
            .collect();
        let wifi = self.medium.as_ref().map(|m| m.stats());
        let transports: Vec<serde_json::Value> = self
            .sources
            .iter()
            .zip(&self.trackers)
            .filter_map(|(s, tr)| match &s.kind {
                SourceKind::Tcp(t) => Some(serde_json::json!({
                    "flow": tr.name,
                    "sender": t.sender.stats(),
                    "goodput_bytes": t.receiver.delivered_bytes,
                })),
                SourceKind::Rtc(r) => Some(serde_json::json!({ "flow": tr.name, "rtc": r.session.stats() })),
                _ => None,
            })
            .collect();
        RunOutput {
            packets: self.log,
            flows,
            components: serde_json::json!({
                "links": links,
                "wifi": wifi,
                "transports": transports,
                "mechanisms": self.mechs.iter().map(|m| m.stats()).collect::<Vec<_>>(),
            }),
            events: self.q.events_processed(),
            event_digest: self.digest,
            sim_end: self.end,
            rtt,
            frames,
        }
    }
}
