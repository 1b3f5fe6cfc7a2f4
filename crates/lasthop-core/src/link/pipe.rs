//! A unidirectional wired pipe: queue → serializer (rate) → propagation delay.
//!
//! The pipe is a state machine driven by the world: `offer` a packet; when the serializer is idle the
//! world calls `start_next` and schedules the end of serialization; on that event it calls `finish` and
//! schedules the arrival `delay` later. Where no mechanism observes that end, the world calls `send`
//! instead: the packet propagates from its end at once, and the pipe takes its next packet at
//! `busy_until` (an end-of-serialization event without a packet, only when one waits). The packets propagating wait in the pipe itself
//! ([`Pipe::propagating`]), not in their arrival events: the delay is the same for all, so they arrive
//! in the order they finished, and an event that carried a whole packet made every event of the run
//! as large (the ns-3 anchor's engine time × 0.94 without).

use crate::packet::{NodeId, Packet};
use crate::queue::{AnyQueue, Dropped};
use crate::stats::Stage;
use crate::time::{SimDuration, SimTime};
use super::server::Server;

/// Where a pipe delivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeTarget {
    /// Always this node.
    Node(NodeId),
    /// The packet's destination (a shared last-hop pipe from an AP to its stations).
    Destination,
}

#[derive(Debug)]
pub struct Pipe {
    pub name: String,
    pub queue: AnyQueue,
    pub server: Server,
    pub delay: SimDuration,
    pub target: PipeTarget,
    /// Stages stamped on enqueue and at the start of serialization.
    pub stage_enq: Stage,
    pub stage_tx: Stage,
    /// Stamp air start/end as well (the pipe stands in for the air).
    pub is_last_hop: bool,
    /// The packet being serialized.
    pub in_service: Option<Packet>,
    /// Packets serialized and on their way, in the order they arrive.
    pub propagating: std::collections::VecDeque<Packet>,
    pub busy_ns: u64,
    /// The end of the serialization under way when its packet already propagates ([`Pipe::send`]):
    /// the next packet starts then.
    pub busy_until: SimTime,
    /// When an end-of-serialization event without a packet in service is pending (to start a queued
    /// packet at [`Pipe::busy_until`]).
    pub wake_at: Option<SimTime>,
}

impl Pipe {
    pub fn new(name: String, queue: AnyQueue, server: Server, delay: SimDuration, target: PipeTarget, last_hop: bool) -> Self {
        let (stage_enq, stage_tx) = if last_hop { (Stage::QdiscEnq, Stage::QdiscDeq) } else { (Stage::WiredEnq, Stage::WiredTx) };
        Pipe { name, queue, server, delay, target, stage_enq, stage_tx, is_last_hop: last_hop, in_service: None, propagating: Default::default(), busy_ns: 0,
               busy_until: SimTime::ZERO, wake_at: None }
    }

    /// Queues a packet; `Err` if the queue refused it.
    pub fn offer(&mut self, now: SimTime, p: Packet) -> Result<(), Dropped> {
        self.queue.enqueue(now, p)
    }

    /// If idle, takes the next packet into service and returns it with its serialization end time.
    pub fn start_next(&mut self, now: SimTime, drops: &mut Vec<Dropped>) -> Option<(Packet, SimTime)> {
        if self.in_service.is_some() || now < self.busy_until {
            return None;
        }
        let p = self.queue.dequeue(now, drops)?;
        let end = self.server.departure(now, p.size as u64);
        self.busy_ns += (end - now).as_ns();
        self.in_service = Some(p);
        Some((p, end))
    }

    /// Sends the packet just taken into service ([`Pipe::start_next`]) at once: it propagates from the
    /// end of its serialization, `end`, and the pipe takes its next packet then. For a pipe whose end of
    /// serialization nobody observes, this spares that event (one of three per packet on a wired hop).
    pub fn send(&mut self, end: SimTime) {
        let p = self.in_service.take().expect("send called on an idle pipe");
        self.busy_until = end;
        self.propagating.push_back(p);
    }

    /// Ends the current serialization: the packet starts propagating, and is returned (a copy).
    pub fn finish(&mut self) -> Packet {
        let p = self.in_service.take().expect("finish called on an idle pipe");
        self.propagating.push_back(p);
        p
    }

    /// The packet that arrives next at the far end (the next arrival event's).
    pub fn arriving(&self) -> &Packet {
        self.propagating.front().expect("an arrival with no packet propagating")
    }

    /// Takes the packet that arrives now.
    pub fn arrive(&mut self) -> Packet {
        self.propagating.pop_front().expect("an arrival with no packet propagating")
    }
}
