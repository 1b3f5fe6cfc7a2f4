//! UDP sources at a constant bit rate or with Poisson gaps, and ping (a UDP source whose destination
//! answers every packet; its latency is the round trip).

use super::{Host, Socket, Wake};
use crate::app::UdpSource;
use crate::packet::{Hdr, Packet};
use crate::payload::Payload;
use crate::rng::Rng;

/// A UDP flow: one packet per [`Wake::Send`] timer; with `echo`, a ping.
#[derive(Debug)]
pub struct UdpHost {
    source: UdpSource,
    rng: Rng,
    seq: u64,
    /// The destination answers every packet; the round trip is the flow's latency.
    echo: bool,
}

impl UdpHost {
    pub fn new(source: UdpSource, rng: Rng, echo: bool) -> Self {
        UdpHost { source, rng, seq: 0, echo }
    }
}

impl Host for UdpHost {
    fn start(&mut self, s: &mut dyn Socket) {
        if let Some(t) = self.source.first(&mut self.rng) {
            s.schedule(t, Wake::Send);
        }
    }

    fn on_wake(&mut self, _wake: Wake, s: &mut dyn Socket) {
        let p = s.open(self.seq, self.source.packet_bytes, false, Hdr::None);
        self.seq += 1;
        if let Some(t) = self.source.advance(&mut self.rng) {
            s.schedule(t, Wake::Send);
        }
        s.tracker().on_sent(&p);
        s.send(p, None);
    }

    /// A ping request is answered; a reply (it carries its request's send time) ends a round trip.
    fn on_packet(&mut self, pkt: Packet, payload: Option<Payload>, s: &mut dyn Socket) {
        let now = s.now();
        if !self.echo {
            s.tracker().on_delivered(&pkt, pkt.sent, now);
            return;
        }
        match payload {
            Some(Payload::EchoOrigin(origin)) => s.tracker().on_delivered(&pkt, origin, now),
            _ => {
                let reply = s.open(pkt.seq, pkt.size, true, pkt.hdr);
                s.send(reply, Some(Payload::EchoOrigin(pkt.sent)));
            }
        }
    }

    fn set_rate(&mut self, rate: crate::units::BitRate) -> bool {
        self.source.set_rate(rate);
        true
    }
}
