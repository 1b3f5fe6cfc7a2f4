//! The flows' endpoints: what each kind of flow sends, and what its ends do with what arrives (UDP
//! and saturated sources, echo, TCP with its video application, RTC calls, external packets).

use crate::payload::Payload;
use super::world::{rearm, Event, World};
use crate::app::UdpSource;
use crate::engine::TimerId;
use crate::packet::{Hdr, NodeId, Packet};
use crate::rng::Rng;
use crate::stats::Stage;
use crate::time::SimTime;

/// How a flow generates packets.
pub(crate) enum SourceKind {
    Udp(UdpSource),
    /// Closed loop: one new packet per delivered or dropped one, until `stop`.
    Saturated { start: SimTime, stop: SimTime, backlog: u32 },
    /// A TCP connection: both ends and the flow's pending timer.
    Tcp(Box<TcpFlow>),
    /// An RTC video call: both ends and the flow's pending timer.
    Rtc(Box<RtcFlow>),
    /// Packets handed in from outside (`Sim::inject`); delivered ones go out through `Sim::drain_egress`.
    External,
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

impl World {
    /// A packet reached its destination node: its endpoint takes it.
    pub(super) fn deliver(&mut self, now: SimTime, pkt: Packet) {
        self.log.stamp(pkt.id, Stage::Delivered, now);
        if !self.mechs.is_empty() {
            self.mech_delivered(now, &pkt);
        }
        let src = &self.sources[pkt.flow as usize];
        if src.echo {
            self.echo(now, pkt);
            return;
        }
        match pkt.hdr {
            Hdr::Tcp { seq, len, ack, ts_echo, .. } => return self.tcp_arrival(now, pkt, seq, len, ack, ts_echo),
            Hdr::Rtp { .. } => return self.rtp_arrival(now, pkt),
            Hdr::Rtcp { .. } => return self.rtcp_arrival(now, pkt),
            Hdr::None => {}
        }
        if let SourceKind::External = src.kind {
            let reverse = pkt.src == src.dst;
            if !reverse {
                self.trackers[pkt.flow as usize].on_delivered(&pkt, pkt.sent, now);
            }
            self.egress.push(super::Egress { flow: pkt.flow, reverse, id: pkt.id, size: pkt.size, dscp: pkt.dscp, sent: pkt.sent, delivered: now });
            return;
        }
        self.trackers[pkt.flow as usize].on_delivered(&pkt, pkt.sent, now);
        self.refill(now, &pkt, crate::stats::DropReason::None);
    }

