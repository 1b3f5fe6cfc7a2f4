//! Transport-wide congestion-control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01, the
//! RTCP RTPFB FMT = 15 message libwebrtc sends) and the receiver that generates it (libwebrtc
//! `RemoteEstimatorProxy`).
//!
//! # The message
//!
//! ```text
//!  0                   1                   2                   3
//! |V=2|P|  FMT=15 |    PT=205     |           length              |
//! |                     SSRC of packet sender                     |
//! |                      SSRC of media source                     |
//! |      base sequence number     |      packet status count      |
//! |                 reference time                | fb pkt. count |
//! |          packet chunk         |         packet chunk          |  …
//! | recv delta    |  recv delta   | …                             |  zero padding to 32 bits
//! ```
//!
//! Every sequence number from `base` on gets a status symbol: *not received* (0), *received, small
//! delta* (1: one unsigned byte, 0–63.75 ms) or *received, large or negative delta* (2: two signed
//! bytes, ±8 s). Symbols are packed in 16-bit chunks, either a run (`0 S S run-length:13`) or a status
//! vector (`1 0` + 14 one-bit symbols, or `1 1` + 7 two-bit symbols). Receive deltas are in 250 µs
//! ticks: the first from the reference time (24 bits, 64 ms units), each later one from the previous
//! received packet. Quantisation does not accumulate: each delta is rounded (to nearest, ties away from
//! zero) from the previous packet's *quantised* time, as libwebrtc's `TransportFeedback` does, so every
//! reported time is within 125 µs of the true arrival.
//!
//! [`build_feedback`] makes messages from any list of `(transport seq, arrival)` pairs — the receiver
//! uses it, and so can an AP that fabricates feedback (Zhuge, zhuge.md §4.2). A message ends at a
//! received packet; a new one starts when a delta does not fit 16 bits, when 65535 statuses are reached,
//! and leading losses are cut to 0x7FFE (libwebrtc `kMaxMissingSequenceNumbers`).
//! [`TwccFeedback::encode`] / [`TwccFeedback::parse`] give the wire bytes; parsing unwraps the 16-bit
//! base sequence number with a [`SeqUnwrapper`].
//!
//! # The receiver
//!
//! [`TwccReceiver`] records `(transport seq, arrival)` of every packet (duplicates ignored) and sends
//! periodic feedback every `interval_ms` (100 ms, libwebrtc `kDefaultInterval`; baselines.md §4.1). Each
//! message covers the sequence numbers from the end of the previous one to the highest received, so a
//! packet still missing then is reported lost. A packet older than the window start (reordered past a
//! report) moves the window back, and the next feedback reports again from it, as libwebrtc does; the
//! sender ignores statuses it already has. Arrival records older than 500 ms (`kBackWindow`) are dropped
//! once everything has been reported. With `scale_to_bitrate`, [`TwccReceiver::on_bitrate_changed`] sets
//! the interval so that feedback of 68 bytes takes 5 % of the bitrate, within [50, 250] ms
//! (`RemoteEstimatorProxy::OnBitrateChanged`); at more than ≈220 kbit/s that is 50 ms.
//!
//! Choices where the sources are silent: the feedback clock starts at the first arrival (first message
//! one interval later) and keeps its phase while idle; the reference time is read as unsigned 24 bits
//! without unwrapping (it wraps after 12.4 simulated days); SSRCs default to 0.

use super::{check, RtcParamError};
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Receive-delta resolution: 250 µs.
pub const DELTA_TICK: SimDuration = SimDuration::from_us(250);
/// Reference-time resolution: 64 ms.
pub const REFERENCE_TICK: SimDuration = SimDuration::from_ms(64);
/// RTCP packet type of transport-layer feedback (RTPFB).
pub const RTPFB: u8 = 205;
/// Feedback message type of transport-wide congestion control.
pub const FMT_TRANSPORT_CC: u8 = 15;

const HEADER_BYTES: usize = 20;
const MAX_STATUSES: u64 = 0xFFFF;
const MAX_LEADING_MISSING: u64 = 0x7FFE;
const REFERENCE_WRAP: u64 = 1 << 24;

/// One packet's status in a feedback message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketStatus {
    /// Transport-wide sequence number, unwrapped.
    pub seq: u64,
    /// Quantised arrival time in the receiver's clock, or `None` when reported lost.
    pub arrival: Option<SimTime>,
}

