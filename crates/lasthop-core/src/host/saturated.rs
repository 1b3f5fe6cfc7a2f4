//! A saturated source: a closed loop that keeps `backlog` packets in the network from `start` to `stop`.

use super::{Host, Socket, Wake};
use crate::packet::{Hdr, Packet};
use crate::payload::Payload;
use crate::stats::DropReason;
use crate::time::SimTime;

/// One new packet per packet delivered or dropped, until `stop`.
#[derive(Debug)]
pub struct SaturatedHost {
    start: SimTime,
    stop: SimTime,
    backlog: u32,
    packet_bytes: u32,
    seq: u64,
}

impl SaturatedHost {
    pub fn new(start: SimTime, stop: SimTime, backlog: u32, packet_bytes: u32) -> Self {
        SaturatedHost { start, stop, backlog, packet_bytes, seq: 0 }
    }

    fn send_one(&mut self, s: &mut dyn Socket) {
        let p = s.open(self.seq, self.packet_bytes, false, Hdr::None);
        self.seq += 1;
        s.tracker().on_sent(&p);
        s.send(p, None);
    }

    /// Replaces a packet that left the network, except one refused by a full queue the instant it was
    /// sent: the application's send would block there, so a backlog larger than the queues settles at
    /// what they hold (replacing it at once would loop forever).
    fn refill(&mut self, pkt: &Packet, reason: DropReason, s: &mut dyn Socket) {
        let now = s.now();
        if reason == DropReason::QueueFull && pkt.sent == now {
            return;
        }
        if now < self.stop {
            self.send_one(s);
        }
    }
}

impl Host for SaturatedHost {
    fn start(&mut self, s: &mut dyn Socket) {
        if self.start < self.stop {
            for _ in 0..self.backlog {
                s.schedule(self.start, Wake::Send);
            }
        }
    }

    fn on_wake(&mut self, _wake: Wake, s: &mut dyn Socket) {
        self.send_one(s);
    }

    fn on_packet(&mut self, pkt: Packet, _payload: Option<Payload>, s: &mut dyn Socket) {
        let now = s.now();
        s.tracker().on_delivered(&pkt, pkt.sent, now);
        self.refill(&pkt, DropReason::None, s);
    }

    fn on_dropped(&mut self, pkt: &Packet, reason: DropReason, s: &mut dyn Socket) {
        self.refill(pkt, reason, s);
    }
}
