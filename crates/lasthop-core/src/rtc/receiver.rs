//! The video receiver: frame assembly with FEC recovery, NACK generation, and in-order decoding
//! (baselines.md §5.4–§5.5; libwebrtc `NackRequester`, `FrameBuffer`, `VideoReceiveStream2`).
//!
//! # Assembly and decoding
//!
//! A frame is **complete** when all its media packets are present — originals, retransmissions or
//! packets rebuilt by FEC ([`super::fec::FecDecoder`]) — at the arrival that completes it. Frames are
//! decoded in order, each P-frame depending on the one before: frame `k` is decoded at
//! `max(complete(k), decoded(k − 1))`. A complete **keyframe** needs no predecessor: when one is
//! complete while earlier frames are not, the earlier frames are dropped and the keyframe decoded at
//! once (libwebrtc's frame buffer decodes the first decodable frame and discards older ones). There is
//! no playout delay: latencies are measured at decodability, as Law's "frame delivery latency" and
//! Zhuge's "frame delay" (§5.5).
//!
//! A frame is **abandoned** when a packet arrives whose capture time is `abandon_after_ms` (1000 ms, the
//! Zhuge artifact's deadline) or more after the frame's: it is dropped and decoding moves past it. What
//! happens next is `after_loss`:
//! * `wait_for_keyframe` (default, libwebrtc): a keyframe request (PLI) goes out at once and every
//!   `keyframe_retry_ms` (200 ms, `kMaxWaitForKeyFrame`) until a keyframe is decoded; P-frames until
//!   then are dropped. The receiver also starts in this state (it needs a keyframe first) and sends its
//!   first request 200 ms after its first packet if no keyframe was decoded by then.
//! * `continue` (the Zhuge artifact): the next frame is decoded as soon as it is complete.
//!
//! Abandonment is driven by arrivals (as Zhuge's rule), so nothing is abandoned while nothing arrives.
//! libwebrtc's own rule is time-based — a keyframe request after 3 s without a decodable frame
//! (`kMaxWaitForFrame`) — which `abandon_after_ms = 3000` approximates.
//!
//! # NACK
//!
//! Per media sequence number (libwebrtc `NackRequester` defaults): a packet newer than the newest seen
//! puts the gap into the NACK list and the new entries are requested at once (`send_nack_delay` 0); every
//! `interval_ms` (20 ms) entries last requested at least one RTT ago (100 ms until
//! [`Receiver::set_rtt`]) are requested again; an entry is dropped after its 10th request, when its
//! packet arrives (late, retransmitted or rebuilt by FEC) or when it is more than 10 000 sequence
//! numbers old. A gap that would grow the list past 1000 entries clears it and requests a keyframe
//! (and, with `wait_for_keyframe`, waits for it).
//! Packets rebuilt by FEC that are newer than the newest extend the list but trigger no immediate
//! request.
//!
//! Catch-up interface: [`Receiver::next_wakeup`] / [`Receiver::advance_to`] for the NACK and
//! keyframe-request timers; [`Receiver::on_packet`] for arrivals. Both append [`ReceiverEvent`]s.

use super::fec::FecDecoder;
use super::rtp::{MediaHeader, Payload, RtpPacket};
use super::{check, RtcParamError};
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// NACK settings (libwebrtc `NackRequester` constants).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NackParams {
    /// Send NACKs at all. Default true.
    pub enabled: bool,
    /// Requests per packet. Default 10 (`kMaxNackRetries`).
    pub max_retries: u32,
    /// RTT assumed until one is set, ms. Default 100 (`kDefaultRttMs`).
    pub default_rtt_ms: u32,
    /// Period of the re-request check, ms. Default 20 (`kProcessIntervalMs`).
    pub interval_ms: u32,
    /// Largest NACK list. Default 1000 (`kMaxNackPackets`).
    pub max_list: u32,
    /// Entries this many sequence numbers older than the newest are dropped. Default 10000
    /// (`kMaxPacketAge`).
    pub max_age: u32,
}

impl Default for NackParams {
    fn default() -> Self {
        NackParams { enabled: true, max_retries: 10, default_rtt_ms: 100, interval_ms: 20, max_list: 1_000, max_age: 10_000 }
    }
}

/// What the receiver does after abandoning a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AfterLoss {
    /// Request a keyframe and drop P-frames until one is decoded (libwebrtc).
    #[default]
    WaitForKeyframe,
    /// Decode the next complete frame anyway (the Zhuge artifact).
    Continue,
}

/// `receiver = { abandon_after_ms = 1000, after_loss = "wait_for_keyframe", nack = { max_retries = 10 } }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverParams {
    pub nack: NackParams,
    /// Abandon a frame once a packet captured this much later arrives, ms. Default 1000 (Zhuge's
    /// deadline).
    pub abandon_after_ms: u32,
    pub after_loss: AfterLoss,
    /// Keyframe re-request period while waiting for one, ms. Default 200 (`kMaxWaitForKeyFrame`).
    pub keyframe_retry_ms: u32,
}