/// One transport-wide feedback message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwccFeedback {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    /// First reported transport sequence number, unwrapped.
    pub base_seq: u64,
    /// Feedback packet count (increments per message, wraps at 256).
    pub feedback_count: u8,
    /// Reference time, 64 ms units (24 bits).
    pub reference_time: u32,
    /// Per status from `base_seq`: receive delta in 250 µs ticks, `None` when not received.
    deltas: Vec<Option<i32>>,
}

/// Why a buffer is not a transport-wide feedback message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TwccError {
    #[error("shorter than the 20-byte header")]
    TooShort,
    #[error("RTP version is not 2")]
    BadVersion,
    #[error("not RTPFB/FMT=15 (packet type {pt}, format {fmt})")]
    NotTransportCc { pt: u8, fmt: u8 },
    #[error("the length field or a chunk or delta runs past the buffer")]
    Truncated,
    #[error("padding count is 0 or longer than the body")]
    BadPadding,
    #[error("reserved status symbol 3")]
    ReservedSymbol,
}

impl TwccFeedback {
    /// Number of statuses (the wire's packet status count).
    pub fn status_count(&self) -> usize {
        self.deltas.len()
    }

    /// Receive deltas, 250 µs ticks, per status (`None` = not received).
    pub fn deltas(&self) -> &[Option<i32>] {
        &self.deltas
    }

    /// Statuses with absolute (quantised) arrival times: reference time plus the running sum of deltas.
    pub fn packets(&self) -> Vec<PacketStatus> {
        let mut t = self.reference_time as i64 * REFERENCE_TICK.as_ns() as i64;
        let tick = DELTA_TICK.as_ns() as i64;
        (self.base_seq..)
            .zip(&self.deltas)
            .map(|(seq, d)| {
                let arrival = d.map(|d| {
                    t += d as i64 * tick;
                    SimTime::from_ns(t.max(0) as u64)
                });
                PacketStatus { seq, arrival }
            })
            .collect()
    }

    /// Received packets in the message.
    pub fn received_count(&self) -> usize {
        self.deltas.iter().filter(|d| d.is_some()).count()
    }

    /// The message as RTCP bytes.
    pub fn encode(&self) -> Vec<u8> {
        let symbols: Vec<u8> = self.deltas.iter().map(|d| symbol(*d)).collect();
        let mut out = Vec::with_capacity(HEADER_BYTES + self.deltas.len() * 2);
        out.extend_from_slice(&[0, RTPFB, 0, 0]);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        out.extend_from_slice(&(self.base_seq as u16).to_be_bytes());
        out.extend_from_slice(&(self.deltas.len() as u16).to_be_bytes());
        out.extend_from_slice(&(self.reference_time & 0xFF_FFFF).to_be_bytes()[1..]);
        out.push(self.feedback_count);
        for chunk in encode_chunks(&symbols) {
            out.extend_from_slice(&chunk.to_be_bytes());
        }
        for (d, s) in self.deltas.iter().zip(&symbols) {
            match (d, s) {
                (Some(d), 1) => out.push(*d as u8),
                (Some(d), 2) => out.extend_from_slice(&(*d as i16).to_be_bytes()),
                _ => {}
            }
        }
        let pad = (4 - out.len() % 4) % 4;
        out.extend(std::iter::repeat_n(0u8, pad));
        if pad > 0 {
            *out.last_mut().expect("non-empty") = pad as u8;
        }
        let words = (out.len() / 4 - 1) as u16;
        out[0] = 0x80 | if pad > 0 { 0x20 } else { 0 } | FMT_TRANSPORT_CC;
        out[2..4].copy_from_slice(&words.to_be_bytes());
        out
    }

    /// Encoded size, bytes.
    pub fn encoded_len(&self) -> usize {
        self.encode().len()
    }

    /// Parses one RTCP transport-wide feedback message (bytes past its length field are ignored).
    pub fn parse(bytes: &[u8], unwrapper: &mut SeqUnwrapper) -> Result<TwccFeedback, TwccError> {
        if bytes.len() < HEADER_BYTES {
            return Err(TwccError::TooShort);
        }
        if bytes[0] >> 6 != 2 {
            return Err(TwccError::BadVersion);
        }
        let (fmt, pt) = (bytes[0] & 0x1F, bytes[1]);
        if fmt != FMT_TRANSPORT_CC || pt != RTPFB {
            return Err(TwccError::NotTransportCc { pt, fmt });
        }
        let total = (u16::from_be_bytes([bytes[2], bytes[3]]) as usize + 1) * 4;
        let body = bytes.get(..total).ok_or(TwccError::Truncated)?;
        let end = if bytes[0] & 0x20 != 0 {
            let pad = body[total - 1] as usize;
            if pad == 0 || pad > total - HEADER_BYTES {
                return Err(TwccError::BadPadding);
            }
            total - pad
        } else {
            total
        };
        let body = &body[..end];
        let be32 = |i: usize| u32::from_be_bytes([body[i], body[i + 1], body[i + 2], body[i + 3]]);
        let count = u16::from_be_bytes([body[14], body[15]]) as usize;
        let (symbols, pos) = decode_chunks(body, HEADER_BYTES, count)?;
        let deltas = decode_deltas(body, pos, &symbols)?;
        Ok(TwccFeedback {
            sender_ssrc: be32(4),
            media_ssrc: be32(8),
            base_seq: unwrapper.unwrap(u16::from_be_bytes([body[12], body[13]])),
            feedback_count: body[19],
            reference_time: be32(16) >> 8,
            deltas,
        })
    }
}

