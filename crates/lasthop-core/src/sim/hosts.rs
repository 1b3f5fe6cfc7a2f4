//! The world's side of the hosts ([`crate::host`]): each flow's [`Socket`] onto the network, and the
//! calls into a flow's host when its timer fires, its packet arrives or is dropped, or a packet is
//! handed in from outside.

use super::world::{Event, World};
use crate::engine::TimerId;
use crate::host::{Host, Socket, Wake};
use crate::packet::{Hdr, NodeId, Packet};
use crate::payload::Payload;
use crate::stats::{DropReason, FlowTracker, Stage};
use crate::time::SimTime;

/// A flow: its two ends and its host.
#[derive(Debug)]
pub(crate) struct FlowSource {
    pub src: NodeId,
    pub dst: NodeId,
    pub dscp: u8,
    /// An `external` flow: its packets come from outside (`Sim::inject`).
    pub external: bool,
    /// `None` only while the host runs (a call for it meanwhile waits in `World::deferred`).
    pub host: Option<Box<dyn Host>>,
}

/// A call into a host.
#[derive(Debug)]
pub(crate) enum HostCall {
    Start,
    Wake(Wake),
    Packet(Packet, Option<Payload>),
    Dropped(Packet, DropReason),
}

/// Flow `flow`'s socket.
struct FlowSocket<'a> {
    w: &'a mut World,
    flow: u32,
}

impl Socket for FlowSocket<'_> {
    fn now(&self) -> SimTime {
        self.w.q.now()
    }
    fn end(&self) -> SimTime {
        self.w.end
    }
    fn open(&mut self, seq: u64, size: u32, reverse: bool, hdr: Hdr) -> Packet {
        let s = &self.w.sources[self.flow as usize];
        let ends = if reverse { (s.dst, s.src) } else { (s.src, s.dst) };
        let pkt = self.w.emit(self.w.q.now(), self.flow, seq, size, ends, hdr);
        if reverse {
            self.w.log.mark_reverse(pkt.id);
        }
        pkt
    }
    fn send(&mut self, pkt: Packet, payload: Option<Payload>) {
        if let Some(p) = payload {
            self.w.payloads.insert(pkt.id, p);
        }
        if let Some(t) = &mut self.w.tap {
            t.sent(self.w.q.now(), &pkt);
        }
        self.w.arrive(self.w.q.now(), pkt.src, pkt);
    }
    fn tracker(&mut self) -> &mut FlowTracker {
        &mut self.w.trackers[self.flow as usize]
    }
    fn schedule(&mut self, at: SimTime, wake: Wake) -> TimerId {
        let flow = self.flow;
        self.w.q.schedule(at, match wake {
            Wake::Send => Event::Send { flow },
            Wake::Timer => Event::FlowTimer { flow },
        })
    }
    fn cancel(&mut self, id: TimerId) {
        self.w.q.cancel(id);
    }
    fn egress(&mut self, e: super::Egress) {
        self.w.egress.push(e);
    }
}

impl World {
    /// Runs `f` on flow `flow`'s host with the flow's socket; then the calls that came for the host
    /// while it ran (a saturated source's own packet dropped as it sends another).
    fn with_host<R>(&mut self, flow: u32, f: impl FnOnce(&mut dyn Host, &mut dyn Socket) -> R) -> R {
        let mut h = self.sources[flow as usize].host.take().expect("a host is not re-entered");
        let r = f(&mut *h, &mut FlowSocket { w: self, flow });
        self.sources[flow as usize].host = Some(h);
        while let Some(i) = self.deferred.iter().position(|d| d.0 == flow) {
            let (_, call) = self.deferred.remove(i);
            self.call_host(flow, call);
        }
        r
    }

    /// Calls flow `flow`'s host now, or as soon as it returns if it is running.
    pub(super) fn call_host(&mut self, flow: u32, call: HostCall) {
        if self.sources[flow as usize].host.is_none() {
            self.deferred.push((flow, call));
            return;
        }
        self.with_host(flow, |h, s| match call {
            HostCall::Start => h.start(s),
            HostCall::Wake(w) => h.on_wake(w, s),
            HostCall::Packet(p, payload) => h.on_packet(p, payload, s),
            HostCall::Dropped(p, reason) => h.on_dropped(&p, reason, s),
        });
    }

    /// A packet reached its destination node: its flow's host takes it, with its payload.
    pub(super) fn deliver(&mut self, now: SimTime, pkt: Packet) {
        self.log.stamp(pkt.id, Stage::Delivered, now);
        if let Some(t) = &mut self.tap {
            t.delivered(now, &pkt);
        }
        if !self.mechs.is_empty() {
            self.mech_delivered(now, &pkt);
        }
        let payload = self.payloads.remove(pkt.id);
        self.call_host(pkt.flow, HostCall::Packet(pkt, payload));
    }

    /// Every host sets its first timers, in flow order.
    pub(super) fn start(&mut self) {
        for flow in 0..self.sources.len() as u32 {
            self.call_host(flow, HostCall::Start);
        }
    }

    /// A packet handed in from outside at one end of `external` flow `flow`; its id.
    pub(super) fn inject(&mut self, flow: u32, size: u32, dscp: Option<u8>, hdr: Hdr, payload: Option<Payload>, reverse: bool) -> Option<u64> {
        self.with_host(flow, |h, s| h.inject(size, dscp, hdr, payload, reverse, s))
    }

    /// A new packet of flow `flow` from `src` to `dst`, numbered and opened in the packet log.
    pub(crate) fn emit(&mut self, now: SimTime, flow: u32, seq: u64, size: u32, (src, dst): (NodeId, NodeId), hdr: Hdr) -> Packet {
        let dscp = self.sources[flow as usize].dscp;
        let pkt = Packet { id: self.next_packet_id, flow, seq, size, src, dst, hop: 0, dscp, sent: now, enqueued: now, hdr };
        self.next_packet_id += 1;
        self.log.open(&pkt);
        pkt
    }
}
