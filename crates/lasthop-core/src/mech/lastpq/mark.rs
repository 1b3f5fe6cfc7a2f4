//! LAST-PQ's packet mark (spec §16): the 32-bit `skb->mark` set by an iptables MARK rule, the tag
//! 0xb45f in the top 16 bits and the permitted queueing latency in µs (R8) in the bottom 16. lasthop's
//! controller writes the flow state directly (`lpq_source = "flow"`); the mark is encoded for traces
//! and decoded to recognise a prioritized packet.

/// The tag in the top half of a LAST-PQ mark.
pub const TAG: u32 = 0xb45f;

/// The mark carrying permitted latency `l_pq_us` (saturated at 65 535 µs).
pub fn encode(l_pq_us: u64) -> u32 {
    TAG << 16 | l_pq_us.min(0xffff) as u32
}

/// The permitted latency (µs) of a prioritized packet's mark; `None` if the mark is not LAST-PQ's.
pub fn decode(mark: u32) -> Option<u16> {
    (mark >> 16 == TAG).then_some((mark & 0xffff) as u16)
}
