//! The world's state, its events, and packet forwarding between nodes.

use super::hosts::{FlowSource, HostCall};
use crate::engine::EventQueue;
use crate::engine::TimerId;
use crate::link::{Pipe, PipeTarget};
use crate::mac::medium::{Medium, Outputs, Scheduler, WifiEvent};
use crate::packet::{NodeId, Packet};
use crate::queue::Dropped;
use crate::stats::{DropReason, FlowTracker, PacketLog, Stage};
use crate::time::SimTime;

/// Events of the world. Each names the component it is for by index.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    /// Flow `flow` sends its next packet.
    Send { flow: u32 },
    /// Pipe `pipe` finished serializing its packet.
    PipeTxEnd { pipe: u32 },
    /// The next packet propagating in pipe `pipe` ([`crate::link::pipe::Pipe::arriving`]) reached its far end.
    PipeArrive { pipe: u32 },
    /// An event of the 802.11 medium.
    Wifi(WifiEvent),
    /// A transport timer of flow `flow` (TCP pacing, RTO, delayed ACK).
    FlowTimer { flow: u32 },
    /// The timer of the mechanism at AP mechanism index `ap`.
    Mech { ap: u32 },
    /// The scenario's command `idx` is due.
    Command { idx: u32 },
}

/// The next hop of a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    Pipe(u32),
    /// Over the air to this neighbour.
    Wifi(NodeId),
}

/// Lets the medium schedule its events on the world's queue.
struct WifiSched<'a>(&'a mut EventQueue<Event>);

impl Scheduler for WifiSched<'_> {
    fn schedule(&mut self, at: SimTime, ev: WifiEvent) -> TimerId {
        self.0.schedule(at, Event::Wifi(ev))
    }
    fn cancel(&mut self, id: TimerId) {
        self.0.cancel(id);
    }
}

impl Event {
    /// What the event digest folds in for this event; `pipes` names the packet an arrival carries.
    pub(super) fn tag(&self, pipes: &[Pipe]) -> u64 {
        match self {
            Event::Send { flow } => 1 | (*flow as u64) << 8,
            Event::PipeTxEnd { pipe } => 2 | (*pipe as u64) << 8,
            Event::PipeArrive { pipe } => 3 | (*pipe as u64) << 8 | pipes[*pipe as usize].arriving().id << 24,
            Event::Wifi(WifiEvent::Access) => 4,
            Event::Wifi(WifiEvent::PpduEnd) => 5,
            Event::Wifi(WifiEvent::ExchangeEnd { node }) => 6 | (*node as u64) << 8,
            Event::Wifi(WifiEvent::TxopContinue { node }) => 7 | (*node as u64) << 8,
            Event::Wifi(WifiEvent::HwDeadline { node, ac }) => 9 | (*node as u64) << 8 | (*ac as u64) << 40,
            Event::Wifi(WifiEvent::NodeWakeup { node }) => 12 | (*node as u64) << 8,
            Event::Wifi(WifiEvent::AirEnd { node }) => 13 | (*node as u64) << 8,
            Event::Wifi(WifiEvent::RtsData { node }) => 14 | (*node as u64) << 8,
            Event::FlowTimer { flow } => 8 | (*flow as u64) << 8,
            Event::Mech { ap } => 11 | (*ap as u64) << 8,
            Event::Command { idx } => 10 | (*idx as u64) << 8,
        }
    }
}

pub(crate) struct World {
    pub q: EventQueue<Event>,
    pub end: SimTime,
    pub pipes: Vec<Pipe>,
    /// `route[node][dst]` = the next hop.
    pub route: Vec<Vec<Option<Hop>>>,
    /// What the packets in flight carry beyond their header fields.
    pub payloads: crate::payload::Payloads,
    pub medium: Option<Medium>,
    pub delivered: Vec<(NodeId, Packet)>,
    pub sources: Vec<FlowSource>,
    /// Calls for hosts that were running when they came, in order.
    pub deferred: Vec<(u32, HostCall)>,
    pub trackers: Vec<FlowTracker>,
    /// Video frame rows moved out of the hosts and not yet taken out of the run ([`super::Sim::take_frame_rows`]).
    pub frame_rows: crate::stats::FrameSeries,
    pub log: PacketLog,
    pub next_packet_id: u64,
    pub drops: Vec<Dropped>,
    pub digest: u64,
    /// The hooks of the mechanisms installed on the APs.
    pub mechs: super::mech::Mechs,
    /// Packets of `external` flows delivered at either end, for `Sim::drain_egress`.
    pub egress: Vec<super::Egress>,
    /// The scenario's commands, resolved, in order (`Event::Command` indexes them).
    pub commands: Vec<(super::command::Target, serde_json::Map<String, serde_json::Value>)>,
    /// What sees the end hosts' packets (`Sim::with_tap`).
    pub tap: Option<Box<dyn super::PacketTap>>,
    /// Per AP and station with mechanisms: its name and what was installed on it.
    pub installed: Vec<(String, Vec<crate::mech::hook::MechanismInfo>)>,
}

