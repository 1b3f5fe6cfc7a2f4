//! RTP-like packets of the video pipeline: the headers are fields, not bytes.
//!
//! One [`RtpPacket`] type travels through the whole pipeline (packetizer → FEC → pacer → network →
//! receiver), tagged by its [`Payload`]: a media packet carries its frame's [`MediaHeader`], a FEC repair
//! packet a [`RepairHeader`] (see [`super::fec`]). There is no SSRC: one video flow is one sender and one
//! receiver, and the three sequence spaces libwebrtc keeps apart by SSRC are kept apart by the payload kind
//! instead:
//!
//! * **media sequence** ([`RtpPacket::seq`] of a media packet) — RTP seq of the video stream, per packet,
//!   consecutive; the receiver's NACK module looks for gaps in it. A retransmission keeps the original's
//!   seq (libwebrtc sends it on the RTX SSRC with its own seq and carries the original as OSN; the receiver
//!   only ever sees the OSN, so we skip the indirection).
//! * **FEC sequence** ([`RtpPacket::seq`] of a repair packet) — FlexFEC's own stream (RFC 8627 §6.1 sends
//!   repair packets on a separate SSRC), so a lost repair packet never shows up as a media gap.
//! * **padding sequence** ([`RtpPacket::seq`] of a [`Payload::Padding`] packet) — the pacer's own
//!   counter for probe padding.
//! * **transport-wide sequence** ([`RtpPacket::transport_seq`]) — assigned by the pacer when the packet
//!   leaves (libwebrtc `RtpSenderEgress` does it at send time, so retransmissions and repair packets get
//!   fresh numbers), reported back in TWCC feedback.
//!
//! Sequence numbers are unwrapped `u64`s; the 16-bit wire values are their low bits
//! ([`RtpPacket::wire_seq`]), and [`super::twcc`] unwraps what it parses.

use super::fec::RepairHeader;
use crate::time::SimTime;
use serde::Serialize;

/// RTP fixed header, bytes (RFC 3550 §5.1).
pub const RTP_HEADER_BYTES: u32 = 12;
/// Header extensions (transport-wide seq, abs-send-time and friends), bytes (baselines.md §5.2).
pub const RTP_EXTENSION_BYTES: u32 = 8;
/// UDP (8) + IPv4 (20) headers, bytes.
pub const UDP_IPV4_BYTES: u32 = 28;
/// All per-packet overhead on top of the payload: 12 + 8 + 28 = 48 bytes (baselines.md §5.2).
pub const DEFAULT_OVERHEAD_BYTES: u32 = RTP_HEADER_BYTES + RTP_EXTENSION_BYTES + UDP_IPV4_BYTES;
/// Largest media payload per packet, bytes (libwebrtc's packetizer default, baselines.md §5.2).
pub const DEFAULT_MAX_PAYLOAD_BYTES: u32 = 1200;

/// The per-packet fields of a media packet that describe its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MediaHeader {
    /// Frame number, consecutive from 0 over encoded (not skipped) frames.
    pub frame_id: u64,
    /// Position of this packet in its frame, 0-based.
    pub index: u16,
    /// Packets in the frame.
    pub count: u16,
    /// Set on the last packet of the frame (the RTP marker bit for video).
    pub marker: bool,
    /// The frame is a keyframe (decodable without earlier frames).
    pub keyframe: bool,
}

/// What a packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Payload {
    /// A slice of an encoded frame.
    Media(MediaHeader),
    /// An XOR repair packet protecting media packets of one frame.
    Repair(RepairHeader),
    /// Padding sent by the pacer to fill a bandwidth probe when no media is queued (libwebrtc sends
    /// it on the RTX stream); the receiver only records it for TWCC.
    Padding,
}

/// One RTP packet of the video flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RtpPacket {
    /// Media or FEC sequence number (see the module docs), unwrapped.
    pub seq: u64,
    /// Transport-wide sequence number; `None` until the pacer sends the packet.
    pub transport_seq: Option<u64>,
    /// Payload bytes (media slice, or FlexFEC header + XOR payload).
    pub payload_bytes: u32,
    /// Header bytes on top of the payload (RTP + extensions + UDP/IP).
    pub overhead_bytes: u32,
    /// Capture time of the frame the packet belongs to (the RTP timestamp, in sender time).
    pub capture_time: SimTime,
    /// This copy is a retransmission answering a NACK.
    pub retransmission: bool,
    /// The bandwidth-probe cluster the pacer sent this packet in, if any.
    pub probe_cluster: Option<u32>,
    pub payload: Payload,
}

impl RtpPacket {
    /// Bytes on the wire (IP packet size).
    pub fn wire_bytes(&self) -> u64 {
        self.payload_bytes as u64 + self.overhead_bytes as u64
    }

    /// The 16-bit RTP sequence number as sent.
    pub fn wire_seq(&self) -> u16 {
        self.seq as u16
    }

    /// The media header, if this is a media packet.
    pub fn media(&self) -> Option<&MediaHeader> {
        match &self.payload {
            Payload::Media(m) => Some(m),
            _ => None,
        }
    }

    /// The repair header, if this is a FEC repair packet.
    pub fn repair(&self) -> Option<&RepairHeader> {
        match &self.payload {
            Payload::Repair(r) => Some(r),
            _ => None,
        }
    }
}
