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
    /// DSCP code point (0..=63).
    pub dscp: u8,
    /// When the application sent it.
    pub sent: SimTime,
    /// When it entered the queue it currently sits in (sojourn time for AQMs).
    pub enqueued: SimTime,
}
