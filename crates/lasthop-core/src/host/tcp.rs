//! A TCP connection (both ends), bulk or carrying a video application (`tcp_video`).

use super::{rearm, FrameRecord, Host, Socket, Wake};
use crate::app::tcp_video::{TcpVideoReceiver, TcpVideoSender};
use crate::engine::TimerId;
use crate::packet::{Ecn, Hdr, Packet};
use crate::payload::Payload;
use crate::stats::FlowTracker;
use crate::time::{SimDuration, SimTime};
use crate::transport::tcp::{Ack, TcpReceiver, TcpSender, HEADER_BYTES};

/// Both ends of a video-over-TCP application.
#[derive(Debug)]
pub struct TcpVideoApp {
    pub sender: TcpVideoSender,
    pub receiver: TcpVideoReceiver,
    /// A frame decoded later than this after capture counts as late.
    pub deadline: SimDuration,
}

/// Both ends of a TCP connection and the flow's pending timer.
#[derive(Debug)]
pub struct TcpHost {
    sender: TcpSender,
    receiver: TcpReceiver,
    start: SimTime,
    stop: SimTime,
    timer: Option<(TimerId, SimTime)>,
    /// The ECN codepoint of the last data segment the receiver got, echoed in its ACKs (ABC).
    ecn_echo: Ecn,
    /// A video application writing frames into the connection (`tcp_video` flows).
    video: Option<Box<TcpVideoApp>>,
}

impl TcpHost {
    pub fn new(sender: TcpSender, receiver: TcpReceiver, (start, stop): (SimTime, SimTime), video: Option<TcpVideoApp>) -> Self {
        TcpHost { sender, receiver, start, stop, timer: None, ecn_echo: Ecn::default(), video: video.map(Box::new) }
    }

    /// Sends what the sender may send now (after the video application wrote its due frame), then
    /// re-arms the flow's timer.
    fn pump(&mut self, s: &mut dyn Socket) {
        let now = s.now();
        if let Some(v) = &mut self.video {
            if let Some(f) = v.sender.poll(now, self.sender.unsent()) {
                self.sender.write(f.bytes);
                v.receiver.on_written(f.id, f.capture, f.end);
                v.sender.on_unsent(now, self.sender.unsent());
            }
        }
        while now < self.stop {
            let Some(seg) = self.sender.poll_send(now) else { break };
            if let Some(v) = &mut self.video {
                v.sender.on_unsent(now, self.sender.unsent());
            }
            let hdr = Hdr::Tcp { seq: seg.seq, len: seg.len, ack: 0, ts_echo: SimTime::ZERO, ecn: Ecn::default() };
            let pkt = s.open(seg.seq, seg.len + HEADER_BYTES, false, hdr);
            s.tracker().on_sent(&pkt);
            s.send(pkt, None);
        }
        self.rearm(s);
    }

    fn rearm(&mut self, s: &mut dyn Socket) {
        let now = s.now();
        let video = self.video.as_ref().and_then(|v| v.sender.next_wakeup());
        let next = SimTime::earliest([self.sender.next_wakeup(now).filter(|&w| w < self.stop), self.receiver.next_wakeup(), video]);
        rearm(s, &mut self.timer, next);
    }

    fn send_ack(&mut self, a: Ack, s: &mut dyn Socket) {
        let blocks = self.receiver.sack_blocks();
        let hdr = Hdr::Tcp { seq: 0, len: 0, ack: a.ack, ts_echo: a.ts_echo, ecn: self.ecn_echo };
        let pkt = s.open(a.ack, HEADER_BYTES, true, hdr);
        s.send(pkt, (!blocks.is_empty()).then_some(Payload::Sack(blocks)));
    }

    /// A data segment reached the receiver.
    fn on_segment(&mut self, pkt: &Packet, (seq, len): (u64, u32), ecn: Ecn, s: &mut dyn Socket) {
        let now = s.now();
        s.tracker().on_delivered(pkt, pkt.sent, now);
        self.ecn_echo = ecn;
        let before = self.receiver.delivered_bytes;
        let ack = self.receiver.on_segment(now, seq, len, pkt.sent);
        let after = self.receiver.delivered_bytes;
        if let Some(v) = &mut self.video {
            v.receiver.on_delivered(now, after);
        }
        s.tracker().on_goodput(now, before, after);
        if let Some(a) = ack {
            self.send_ack(a, s);
        }
        self.rearm(s);
    }

    /// An ACK reached the sender.
    fn on_ack(&mut self, (ack, ts_echo): (u64, SimTime), ecn: Ecn, blocks: &[(u64, u64)], s: &mut dyn Socket) {
        let now = s.now();
        if ts_echo > SimTime::ZERO {
            s.tracker().on_rtt(now, now - ts_echo);
        }
        self.sender.on_ack(now, ack, blocks, ts_echo);
        if ecn != Ecn::NotEct {
            self.sender.on_ecn_echo(now, ecn);
        }
        self.pump(s);
    }
}

impl Host for TcpHost {
    fn start(&mut self, s: &mut dyn Socket) {
        if self.start < self.stop {
            rearm(s, &mut self.timer, Some(self.start));
        }
    }

    fn on_wake(&mut self, _wake: Wake, s: &mut dyn Socket) {
        let now = s.now();
        self.timer = None;
        self.sender.on_timer(now);
        if let Some(a) = self.receiver.on_timer(now) {
            self.send_ack(a, s);
        }
        self.pump(s);
    }

    fn on_packet(&mut self, pkt: Packet, payload: Option<Payload>, s: &mut dyn Socket) {
        let Hdr::Tcp { seq, len, ack, ts_echo, ecn } = pkt.hdr else { return };
        if len > 0 {
            self.on_segment(&pkt, (seq, len), ecn, s);
        } else {
            let blocks = match payload {
                Some(Payload::Sack(b)) => b,
                _ => Vec::new(),
            };
            self.on_ack((ack, ts_echo), ecn, &blocks, s);
        }
    }

    fn finish(&mut self, tr: &mut FlowTracker) {
        if let Some(v) = &self.video {
            debug_assert_eq!(tr.measure_from, v.sender.measure_from());
            tr.video = Some((v.receiver.quality.report(v.deadline), v.sender.measured_bytes));
        }
    }

    fn take_frames(&mut self, before: SimTime) -> Vec<FrameRecord> {
        self.video.as_mut().map(|v| v.receiver.quality.take_log(before)).unwrap_or_default()
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let mut v = serde_json::json!({ "sender": self.sender.stats(), "goodput_bytes": self.receiver.delivered_bytes });
        if let Some(video) = &self.video {
            v["frames_skipped"] = video.sender.skipped.into();
        }
        Some(v)
    }
}