    pub(super) fn start(&mut self) {
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
                SourceKind::External => {}
            }
        }
    }


    pub(super) fn on_send(&mut self, now: SimTime, flow: u32) {
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
            hdr: Hdr::None,
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

    /// An echo packet arrived at its destination: a request is answered, a reply ends a round trip.
    pub(super) fn echo(&mut self, now: SimTime, pkt: Packet) {
        match self.payloads.take_echo_origin(pkt.id) {
            Some(origin) => self.trackers[pkt.flow as usize].on_delivered(&pkt, origin, now),
            None => {
                let reply = Packet { id: self.next_packet_id, src: pkt.dst, dst: pkt.src, sent: now, enqueued: now, ..pkt };
                self.next_packet_id += 1;
                self.log.open(&reply);
                self.log.mark_reverse(reply.id);
                self.payloads.insert(reply.id, Payload::EchoOrigin(pkt.sent));
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
            let hdr = Hdr::Tcp { seq: seg.seq, len: seg.len, ack: 0, ts_echo: SimTime::ZERO, ecn: Default::default() };
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

    pub(super) fn on_flow_timer(&mut self, now: SimTime, flow: u32) {
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
        let hdr = Hdr::Tcp { seq: 0, len: 0, ack: a.ack, ts_echo: a.ts_echo, ecn: t.ecn_echo };
        let pkt = self.emit(now, flow, a.ack, crate::transport::tcp::HEADER_BYTES, (dst, src), hdr);
        self.log.mark_reverse(pkt.id);
        if !blocks.is_empty() {
            self.payloads.insert(pkt.id, Payload::Sack(blocks));
        }
        self.arrive(now, dst, pkt);
    }

    /// A TCP segment reached the receiver, or an ACK reached the sender.
    pub(super) fn tcp_arrival(&mut self, now: SimTime, pkt: Packet, seq: u64, len: u32, ack: u64, ts_echo: SimTime) {
        let flow = pkt.flow;
        if len > 0 {
            self.trackers[flow as usize].on_delivered(&pkt, pkt.sent, now);
            let SourceKind::Tcp(t) = &mut self.sources[flow as usize].kind else { return };
            if let Hdr::Tcp { ecn, .. } = pkt.hdr {
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
            let blocks = self.payloads.take_sack(pkt.id).unwrap_or_default();
            if ts_echo > SimTime::ZERO {
                self.trackers[flow as usize].on_rtt(now, now - ts_echo);
            }
            let SourceKind::Tcp(t) = &mut self.sources[flow as usize].kind else { return };
            t.sender.on_ack(now, ack, &blocks, ts_echo);
            if let Hdr::Tcp { ecn, .. } = pkt.hdr {
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
            let hdr = Hdr::Rtp { twcc, frame, index, count, fec, rtx: p.retransmission };
            let seq = self.sources[flow as usize].seq;
            self.sources[flow as usize].seq += 1;
            let pkt = self.emit(now, flow, seq, p.wire_bytes() as u32, (src, dst), hdr);
            self.payloads.insert(pkt.id, Payload::Rtp(p));
            self.trackers[flow as usize].on_sent(&pkt);
            self.arrive(now, src, pkt);
        }
        for m in feedback {
            let pkt = self.emit(now, flow, 0, m.wire_bytes(), (dst, src), Hdr::Rtcp { report: 0 });
            self.log.mark_reverse(pkt.id);
            self.payloads.insert(pkt.id, Payload::Rtcp(m));
            self.arrive(now, dst, pkt);
        }
    }

    fn rtc_rearm(&mut self, flow: u32) {
        let SourceKind::Rtc(r) = &mut self.sources[flow as usize].kind else { return };
        let next = r.session.next_wakeup().filter(|&t| t <= self.end);
        rearm(&mut self.q, &mut r.timer, next, Event::FlowTimer { flow });
    }

    /// An RTP packet reached the receiver of its call.
    pub(super) fn rtp_arrival(&mut self, now: SimTime, pkt: Packet) {
        let flow = pkt.flow;
        self.trackers[flow as usize].on_delivered(&pkt, pkt.sent, now);
        let Some(p) = self.payloads.take_rtp(pkt.id) else { return };
        let mut feedback = Vec::new();
        if let SourceKind::Rtc(r) = &mut self.sources[flow as usize].kind {
            r.session.on_rtp(now, &p, &mut feedback);
        }
        self.rtc_send(now, flow, Vec::new(), feedback);
        self.rtc_rearm(flow);
    }

    /// An RTCP packet reached the sender of its call.
    pub(super) fn rtcp_arrival(&mut self, now: SimTime, pkt: Packet) {
        let flow = pkt.flow;
        let Some(m) = self.payloads.take_rtcp(pkt.id) else { return };
        if let SourceKind::Rtc(r) = &mut self.sources[flow as usize].kind {
            r.session.on_rtcp(now, &m);
        }
        self.rtc_poll(now, flow);
    }

    /// A saturated flow replaces every packet that left the network, except one refused by a full
    /// queue the instant it was sent: the application's send would block there, so a backlog larger
    /// than the queues settles at what they hold (replacing it at once would loop forever).
    pub(super) fn refill(&mut self, now: SimTime, pkt: &Packet, reason: crate::stats::DropReason) {
        let flow = pkt.flow;
        if reason == crate::stats::DropReason::QueueFull && pkt.sent == now {
            return;
        }
        if let SourceKind::Saturated { stop, .. } = self.sources[flow as usize].kind {
            if now < stop {
                self.on_send(now, flow);
            }
        }
    }

}