impl Default for ReceiverParams {
    fn default() -> Self {
        ReceiverParams {
            nack: NackParams::default(),
            abandon_after_ms: 1_000,
            after_loss: AfterLoss::WaitForKeyframe,
            keyframe_retry_ms: 200,
        }
    }
}

impl ReceiverParams {
    pub fn validate(&self) -> Result<(), RtcParamError> {
        check(self.nack.interval_ms > 0, "interval_ms", "must be > 0")?;
        check(self.abandon_after_ms > 0, "abandon_after_ms", "must be > 0")?;
        check(self.keyframe_retry_ms > 0, "keyframe_retry_ms", "must be > 0")
    }
}

/// How a media packet reached the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Via {
    Original,
    Retransmission,
    Fec,
}

/// A decoded frame, with what the metrics need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DecodedFrame {
    pub frame_id: u64,
    pub capture_time: SimTime,
    /// When its last missing packet arrived (or was rebuilt).
    pub complete: SimTime,
    pub decoded: SimTime,
    pub keyframe: bool,
    /// How the packet that completed it arrived (Law's "non-retransmitted frames" are `Original` or
    /// `Fec`).
    pub completed_by: Via,
    /// Any of its packets arrived as a retransmission.
    pub retransmitted: bool,
}

impl DecodedFrame {
    /// Frame delivery latency: decode time − capture time.
    pub fn latency(&self) -> SimDuration {
        self.decoded.saturating_since(self.capture_time)
    }
}

/// What the receiver tells the rest of the world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReceiverEvent {
    Decoded(DecodedFrame),
    /// A frame that will never be decoded (abandoned, or skipped for a keyframe).
    Dropped { frame_id: u64, at: SimTime },
    /// A generic NACK (RFC 4585) for these media sequence numbers.
    Nack { at: SimTime, seqs: Vec<u64> },
    /// A PLI.
    KeyframeRequest { at: SimTime },
}

/// Counters of a receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverStats {
    pub media_packets: u64,
    pub retransmissions: u64,
    pub fec_recovered: u64,
    pub repair_packets: u64,
    pub padding_packets: u64,
    pub duplicates: u64,
    /// Media packets of frames already decoded or dropped.
    pub late: u64,
    pub frames_decoded: u64,
    pub frames_dropped: u64,
    pub keyframe_requests: u64,
    pub nack_messages: u64,
    pub nacked_packets: u64,
}

#[derive(Clone, Debug)]
struct Assembly {
    capture_time: SimTime,
    keyframe: bool,
    count: u16,
    have: BTreeSet<u16>,
    complete: Option<(SimTime, Via)>,
    retransmitted: bool,
}

#[derive(Clone, Copy, Debug)]
struct NackEntry {
    sent_at: Option<SimTime>,
    retries: u32,
}

/// The NACK list.
#[derive(Clone, Debug)]
struct Nack {
    params: NackParams,
    list: BTreeMap<u64, NackEntry>,
    newest: Option<u64>,
    rtt: SimDuration,
    next_process: Option<SimTime>,
}

/// What a packet did to the NACK list.
struct NackOutcome {
    request_now: Vec<u64>,
    overflow: bool,
}

impl Nack {
    fn on_packet(&mut self, now: SimTime, seq: u64, recovered: bool) -> NackOutcome {
        let mut out = NackOutcome { request_now: vec![], overflow: false };
        let Some(newest) = self.newest else {
            self.newest = Some(seq);
            return out;
        };
        if seq <= newest {
            self.list.remove(&seq);
            return out;
        }
        let oldest_kept = seq.saturating_sub(self.params.max_age as u64);
        self.list = self.list.split_off(&oldest_kept);
        let gap = seq - newest - 1;
        if self.list.len() as u64 + gap > self.params.max_list as u64 {
            self.list.clear();
            out.overflow = true;
        } else {
            for s in newest + 1..seq {
                self.list.insert(s, NackEntry { sent_at: None, retries: 0 });
            }
        }
        self.newest = Some(seq);
        if !self.list.is_empty() && self.next_process.is_none() {
            self.next_process = Some(now + SimDuration::from_ms(self.params.interval_ms as u64));
        }
        if !recovered {
            out.request_now = self.batch(now, |e| e.sent_at.is_none());
        }
        out
    }

    /// Requests every entry `due` selects; drops entries after their last allowed request.
    fn batch(&mut self, now: SimTime, due: impl Fn(&NackEntry) -> bool) -> Vec<u64> {
        let mut seqs = vec![];
        let max = self.params.max_retries;
        self.list.retain(|&s, e| {
            if !due(e) {
                return true;
            }
            seqs.push(s);
            e.retries += 1;
            e.sent_at = Some(now);
            e.retries < max
        });
        seqs
    }

