//! A tap on the hosts' packets: every packet a flow's host sends, and every packet delivered to one,
//! with its header fields, at the model time it happens — what a capture at each end host would see
//! (`lasthop run --pcap` writes them as pcap files). Observation only: a tap cannot change the run.

use crate::packet::Packet;
use crate::time::SimTime;

/// Sees the packets at the end hosts, in event order.
pub trait PacketTap: std::fmt::Debug + Send + Sync {
    /// Flow `pkt.flow`'s host at node `pkt.src` sent `pkt` (or one was handed in there from outside).
    fn sent(&mut self, now: SimTime, pkt: &Packet);
    /// `pkt` reached its destination node `pkt.dst`, and its host takes it.
    fn delivered(&mut self, now: SimTime, pkt: &Packet);
    /// The run is over: flush what is buffered; an error says what could not be written.
    fn close(&mut self) -> Result<(), String> {
        Ok(())
    }
}