fn symbol(d: Option<i32>) -> u8 {
    match d {
        None => 0,
        Some(0..=255) => 1,
        Some(_) => 2,
    }
}

/// Packs status symbols into chunks: a run-length chunk when the run covers at least as many symbols
/// as a vector would, else a one-bit vector (14 symbols, when none of them is "large"), else a two-bit
/// vector (7). Vectors at the end may hold unused trailing symbols (the status count ignores them).
fn encode_chunks(symbols: &[u8]) -> Vec<u16> {
    let mut chunks = vec![];
    let mut i = 0;
    while i < symbols.len() {
        let rem = symbols.len() - i;
        let one_bit = symbols[i..i + rem.min(14)].iter().all(|&s| s <= 1);
        let cap = if one_bit { 14 } else { 7 };
        let run = symbols[i..].iter().take(0x1FFF).take_while(|&&s| s == symbols[i]).count();
        if run >= cap.min(rem) {
            chunks.push(((symbols[i] as u16) << 13) | run as u16);
            i += run;
        } else if one_bit {
            let bits = (0..14).fold(0u16, |acc, j| acc | ((*symbols.get(i + j).unwrap_or(&0) as u16) << (13 - j)));
            chunks.push(0x8000 | bits);
            i += 14.min(rem);
        } else {
            let bits = (0..7).fold(0u16, |acc, j| acc | ((*symbols.get(i + j).unwrap_or(&0) as u16) << (12 - 2 * j)));
            chunks.push(0xC000 | bits);
            i += 7.min(rem);
        }
    }
    chunks
}

/// Reads chunks from `pos` until `count` symbols are known; returns them and the position after the
/// last chunk.
fn decode_chunks(body: &[u8], mut pos: usize, count: usize) -> Result<(Vec<u8>, usize), TwccError> {
    let mut symbols = Vec::with_capacity(count);
    while symbols.len() < count {
        let c = body.get(pos..pos + 2).ok_or(TwccError::Truncated)?;
        let c = u16::from_be_bytes([c[0], c[1]]);
        pos += 2;
        if c & 0x8000 == 0 {
            let run = (c & 0x1FFF) as usize;
            symbols.extend(std::iter::repeat_n(((c >> 13) & 3) as u8, run));
        } else if c & 0x4000 == 0 {
            symbols.extend((0..14).map(|j| ((c >> (13 - j)) & 1) as u8));
        } else {
            symbols.extend((0..7).map(|j| ((c >> (12 - 2 * j)) & 3) as u8));
        }
    }
    symbols.truncate(count);
    if symbols.contains(&3) {
        return Err(TwccError::ReservedSymbol);
    }
    Ok((symbols, pos))
}

fn decode_deltas(body: &[u8], mut pos: usize, symbols: &[u8]) -> Result<Vec<Option<i32>>, TwccError> {
    symbols
        .iter()
        .map(|&s| match s {
            0 => Ok(None),
            1 => {
                let b = *body.get(pos).ok_or(TwccError::Truncated)?;
                pos += 1;
                Ok(Some(b as i32))
            }
            _ => {
                let b = body.get(pos..pos + 2).ok_or(TwccError::Truncated)?;
                pos += 2;
                Ok(Some(i16::from_be_bytes([b[0], b[1]]) as i32))
            }
        })
        .collect()
}

/// Restores 64-bit sequence numbers from 16-bit ones: each value is taken as the one nearest the last
/// value returned (libwebrtc `SeqNumUnwrapper`), never below 0.
#[derive(Clone, Copy, Debug, Default)]
pub struct SeqUnwrapper {
    last: Option<u64>,
}