    fn process(&mut self, now: SimTime) -> Vec<u64> {
        let rtt = self.rtt;
        let seqs = self.batch(now, |e| e.sent_at.is_none_or(|t| now.saturating_since(t) >= rtt));
        self.next_process = (!self.list.is_empty()).then(|| now + SimDuration::from_ms(self.params.interval_ms as u64));
        seqs
    }
}

/// One video receiver.
#[derive(Clone, Debug)]
pub struct Receiver {
    params: ReceiverParams,
    frames: BTreeMap<u64, Assembly>,
    next_decode: u64,
    waiting_for_keyframe: bool,
    /// While waiting for a keyframe: when the next request is due.
    next_keyframe_request: Option<SimTime>,
    newest_capture: Option<SimTime>,
    fec: FecDecoder,
    nack: Nack,
    stats: ReceiverStats,
}

impl Receiver {
    pub fn new(params: ReceiverParams) -> Self {
        debug_assert!(params.validate().is_ok());
        let nack = Nack {
            rtt: SimDuration::from_ms(params.nack.default_rtt_ms as u64),
            params: params.nack.clone(),
            list: BTreeMap::new(),
            newest: None,
            next_process: None,
        };
        Receiver {
            waiting_for_keyframe: params.after_loss == AfterLoss::WaitForKeyframe,
            params,
            frames: BTreeMap::new(),
            next_decode: 0,
            next_keyframe_request: None,
            newest_capture: None,
            fec: FecDecoder::new(),
            nack,
            stats: ReceiverStats::default(),
        }
    }

    /// The RTT used to pace NACK re-requests.
    pub fn set_rtt(&mut self, rtt: SimDuration) {
        self.nack.rtt = rtt;
    }

    /// A packet arrived at `now`.
    pub fn on_packet(&mut self, now: SimTime, p: &RtpPacket, out: &mut Vec<ReceiverEvent>) {
        if self.waiting_for_keyframe && self.next_keyframe_request.is_none() && self.stats.frames_decoded == 0 {
            self.next_keyframe_request = Some(now + self.keyframe_retry());
        }
        match &p.payload {
            Payload::Padding => self.stats.padding_packets += 1,
            Payload::Repair(h) => {
                self.stats.repair_packets += 1;
                if h.frame.frame_id >= self.next_decode {
                    for r in self.fec.on_repair(h) {
                        self.on_media(now, r.seq, &r.header, r.capture_time, Via::Fec, out);
                    }
                }
            }
            Payload::Media(h) => {
                let via = if p.retransmission { Via::Retransmission } else { Via::Original };
                self.on_media(now, p.seq, h, p.capture_time, via, out);
            }
        }
        self.abandon_stale(now, out);
        self.try_decode(now, out);
    }

    fn on_media(&mut self, now: SimTime, seq: u64, h: &MediaHeader, capture: SimTime, via: Via, out: &mut Vec<ReceiverEvent>) {
        if self.params.nack.enabled {
            let n = self.nack.on_packet(now, seq, via == Via::Fec);
            self.emit_nack(now, n.request_now, out);
            if n.overflow && self.params.after_loss == AfterLoss::WaitForKeyframe {
                self.start_waiting_for_keyframe(now, out);
            } else if n.overflow {
                self.request_keyframe(now, out);
            }
        }
        if h.frame_id < self.next_decode {
            self.stats.late += 1;
            return;
        }
        let f = self.frames.entry(h.frame_id).or_insert_with(|| Assembly {
            capture_time: capture,
            keyframe: h.keyframe,
            count: h.count,
            have: BTreeSet::new(),
            complete: None,
            retransmitted: false,
        });
        if !f.have.insert(h.index) {
            self.stats.duplicates += 1;
            return;
        }
        match via {
            Via::Original => self.stats.media_packets += 1,
            Via::Retransmission => self.stats.retransmissions += 1,
            Via::Fec => self.stats.fec_recovered += 1,
        }
        f.retransmitted |= via == Via::Retransmission;
        if f.have.len() == f.count as usize {
            f.complete = Some((now, via));
        }
        self.newest_capture = self.newest_capture.max(Some(capture));
        if via != Via::Fec {
            for r in self.fec.on_media(seq, h) {
                self.on_media(now, r.seq, &r.header, r.capture_time, Via::Fec, out);
            }
        }
    }

    fn emit_nack(&mut self, now: SimTime, seqs: Vec<u64>, out: &mut Vec<ReceiverEvent>) {
        if seqs.is_empty() {
            return;
        }
        self.stats.nack_messages += 1;
        self.stats.nacked_packets += seqs.len() as u64;
        out.push(ReceiverEvent::Nack { at: now, seqs });
    }

