//! An RTC video call end to end: the sender (frame source, FEC, pacer, RTX history, GCC or a fixed
//! bitrate) and the receiver (FEC rebuild, NACK, decoder, TWCC) of [`crate::rtc`], joined into one
//! state machine that the event loop carries packets for.
//!
//! The session never sees the network: it hands out [`RtpPacket`]s to send ([`RtcSession::poll`]) and
//! [`Rtcp`] messages for the reverse direction, and takes them back when they arrive
//! ([`RtcSession::on_rtp`], [`RtcSession::on_rtcp`]). Whoever carries them (the simulator's world, a
//! test loop, later the emulator) decides how long that takes and whether they arrive.
//!
//! RTT as the sender knows it comes from TWCC feedback, one sample per reported packet:
//! `feedback arrival − packet send time − (feedback creation − packet arrival)`, the per-packet form of
//! RTCP's LSR/DLSR (the feedback interval does not inflate it). The receiver learns the smoothed RTT
//! too (RTCP XR/DLRR), for its NACK timing.

use crate::rng::Rng;
use crate::rtc::fec::{FecEncoder, FecParams};
use crate::rtc::frames::{FrameSource, FrameSourceParams};
use crate::rtc::gcc::{Gcc, GccParams, SentPacket};
use crate::rtc::pacer::{Pacer, PacerParams};
use crate::rtc::quality::{QualityReport, VideoQuality};
use crate::rtc::receiver::{Receiver, ReceiverEvent, ReceiverParams};
use crate::rtc::rtp::{RtpPacket, UDP_IPV4_BYTES};
use crate::rtc::rtx::{RtxParams, RtxSender};
use crate::rtc::twcc::{TwccFeedback, TwccParams, TwccReceiver};
use crate::rtc::RtcParamError;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the sender picks its bitrate: `{ type = "gcc", ... }` (default) or `{ type = "fixed", rate_mbps = 10 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum RtcRateControl {
    /// Google congestion control over TWCC feedback (delay-based trendline, AIMD, loss-based).
    Gcc(GccParams),
    /// A constant target bitrate (FEC included), Mbit/s; feedback is still sent but ignored.
    Fixed { rate_mbps: f64 },
}

impl Default for RtcRateControl {
    fn default() -> Self {
        RtcRateControl::Gcc(GccParams::default())
    }
}

/// Everything an `rtc` flow can set; every table is optional (see [`crate::rtc`] for the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RtcParams {
    pub video: FrameSourceParams,
    pub fec: FecParams,
    pub pacer: PacerParams,
    pub twcc: TwccParams,
    pub rate_control: RtcRateControl,
    pub rtx: RtxParams,
    pub receiver: ReceiverParams,
}

impl RtcParams {
    /// The first invalid field, as (path inside the flow, reason).
    pub fn validate(&self) -> Result<(), (String, String)> {
        fn at(table: &'static str) -> impl Fn(RtcParamError) -> (String, String) {
            move |e| (format!("{table}.{}", e.field), e.reason.to_string())
        }
        self.video.validate().map_err(at("video"))?;
        self.fec.validate().map_err(at("fec"))?;
        self.pacer.validate().map_err(at("pacer"))?;
        self.twcc.validate().map_err(at("twcc"))?;
        self.receiver.validate().map_err(at("receiver"))?;
        match &self.rate_control {
            RtcRateControl::Gcc(g) => g.validate().map_err(at("rate_control"))?,
            RtcRateControl::Fixed { rate_mbps } => {
                if !(rate_mbps.is_finite() && *rate_mbps > 0.0 && *rate_mbps <= 10_000.0) {
                    return Err(("rate_control.rate_mbps".into(), "must be in (0, 10000]".into()));
                }
            }
        }
        Ok(())
    }
}

/// A feedback message from the receiver to the sender.
#[derive(Clone, Debug, PartialEq)]
pub enum RtcpBody {
    Twcc(TwccFeedback),
    /// Generic NACK (RFC 4585) for these media sequence numbers.
    Nack(Vec<u64>),
    /// Picture loss indication: send a keyframe.
    Pli,
}

/// An RTCP packet: the message and when it was created (the DLSR reference).
///
/// A TWCC message serves two purposes at the sender: congestion control (GCC) and RTT samples. A
/// feedback rewriter at the AP (Zhuge) separates them: the client's message goes on for RTT only (as
/// the Zhuge artifact forwards the client's per-packet acks and replaces only its rate feedback,
/// zhuge.md §6.4), and the AP's own message goes to GCC only (its arrival times are forecasts).
#[derive(Clone, Debug, PartialEq)]
pub struct Rtcp {
    pub body: RtcpBody,
    pub created: SimTime,
    /// Feed a TWCC body to the congestion controller.
    pub for_cc: bool,
    /// Take RTT samples from a TWCC body.
    pub for_rtt: bool,
}

impl Rtcp {
    /// IP packet size: the RTCP message plus UDP/IPv4.
    pub fn wire_bytes(&self) -> u32 {
        let rtcp = match &self.body {
            RtcpBody::Twcc(fb) => fb.encoded_len() as u32,
            // Header + SSRCs (12), one 4-byte FCI (PID + 16-bit mask) per 17 consecutive seqs at most.
            RtcpBody::Nack(seqs) => 12 + 4 * nack_fci_count(seqs),
            RtcpBody::Pli => 12,
        };
        // A receiver report block rides in the same compound packet.
        rtcp + 24 + UDP_IPV4_BYTES
    }
}

/// FCI entries a generic NACK needs for `seqs`: each covers a PID and the 16 following seqs.
fn nack_fci_count(seqs: &[u64]) -> u32 {
    let mut sorted = seqs.to_vec();
    sorted.sort_unstable();
    let mut n = 0;
    let mut base: Option<u64> = None;
    for s in sorted {
        if base.is_none_or(|b| s > b + 16) {
            base = Some(s);
            n += 1;
        }
    }
    n.max(1)
}

/// Counters and samples of a session for metrics.
#[derive(Clone, Debug, Default)]
pub struct RtcSamples {
    /// (sample time, RTT) as the sender measured it.
    pub rtt: Vec<(SimTime, SimDuration)>,
    /// Capture time of each encoded frame the receiver has neither decoded nor given up yet (for the
    /// frame log of a frame given up), by frame id; those older than `FRAME_HISTORY` are forgotten.
    pub in_flight: crate::seqmap::SeqMap<SimTime>,
    /// Bytes of the frames captured from the measurement start on (the flow's bitrate).
    pub frame_bytes: u64,
}

/// A frame still in flight this long after capture is forgotten (a call keeps no per-frame state for
/// frames long gone; a frame given up later is counted but not logged).
const FRAME_HISTORY: SimDuration = SimDuration::from_ms(600_000);

/// The sender and the receiver of one RTC video flow.
pub struct RtcSession {
    source: FrameSource,
    fec: FecEncoder,
    pacer: Pacer,
    rtx: RtxSender,
    gcc: Option<Gcc>,
    rx: Receiver,
    twcc: TwccReceiver,
    pub quality: VideoQuality,
    stop: SimTime,
    measure_from: SimTime,
    /// Send times by transport sequence number, for RTT from receiver reports.
    sent_at: crate::seqmap::SeqMap<SimTime>,
    srtt: Option<SimDuration>,
    pub samples: RtcSamples,
    events: Vec<ReceiverEvent>,
}

/// A sent packet's history is kept this long for RTT samples.
const SENT_HISTORY: SimDuration = SimDuration::from_ms(10_000);

impl RtcSession {
    /// A call whose first frame is captured at `start` and whose sender stops at `stop`. Frames
    /// captured before `measure_from` do not count in the quality metrics.
    pub fn new(p: &RtcParams, start: SimTime, stop: SimTime, measure_from: SimTime, rng: Rng) -> Self {
        let (gcc, target) = match &p.rate_control {
            RtcRateControl::Gcc(g) => {
                let gcc = Gcc::new(g.clone());
                let t = gcc.target_rate();
                (Some(gcc), t)
            }
            RtcRateControl::Fixed { rate_mbps } => (None, BitRate::from_mbps_f64(*rate_mbps).expect("validated")),
        };
        let media = media_rate(target, &p.fec);
        let mut quality = VideoQuality::new(0);
        quality.set_measure_from(measure_from);
        RtcSession {
            source: FrameSource::new(p.video.clone(), start, media, rng),
            fec: FecEncoder::new(p.fec),
            pacer: Pacer::new(p.pacer.clone(), target),
            rtx: RtxSender::new(p.rtx.clone()),
            gcc,
            rx: Receiver::new(p.receiver.clone()),
            twcc: TwccReceiver::new(p.twcc.clone()),
            quality,
            stop,
            measure_from,
            sent_at: crate::seqmap::SeqMap::new(),
            srtt: None,
            samples: RtcSamples::default(),
            events: Vec::new(),
        }
    }

    /// The next time [`poll`](Self::poll) has work.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        let capture = Some(self.source.next_capture()).filter(|&t| t < self.stop);
        SimTime::earliest([capture, self.pacer.next_release(), self.twcc.next_feedback(), self.rx.next_wakeup()])
    }

    /// Does what is due at `now`: encodes frames, releases paced packets (into `send`), and the
    /// receiver's timers and feedback (into `feedback`).
    pub fn poll(&mut self, now: SimTime, send: &mut Vec<RtpPacket>, feedback: &mut Vec<Rtcp>) {
        if let Some(gcc) = &mut self.gcc {
            for c in gcc.poll_probes(now) {
                self.pacer.create_probe_cluster(now, c);
            }
        }
        if now < self.stop {
            while let Some(frame) = self.source.poll(now, self.pacer.expected_queue_time()) {
                self.samples.in_flight.insert(frame.frame_id, frame.capture_time);
                if frame.capture_time >= self.measure_from {
                    self.samples.frame_bytes += frame.size_bytes;
                }
                let horizon = SimTime(now.as_ns().saturating_sub(FRAME_HISTORY.as_ns()));
                while self.samples.in_flight.first().is_some_and(|(_, &c)| c < horizon) {
                    self.samples.in_flight.pop_first();
                }
                let repairs = self.fec.protect(&frame.packets);
                for p in frame.packets.into_iter().chain(repairs) {
                    self.pacer.push(now, p);
                }
            }
        }
        while let Some(p) = self.pacer.pop(now) {
            if let Some(gcc) = &mut self.gcc {
                gcc.on_packet_sent(SentPacket::of(&p, now));
            }
            self.rtx.on_sent(now, &p);
            if let Some(t) = p.transport_seq {
                self.sent_at.insert(t, now);
            }
            send.push(p);
        }
        self.rx.advance_to(now, &mut self.events);
        self.receiver_events(now, feedback);
        for fb in self.twcc.poll_feedback(now) {
            feedback.push(self.rtcp(now, RtcpBody::Twcc(fb)));
        }
    }

    /// An RTP packet reached the receiver.
    pub fn on_rtp(&mut self, now: SimTime, p: &RtpPacket, feedback: &mut Vec<Rtcp>) {
        if let Some(t) = p.transport_seq {
            self.twcc.on_packet(now, t);
        }
        self.rx.on_packet(now, p, &mut self.events);
        self.receiver_events(now, feedback);
    }

    /// An RTCP packet reached the sender.
    pub fn on_rtcp(&mut self, now: SimTime, m: &Rtcp) {
        match &m.body {
            RtcpBody::Twcc(fb) => {
                for st in fb.packets().into_iter().filter(|_| m.for_rtt) {
                    let (Some(arrival), Some(&sent)) = (st.arrival, self.sent_at.get(st.seq)) else { continue };
                    let rtt = now.saturating_since(sent).saturating_sub(m.created.saturating_since(arrival));
                    self.samples.rtt.push((now, rtt));
                    self.srtt = Some(match self.srtt {
                        None => rtt,
                        Some(s) => SimDuration::from_ns((s.as_ns() * 7 + rtt.as_ns()) / 8),
                    });
                }
                if let Some(srtt) = self.srtt {
                    self.rx.set_rtt(srtt);
                }
                let horizon = SimTime(now.as_ns().saturating_sub(SENT_HISTORY.as_ns()));
                while self.sent_at.first().is_some_and(|(_, &t)| t < horizon) {
                    self.sent_at.pop_first();
                }
                if let Some(gcc) = self.gcc.as_mut().filter(|_| m.for_cc) {
                    let target = gcc.on_feedback(now, fb);
                    self.source.set_target(media_rate(target, self.fec.params()));
                    self.pacer.set_target(now, target);
                }
            }
            RtcpBody::Nack(seqs) => {
                let rtt = self.srtt.unwrap_or(SimDuration::from_ms(100));
                for p in self.rtx.on_nack(now, seqs, rtt) {
                    self.pacer.push(now, p);
                }
            }
            RtcpBody::Pli => self.source.request_keyframe(),
        }
    }

    fn receiver_events(&mut self, now: SimTime, feedback: &mut Vec<Rtcp>) {
        let events = std::mem::take(&mut self.events);
        for e in &events {
            match e {
                ReceiverEvent::Decoded(d) => {
                    self.samples.in_flight.remove(d.frame_id);
                    self.quality.on_decoded(d)
                }
                ReceiverEvent::Dropped { frame_id, at } => {
                    let capture = self.samples.in_flight.remove(*frame_id);
                    self.quality.on_dropped(*frame_id, capture, *at)
                }
                ReceiverEvent::Nack { seqs, .. } => {
                    let m = self.rtcp(now, RtcpBody::Nack(seqs.clone()));
                    feedback.push(m);
                }
                ReceiverEvent::KeyframeRequest { .. } => {
                    let m = self.rtcp(now, RtcpBody::Pli);
                    feedback.push(m);
                }
            }
        }
        self.events = events;
        self.events.clear();
    }

    fn rtcp(&self, now: SimTime, body: RtcpBody) -> Rtcp {
        Rtcp { body, created: now, for_cc: true, for_rtt: true }
    }

    /// Frames captured before this do not count in the metrics.
    pub fn measure_from(&self) -> SimTime {
        self.measure_from
    }

    /// The quality summary with frame deadline `deadline`.
    pub fn report(&self, deadline: SimDuration) -> QualityReport {
        self.quality.report(deadline)
    }

    /// The current target bitrate (FEC included).
    pub fn target(&self) -> BitRate {
        self.gcc.as_ref().map_or(self.pacer.rate(), |g| g.target_rate())
    }

    /// Counters of every component, for `summary.json`.
    pub fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "source": self.source.stats(),
            "fec": self.fec.stats(),
            "pacer": self.pacer.stats(),
            "rtx": self.rtx.stats(),
            "gcc": self.gcc.as_ref().map(|g| g.stats()),
            "receiver": self.rx.stats(),
            "twcc": self.twcc.stats(),
            "target_kbps_at_end": self.target().bps() / 1000,
        })
    }
}

/// The media share of a target that includes FEC.
fn media_rate(target: BitRate, fec: &FecParams) -> BitRate {
    BitRate::from_bps((target.bps() as f64 * fec.media_share()).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nack_fci_packing() {
        assert_eq!(nack_fci_count(&[5]), 1);
        assert_eq!(nack_fci_count(&[5, 6, 21]), 1);
        assert_eq!(nack_fci_count(&[5, 22]), 2);
        assert_eq!(nack_fci_count(&[40, 5, 22, 23]), 3);
    }

    #[test]
    fn rtt_per_packet_excludes_the_feedback_hold_time() {
        let p = RtcParams { rate_control: RtcRateControl::Fixed { rate_mbps: 1.0 }, ..Default::default() };
        let end = SimTime::from_secs(5);
        let mut s = RtcSession::new(&p, SimTime::ZERO, end, SimTime::ZERO, Rng::derive(1, "t"));
        let (mut send, mut fb) = (vec![], vec![]);
        let mut now = SimTime::ZERO;
        while send.is_empty() {
            now = s.next_wakeup().expect("frames");
            s.poll(now, &mut send, &mut fb);
        }
        // Every packet: 15 ms one way; feedback 15 ms back whenever the receiver sends it.
        let mut fb_at = vec![];
        let mut t = now;
        for p in &send {
            s.on_rtp(t + SimDuration::from_ms(15), p, &mut fb);
            t += SimDuration::from_us(500);
        }
        while fb_at.is_empty() {
            let w = s.twcc.next_feedback().expect("packets arrived");
            let (mut more, mut msgs) = (vec![], vec![]);
            s.poll(w, &mut more, &mut msgs);
            fb_at.extend(msgs.into_iter().filter(|m| matches!(m.body, RtcpBody::Twcc(_))));
        }
        for m in &fb_at {
            s.on_rtcp(m.created + SimDuration::from_ms(15), m);
        }
        assert!(!s.samples.rtt.is_empty());
        for (_, rtt) in &s.samples.rtt {
            // 30 ms, within TWCC's 250 µs arrival quantisation.
            assert!(rtt.as_ns().abs_diff(30_000_000) <= 250_000, "{rtt}");
        }
    }
}