impl SeqUnwrapper {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn unwrap(&mut self, wire: u16) -> u64 {
        let v = match self.last {
            None => wire as i64,
            Some(last) => {
                let diff = wire.wrapping_sub(last as u16) as i16 as i64;
                let v = last as i64 + diff;
                if v < 0 {
                    v + 0x1_0000
                } else {
                    v
                }
            }
        };
        self.last = Some(v as u64);
        v as u64
    }
}

/// Round-to-nearest (ties away from zero) of `num / den` for positive `den`.
fn div_round(num: i64, den: i64) -> i64 {
    if num >= 0 {
        (num + den / 2) / den
    } else {
        -((-num + den / 2) / den)
    }
}

/// Builds feedback messages for `received` `(transport seq, arrival)` pairs in any order (duplicates keep
/// the earliest arrival). Every sequence number from `base_seq` (default: the lowest received) to the
/// highest received gets a status; the messages' feedback counts are taken from `*feedback_count`,
/// which is advanced. Returns no message when nothing at or after `base_seq` was received.
pub fn build_feedback(received: &[(u64, SimTime)], base_seq: Option<u64>, feedback_count: &mut u8) -> Vec<TwccFeedback> {
    let mut pkts: Vec<(u64, SimTime)> =
        received.iter().copied().filter(|&(s, _)| base_seq.is_none_or(|b| s >= b)).collect();
    pkts.sort_unstable();
    pkts.dedup_by_key(|p| p.0);
    let mut out = vec![];
    let mut base = base_seq.or(pkts.first().map(|p| p.0)).unwrap_or(0);
    let mut rest = &pkts[..];
    while !rest.is_empty() {
        let (msg, used) = build_one(rest, base, *feedback_count);
        *feedback_count = feedback_count.wrapping_add(1);
        base = rest[used - 1].0 + 1;
        rest = &rest[used..];
        out.push(msg);
    }
    out
}

/// One message starting at `base` with as many of `pkts` (sorted, unique, non-empty) as fit; returns it
/// and how many packets it holds (at least one).
fn build_one(pkts: &[(u64, SimTime)], base: u64, feedback_count: u8) -> (TwccFeedback, usize) {
    let base = base.max(pkts[0].0.saturating_sub(MAX_LEADING_MISSING));
    let reference = pkts[0].1.as_ns() / REFERENCE_TICK.as_ns();
    let mut last = (reference * REFERENCE_TICK.as_ns()) as i64;
    let tick = DELTA_TICK.as_ns() as i64;
    let mut deltas = vec![];
    let mut used = 0;
    for &(seq, t) in pkts {
        if seq - base + 1 > MAX_STATUSES {
            break;
        }
        let d = div_round(t.as_ns() as i64 - last, tick);
        if used > 0 && (d < i16::MIN as i64 || d > i16::MAX as i64) {
            break;
        }
        deltas.resize((seq - base) as usize, None);
        deltas.push(Some(d as i32));
        last += d * tick;
        used += 1;
    }
    let msg = TwccFeedback {
        sender_ssrc: 0,
        media_ssrc: 0,
        base_seq: base,
        feedback_count,
        reference_time: (reference % REFERENCE_WRAP) as u32,
        deltas,
    };
    (msg, used)
}

/// `twcc = { interval_ms = 100, back_window_ms = 500, scale_to_bitrate = false }`; every field is
/// optional.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TwccParams {
    /// Feedback interval, ms. Default 100 (libwebrtc `kDefaultInterval`, baselines.md §4.1).
    pub interval_ms: u32,
    /// Arrival records kept for re-reporting after reordering, ms. Default 500 (`kBackWindow`).
    pub back_window_ms: u32,
    /// Scale the interval to 5 % of the bitrate given to `on_bitrate_changed`, within [50, 250] ms.
    /// Default false.
    pub scale_to_bitrate: bool,
}

impl Default for TwccParams {
    fn default() -> Self {
        TwccParams { interval_ms: 100, back_window_ms: 500, scale_to_bitrate: false }
    }
}

impl TwccParams {
    pub fn validate(&self) -> Result<(), RtcParamError> {
        check(self.interval_ms > 0, "interval_ms", "must be > 0")
    }
}

/// Counters of a feedback generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TwccStats {
    pub packets_received: u64,
    pub duplicates: u64,
    pub feedback_messages: u64,
    /// Statuses sent over all messages (re-reports included).
    pub statuses_sent: u64,
    pub feedback_bytes: u64,
}

