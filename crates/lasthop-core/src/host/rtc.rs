//! An RTC video call (both ends): RTP media forward, RTCP feedback back.

use super::{rearm, FrameRecord, Host, Socket, Wake};
use crate::app::rtc::{Rtcp, RtcSession};
use crate::engine::TimerId;
use crate::packet::{Hdr, Packet};
use crate::payload::Payload;
use crate::rtc::rtp::RtpPacket;
use crate::stats::FlowTracker;
use crate::time::{SimDuration, SimTime};

/// Both ends of a call and the flow's pending timer.
pub struct RtcHost {
    session: RtcSession,
    /// A frame decoded later than this after capture counts as late.
    deadline: SimDuration,
    timer: Option<(TimerId, SimTime)>,
    seq: u64,
}

impl std::fmt::Debug for RtcHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RtcHost").field("deadline", &self.deadline).field("seq", &self.seq).finish_non_exhaustive()
    }
}

impl RtcHost {
    pub fn new(session: RtcSession, deadline: SimDuration) -> Self {
        RtcHost { session, deadline, timer: None, seq: 0 }
    }

    /// Does what the call has due now and sends what it produced.
    fn poll(&mut self, s: &mut dyn Socket) {
        let (mut send, mut feedback) = (Vec::new(), Vec::new());
        self.session.poll(s.now(), &mut send, &mut feedback);
        self.send(send, feedback, s);
        self.rearm(s);
    }

    /// Puts RTP packets on the forward path and RTCP packets on the reverse path.
    fn send(&mut self, media: Vec<RtpPacket>, feedback: Vec<Rtcp>, s: &mut dyn Socket) {
        for p in media {
            let (frame, index, count, fec) = match &p.payload {
                crate::rtc::rtp::Payload::Media(m) => (m.frame_id as u32, m.index, m.count, false),
                crate::rtc::rtp::Payload::Repair(_) => (0, 0, 0, true),
                crate::rtc::rtp::Payload::Padding => (0, 0, 0, false),
            };
            let twcc = p.transport_seq.unwrap_or(0) as u32;
            let hdr = Hdr::Rtp { twcc, frame, index, count, fec, rtx: p.retransmission };
            let pkt = s.open(self.seq, p.wire_bytes() as u32, false, hdr);
            self.seq += 1;
            s.tracker().on_sent(&pkt);
            s.send(pkt, Some(Payload::Rtp(p)));
        }
        for m in feedback {
            let pkt = s.open(0, m.wire_bytes(), true, Hdr::Rtcp { report: 0 });
            s.send(pkt, Some(Payload::Rtcp(m)));
        }
    }

    fn rearm(&mut self, s: &mut dyn Socket) {
        let end = s.end();
        let next = self.session.next_wakeup().filter(|&t| t <= end);
        rearm(s, &mut self.timer, next);
    }
}

impl Host for RtcHost {
    fn start(&mut self, s: &mut dyn Socket) {
        self.rearm(s);
    }

    fn on_wake(&mut self, _wake: Wake, s: &mut dyn Socket) {
        self.timer = None;
        self.poll(s);
    }

    fn on_packet(&mut self, pkt: Packet, payload: Option<Payload>, s: &mut dyn Socket) {
        let now = s.now();
        match (pkt.hdr, payload) {
            (Hdr::Rtp { .. }, p) => {
                s.tracker().on_delivered(&pkt, pkt.sent, now);
                let Some(Payload::Rtp(p)) = p else { return };
                let mut feedback = Vec::new();
                self.session.on_rtp(now, &p, &mut feedback);
                self.send(Vec::new(), feedback, s);
                self.rearm(s);
            }
            (Hdr::Rtcp { .. }, Some(Payload::Rtcp(m))) => {
                self.session.on_rtcp(now, &m);
                // RTT samples go to the flow's metrics as they are taken (a long call keeps none).
                for (at, v) in std::mem::take(&mut self.session.samples.rtt) {
                    s.tracker().on_rtt(at, v);
                }
                self.poll(s);
            }
            _ => {}
        }
    }

    fn finish(&mut self, tr: &mut FlowTracker) {
        // Frames are captured before the sender stops, and the tracker's window runs from the
        // session's measurement start to at least that stop.
        debug_assert_eq!(tr.measure_from, self.session.measure_from());
        tr.video = Some((self.session.report(self.deadline), self.session.samples.frame_bytes));
    }

    fn take_frames(&mut self, before: SimTime) -> Vec<FrameRecord> {
        self.session.quality.take_log(before)
    }

    fn stats(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "rtc": self.session.stats() }))
    }
}