    fn keyframe_retry(&self) -> SimDuration {
        SimDuration::from_ms(self.params.keyframe_retry_ms as u64)
    }

    fn start_waiting_for_keyframe(&mut self, now: SimTime, out: &mut Vec<ReceiverEvent>) {
        self.waiting_for_keyframe = true;
        self.request_keyframe(now, out);
    }

    fn request_keyframe(&mut self, now: SimTime, out: &mut Vec<ReceiverEvent>) {
        self.stats.keyframe_requests += 1;
        self.next_keyframe_request = Some(now + self.keyframe_retry());
        out.push(ReceiverEvent::KeyframeRequest { at: now });
    }

    fn drop_frame(&mut self, id: u64, now: SimTime, out: &mut Vec<ReceiverEvent>) {
        self.frames.remove(&id);
        self.stats.frames_dropped += 1;
        out.push(ReceiverEvent::Dropped { frame_id: id, at: now });
    }

    /// Drops the frames at the head that a packet captured `abandon_after_ms` later has overtaken.
    fn abandon_stale(&mut self, now: SimTime, out: &mut Vec<ReceiverEvent>) {
        let Some(newest) = self.newest_capture else {
            return;
        };
        let window = SimDuration::from_ms(self.params.abandon_after_ms as u64);
        let Some(horizon) = newest.as_ns().checked_sub(window.as_ns()).map(SimTime::from_ns) else {
            return;
        };
        // The head frame is stale when it, or the first frame known after it, was captured by `horizon`
        // (a head that is decodable right now is kept: it is about to be decoded).
        while let Some((&id, f)) = self.frames.range(self.next_decode..).next() {
            if f.capture_time > horizon || (id == self.next_decode && self.decodable(f)) {
                break;
            }
            let lost_reference = id > self.next_decode || !f.keyframe;
            self.drop_frame(self.next_decode, now, out);
            self.next_decode += 1;
            if lost_reference && self.params.after_loss == AfterLoss::WaitForKeyframe && !self.waiting_for_keyframe {
                self.start_waiting_for_keyframe(now, out);
            }
            self.try_decode(now, out);
        }
    }

    fn decodable(&self, f: &Assembly) -> bool {
        f.complete.is_some() && (!self.waiting_for_keyframe || f.keyframe)
    }

    /// Decodes what can be decoded now: the next frame in order, or the first complete keyframe after
    /// it (dropping the frames before it).
    fn try_decode(&mut self, now: SimTime, out: &mut Vec<ReceiverEvent>) {
        loop {
            let next_ok = self.frames.get(&self.next_decode).is_some_and(|f| self.decodable(f));
            if next_ok {
                self.decode(self.next_decode, now, out);
                continue;
            }
            let key = self.frames.range(self.next_decode + 1..).find(|(_, f)| f.keyframe && f.complete.is_some()).map(|(&id, _)| id);
            let Some(key) = key else {
                return;
            };
            for id in self.next_decode..key {
                self.drop_frame(id, now, out);
            }
            self.next_decode = key;
        }
    }

    fn decode(&mut self, id: u64, now: SimTime, out: &mut Vec<ReceiverEvent>) {
        let f = self.frames.remove(&id).expect("decodable frame exists");
        let (complete, completed_by) = f.complete.expect("decodable frame is complete");
        if f.keyframe {
            self.waiting_for_keyframe = false;
            self.next_keyframe_request = None;
        }
        self.next_decode = id + 1;
        self.stats.frames_decoded += 1;
        out.push(ReceiverEvent::Decoded(DecodedFrame {
            frame_id: id,
            capture_time: f.capture_time,
            complete,
            decoded: now,
            keyframe: f.keyframe,
            completed_by,
            retransmitted: f.retransmitted,
        }));
        let first_kept_seq = self.nack.newest.unwrap_or(0).saturating_sub(self.params.nack.max_age as u64);
        self.fec.forget_before(self.next_decode, first_kept_seq);
    }

    /// When the NACK or keyframe-request timer next fires.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        let nack = self.nack.next_process.filter(|_| self.params.nack.enabled);
        let key = self.next_keyframe_request.filter(|_| self.waiting_for_keyframe);
        match (nack, key) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the timers due at or before `now`.
    pub fn advance_to(&mut self, now: SimTime, out: &mut Vec<ReceiverEvent>) {
        if self.params.nack.enabled && self.nack.next_process.is_some_and(|t| t <= now) {
            let seqs = self.nack.process(now);
            self.emit_nack(now, seqs, out);
        }
        if self.waiting_for_keyframe && self.next_keyframe_request.is_some_and(|t| t <= now) {
            self.request_keyframe(now, out);
        }
    }

    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }
}

#[cfg(test)]
#[path = "receiver_tests.rs"]
mod tests;