/// Points `timer` at `next`: unchanged if it already fires then, else the old event is cancelled and
/// `ev` is scheduled at `next` (never in the past).
pub(crate) fn rearm(q: &mut EventQueue<Event>, timer: &mut Option<(TimerId, SimTime)>, next: Option<SimTime>, ev: Event) {
    if timer.map(|x| x.1) == next {
        return;
    }
    if let Some((id, _)) = timer.take() {
        q.cancel(id);
    }
    let now = q.now();
    *timer = next.map(|at| (q.schedule(at.max(now), ev), at));
}

impl World {
    pub(super) fn handle(&mut self, now: SimTime, ev: Event) {
        match ev {
            Event::Send { flow } => self.call_host(flow, HostCall::Wake(crate::host::Wake::Send)),
            Event::PipeTxEnd { pipe } => self.on_pipe_tx_end(now, pipe),
            Event::PipeArrive { pipe } => {
                let p = &mut self.pipes[pipe as usize];
                let pkt = p.arrive();
                let at = match p.target {
                    PipeTarget::Node(n) => n,
                    PipeTarget::Destination => pkt.dst,
                };
                self.arrive(now, at, pkt);
            }
            Event::FlowTimer { flow } => self.call_host(flow, HostCall::Wake(crate::host::Wake::Timer)),
            Event::Mech { ap } => self.on_mech_timer(now, ap as usize),
            Event::Command { idx } => {
                let (t, set) = self.commands[idx as usize].clone();
                self.apply_command(now, &t, &set).expect("resolved at validation");
            }
            Event::Wifi(ev) => {
                let m = self.medium.as_mut().expect("Wi-Fi events need a medium");
                let air = (!self.mechs.is_empty()).then_some(&mut self.mechs.air);
                let mut out = Outputs { log: &mut self.log, delivered: &mut self.delivered, dropped: &mut self.drops, air };
                m.handle(now, ev, &mut WifiSched(&mut self.q), &mut out);
                self.drain(now);
            }
        }
    }

    /// Processes what the medium delivered and dropped.
    fn drain(&mut self, now: SimTime) {
        self.drain_air_report(now);
        while let Some(d) = self.drops.pop() {
            self.dropped(now, d);
        }
        let mut i = 0;
        while i < self.delivered.len() {
            let (at, pkt) = self.delivered[i];
            i += 1;
            let r = self.wifi_mechs_of_station(at);
            if !r.is_empty() {
                self.mech_departed(now, r, pkt.id, pkt.dst);
            }
            self.arrive(now, at, pkt);
        }
        self.delivered.clear();
    }


    /// A packet is at node `at`: deliver it or forward it along its route.
    pub(crate) fn arrive(&mut self, now: SimTime, at: NodeId, mut pkt: Packet) {
        if at == pkt.dst {
            self.deliver(now, pkt);
            return;
        }
        let hop = self.route[at as usize][pkt.dst as usize].expect("validated scenarios are routable");
        if !self.mechs.is_empty() && self.mech_forward(now, at, &mut pkt, hop) {
            return;
        }
        let pipe = match hop {
            Hop::Pipe(p) => p,
            Hop::Wifi(next) => {
                let m = self.medium.as_mut().expect("Wi-Fi hops need a medium");
                let air = (!self.mechs.is_empty()).then_some(&mut self.mechs.air);
                let mut out = Outputs { log: &mut self.log, delivered: &mut self.delivered, dropped: &mut self.drops, air };
                m.enqueue(now, at, next, pkt, &mut WifiSched(&mut self.q), &mut out);
                self.drain_air_report(now);
                if !self.drops.is_empty() {
                    let ds: Vec<Dropped> = self.drops.drain(..).collect();
                    for d in ds {
                        self.dropped(now, d);
                    }
                }
                return;
            }
        };
        let p = &mut self.pipes[pipe as usize];
        self.log.stamp(pkt.id, p.stage_enq, now);
        let r = p.offer(now, pkt);
        // fq_codel may cut other flows' packets to admit this one.
        p.queue.drain_drops(&mut self.drops);
        match r {
            Ok(()) => self.kick_pipe(now, pipe),
            Err(d) => self.dropped(now, d),
        }
        while let Some(d) = self.drops.pop() {
            self.dropped(now, d);
        }
    }

