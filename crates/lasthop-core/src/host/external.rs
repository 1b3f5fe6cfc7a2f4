//! Packets handed in from outside the model (`Sim::inject`, the emulator): the host only numbers them
//! and hands the delivered ones back out.

use super::{Host, Socket, Wake};
use crate::packet::{Hdr, NodeId, Packet};
use crate::payload::Payload;
use crate::sim::Egress;

/// An `external` flow's two ends.
#[derive(Debug)]
pub struct ExternalHost {
    /// The flow's `to` node: a packet from it travels back (`reverse`).
    to: NodeId,
    seq: u64,
}

impl ExternalHost {
    pub fn new(to: NodeId) -> Self {
        ExternalHost { to, seq: 0 }
    }
}

impl Host for ExternalHost {
    fn start(&mut self, _s: &mut dyn Socket) {}

    fn on_wake(&mut self, _wake: Wake, _s: &mut dyn Socket) {}

    fn on_packet(&mut self, pkt: Packet, payload: Option<Payload>, s: &mut dyn Socket) {
        let now = s.now();
        // Delivered at the `from` end: it came back (from the `to` end, or made on the way, as
        // Zhuge's feedback is at the AP).
        let reverse = pkt.dst != self.to;
        if !reverse {
            s.tracker().on_delivered(&pkt, pkt.sent, now);
        }
        let rtcp = match payload {
            Some(Payload::Rtcp(r)) => Some(r),
            _ => None,
        };
        s.egress(Egress { flow: pkt.flow, reverse, id: pkt.id, size: pkt.size, dscp: pkt.dscp, sent: pkt.sent, delivered: now, rtcp });
    }

    fn inject(&mut self, size: u32, dscp: Option<u8>, hdr: Hdr, payload: Option<Payload>, reverse: bool, s: &mut dyn Socket) -> Option<u64> {
        let mut p = s.open(self.seq, size, reverse, hdr);
        self.seq += 1;
        if let Some(d) = dscp {
            p.dscp = d;
        }
        if !reverse {
            s.tracker().on_sent(&p);
        }
        s.send(p, payload);
        Some(p.id)
    }
}
