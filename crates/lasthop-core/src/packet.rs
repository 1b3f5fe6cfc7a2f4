//! The one packet model shared by every layer. Payloads are never copied: a packet is a small `Copy`
//! record of header fields; its per-layer timestamps live in the run's [`crate::stats::PacketLog`] under
//! the packet's `id`.

use crate::time::SimTime;

/// Index of a node (server, AP or station) in the run's topology.
pub type NodeId = u16;

/// A network-layer packet (IP datagram) in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Unique per run, in creation order; row index in the packet log.
    pub id: u64,
    /// Index of the flow in the scenario.
    pub flow: u32,
    /// Sequence number within the flow, from 0.
    pub seq: u64,
    /// IP packet size in bytes.
    pub size: u32,
    pub src: NodeId,
    pub dst: NodeId,
    /// The node the packet is queued for at its current hop on the Wi-Fi medium (its MAC header's
    /// receiver address, written when it enters a node's transmit path; 0 before): how a transmit
    /// path finds its station again when it leaves a queue shared by all of them.
    pub hop: NodeId,
    /// DSCP code point (0..=63).
    pub dscp: u8,
    /// When the application sent it.
    pub sent: SimTime,
    /// When it entered the queue it currently sits in (sojourn time for AQMs).
    pub enqueued: SimTime,
    /// Transport header fields (no payload is ever modelled).
    pub hdr: Hdr,
}

/// Transport-layer header fields a packet carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hdr {
    /// Plain UDP/ICMP: nothing beyond the IP header's fields above.
    #[default]
    None,
    /// A TCP segment: `seq` is the first payload byte (0 for a pure ACK), `len` the payload bytes,
    /// `ack` the cumulative acknowledgement, `ts_echo` the send time of the segment this ACK answers,
    /// `ecn` the IP header's ECN codepoint (on an ACK: the codepoint echoed from the data segment).
    Tcp { seq: u64, len: u32, ack: u64, ts_echo: SimTime, ecn: Ecn },
    /// An RTP media packet (or an FEC repair packet) with its transport-wide sequence number.
    Rtp { twcc: u32, frame: u32, index: u16, count: u16, fec: bool, rtx: bool },
    /// RTCP: `report` indexes the run's table of feedback messages (TWCC, NACK).
    Rtcp { report: u32 },
}

/// The two ECN bits of the IP header (RFC 3168 §5). Besides congestion marking (CE), ABC (Goyal et
/// al., NSDI'20) uses the two ECT codepoints as its one-bit feedback: ECT(1) = *accelerate*, ECT(0) =
/// *brake* (zhuge.md §5.3), echoed by the receiver in its ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ecn {
    /// Not ECN-capable transport (codepoint 00).
    #[default]
    NotEct,
    /// ECT(1) (01); ABC's *accelerate*.
    Ect1,
    /// ECT(0) (10); ABC's *brake*.
    Ect0,
    /// Congestion experienced (11).
    Ce,
}

impl Ecn {
    /// The two-bit codepoint as on the wire.
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
}