/// The receiver side of TWCC: records arrivals and emits periodic feedback.
#[derive(Clone, Debug)]
pub struct TwccReceiver {
    params: TwccParams,
    interval: SimDuration,
    arrivals: crate::seqmap::SeqMap<SimTime>,
    /// First sequence number of the next message.
    window_start: Option<u64>,
    next_due: Option<SimTime>,
    feedback_count: u8,
    stats: TwccStats,
}

impl TwccReceiver {
    pub fn new(params: TwccParams) -> Self {
        debug_assert!(params.validate().is_ok());
        let interval = SimDuration::from_ms(params.interval_ms as u64);
        TwccReceiver {
            params,
            interval,
            arrivals: crate::seqmap::SeqMap::new(),
            window_start: None,
            next_due: None,
            feedback_count: 0,
            stats: TwccStats::default(),
        }
    }

    /// The current feedback interval.
    pub fn interval(&self) -> SimDuration {
        self.interval
    }

    /// A packet with transport sequence number `seq` arrived now.
    pub fn on_packet(&mut self, now: SimTime, seq: u64) {
        self.stats.packets_received += 1;
        self.cull(now);
        if self.window_start.is_none_or(|w| seq < w) {
            self.window_start = Some(seq);
        }
        // A duplicate keeps its first arrival time (the feedback reports when the packet first came).
        match self.arrivals.get_mut(seq) {
            Some(first) => {
                *first = (*first).min(now);
                self.stats.duplicates += 1;
            }
            None => {
                self.arrivals.insert(seq, now);
            }
        }
        let oldest = self.arrivals.first().expect("just inserted").0;
        self.window_start = self.window_start.map(|w| w.max(oldest));
        self.align_due(now);
    }

    /// Once everything has been reported, forgets arrivals older than the back window.
    fn cull(&mut self, now: SimTime) {
        let back = SimDuration::from_ms(self.params.back_window_ms as u64);
        let all_reported = match (self.window_start, self.arrivals.last_key()) {
            (Some(w), Some(last)) => w > last,
            _ => false,
        };
        if all_reported && now.as_ns() >= back.as_ns() {
            let horizon = now - back;
            self.arrivals.retain(|_, &t| t >= horizon);
        }
    }

    /// Starts the feedback clock at the first arrival and keeps its phase across idle periods.
    fn align_due(&mut self, now: SimTime) {
        let due = self.next_due.get_or_insert(now + self.interval);
        if *due < now {
            let late = (now - *due).as_ns().div_ceil(self.interval.as_ns());
            *due += self.interval * late;
        }
    }

    /// When the next feedback will be sent; `None` when there is nothing to report.
    pub fn next_feedback(&self) -> Option<SimTime> {
        let pending = match (self.window_start, self.arrivals.last_key()) {
            (Some(w), Some(last)) => w <= last,
            _ => false,
        };
        if pending {
            self.next_due
        } else {
            None
        }
    }

    /// The feedback due at `now` (empty before it is due or with nothing to report).
    pub fn poll_feedback(&mut self, now: SimTime) -> Vec<TwccFeedback> {
        let Some(due) = self.next_feedback() else {
            return vec![];
        };
        if now < due {
            return vec![];
        }
        let start = self.window_start.expect("pending");
        let entries: Vec<(u64, SimTime)> = self.arrivals.range_from(start).map(|(s, &t)| (s, t)).collect();
        let msgs = build_feedback(&entries, Some(start), &mut self.feedback_count);
        self.window_start = entries.last().map(|e| e.0 + 1);
        self.next_due = Some(now + self.interval);
        self.stats.feedback_messages += msgs.len() as u64;
        for m in &msgs {
            self.stats.statuses_sent += m.status_count() as u64;
            self.stats.feedback_bytes += m.encoded_len() as u64;
        }
        msgs
    }

    /// The media bitrate changed: with `scale_to_bitrate`, feedback (68 bytes with IP/UDP/SRTP) takes
    /// 5 % of it, the interval clamped to [50, 250] ms.
    pub fn on_bitrate_changed(&mut self, bitrate: BitRate) {
        if !self.params.scale_to_bitrate {
            return;
        }
        let (min, max) = (SimDuration::from_ms(50), SimDuration::from_ms(250));
        let twcc_bps = bitrate.bps() / 20;
        let report_bits: u64 = 68 * 8;
        self.interval = match (report_bits * 1_000_000_000).checked_div(twcc_bps) {
            Some(ns) => SimDuration::from_ns(ns).clamp(min, max),
            None => max,
        };
    }

    pub fn stats(&self) -> TwccStats {
        self.stats
    }
}

#[cfg(test)]
#[path = "twcc_tests.rs"]
mod tests;
