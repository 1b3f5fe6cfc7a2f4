//! What a packet carries beyond its header fields, in one store keyed by packet id.
//!
//! A [`Packet`](crate::packet::Packet) is a small `Copy` record that every queue moves by value; the
//! few packets whose endpoints need more than the header (an echo reply's request time, a TCP ACK's
//! SACK blocks, an RTP packet's media description, an RTCP message) keep it here until they are
//! delivered or dropped. A dropped packet's payload goes with it ([`Payloads::remove`]).

use crate::app::rtc::Rtcp;
use crate::rtc::rtp::RtpPacket;
use crate::time::SimTime;

/// The payload of one packet in flight.
#[derive(Debug)]
pub enum Payload {
    /// An echo reply: the send time of the request it answers.
    EchoOrigin(SimTime),
    /// A TCP ACK's SACK blocks.
    Sack(Vec<(u64, u64)>),
    /// An RTP packet (the network packet holds its header fields).
    Rtp(RtpPacket),
    /// An RTCP message.
    Rtcp(Rtcp),
}

/// Payloads of the packets in flight, by packet id. A hash map: it is only ever looked up by id, never
/// iterated, so its order cannot reach the model (the sim's "no HashMap iteration on the event path").
#[derive(Debug, Default)]
pub struct Payloads(rustc_hash::FxHashMap<u64, Payload>);

impl Payloads {
    pub(crate) fn insert(&mut self, id: u64, p: Payload) {
        self.0.insert(id, p);
    }

    /// Forgets packet `id`'s payload (it was dropped or consumed); returns it.
    pub(crate) fn remove(&mut self, id: u64) -> Option<Payload> {
        self.0.remove(&id)
    }

    pub(crate) fn rtp(&self, id: u64) -> Option<&RtpPacket> {
        match self.0.get(&id) {
            Some(Payload::Rtp(p)) => Some(p),
            _ => None,
        }
    }

    pub(crate) fn rtcp(&self, id: u64) -> Option<&Rtcp> {
        match self.0.get(&id) {
            Some(Payload::Rtcp(p)) => Some(p),
            _ => None,
        }
    }

    pub(crate) fn rtcp_mut(&mut self, id: u64) -> Option<&mut Rtcp> {
        match self.0.get_mut(&id) {
            Some(Payload::Rtcp(p)) => Some(p),
            _ => None,
        }
    }
}