    fn kick_pipe(&mut self, now: SimTime, pipe: u32) {
        let p = &mut self.pipes[pipe as usize];
        if let Some((pkt, end)) = p.start_next(now, &mut self.drops) {
            self.log.stamp(pkt.id, p.stage_tx, now);
            if p.is_last_hop {
                self.log.stamp_first(pkt.id, Stage::AirStart, now);
            }
            if self.mechs_of_pipe(pipe).is_empty() {
                // Nothing observes the end of this serialization: the packet propagates from `end`
                // at once, and the pipe is woken at `end` only if a packet waits for it then.
                let p = &mut self.pipes[pipe as usize];
                p.send(end);
                if p.is_last_hop && end <= self.end {
                    self.log.stamp(pkt.id, Stage::AirEnd, end);
                }
                self.q.schedule(end + p.delay, Event::PipeArrive { pipe });
                self.wake_when_free(pipe);
            } else {
                self.q.schedule(end, Event::PipeTxEnd { pipe });
            }
            if !self.mechs.is_empty() {
                self.mech_pipe_start(now, pipe, &pkt);
            }
        } else {
            let p = &self.pipes[pipe as usize];
            if p.in_service.is_none() && now < p.busy_until {
                self.wake_when_free(pipe);
            }
        }
        while let Some(d) = self.drops.pop() {
            self.dropped(now, d);
        }
    }

    /// Wakes `pipe` when its serializer frees ([`Pipe::busy_until`]) if a packet waits for it then: once
    /// per instant.
    fn wake_when_free(&mut self, pipe: u32) {
        let p = &mut self.pipes[pipe as usize];
        if p.queue.len_packets() > 0 && p.wake_at != Some(p.busy_until) {
            p.wake_at = Some(p.busy_until);
            self.q.schedule(p.busy_until, Event::PipeTxEnd { pipe });
        }
    }

    fn on_pipe_tx_end(&mut self, now: SimTime, pipe: u32) {
        let p = &mut self.pipes[pipe as usize];
        if p.in_service.is_none() {
            // A wake-up: the packet already propagates ([`Pipe::send`]); the next one starts now.
            if p.wake_at == Some(now) {
                p.wake_at = None;
            }
            return self.kick_pipe(now, pipe);
        }
        let pkt = p.finish();
        if p.is_last_hop {
            self.log.stamp(pkt.id, Stage::AirEnd, now);
        }
        let at = now + p.delay;
        self.q.schedule(at, Event::PipeArrive { pipe });
        let r = self.mechs_of_pipe(pipe);
        if !r.is_empty() {
            self.mech_departed(now, r, pkt.id, pkt.dst);
        }
        self.kick_pipe(now, pipe);
    }

    fn dropped(&mut self, now: SimTime, (pkt, reason): Dropped) {
        debug_assert_ne!(reason, DropReason::None);
        self.log.drop(pkt.id, reason);
        if !self.mechs.is_empty() {
            self.mech_dropped(now, &pkt);
        }
        let origin = match self.payloads.remove(pkt.id) {
            Some(crate::payload::Payload::EchoOrigin(t)) => t,
            _ => pkt.sent,
        };
        // Feedback against the flow's direction (TCP ACKs, RTCP, an external flow's reverse packets) is
        // not the flow's loss.
        let feedback = matches!(pkt.hdr, crate::packet::Hdr::Tcp { len: 0, .. } | crate::packet::Hdr::Rtcp { .. })
            || (self.sources[pkt.flow as usize].external && pkt.src == self.sources[pkt.flow as usize].dst);
        if !feedback {
            self.trackers[pkt.flow as usize].on_dropped(origin, pkt.seq);
        }
        self.call_host(pkt.flow, HostCall::Dropped(pkt, reason));
    }

}
