//! The AP egress toward the client as Zhuge's estimators see it (zhuge.md §1): the qdisc `Q_d` and,
//! below it, the driver queue `Q_v` whose departures feed the dequeue-rate estimator. A packet being
//! serialised on the link is in neither.
//!
//! The estimators do not own the queues; they keep a mirror fed by four calls ([`EgressObserver`]),
//! which the integrator makes at the AP in the order the packet lives through them:
//!
//! ```text
//!   arrival ─on_enqueue(Stage::Qdisc)─▶ Q_d ─on_to_driver─▶ Q_v ─on_dequeue─▶ link
//!                                        │                   │
//!                                        └──── on_drop ──────┘   (AQM, overflow, retry limit)
//! ```
//!
//! An AP with a single queue enqueues straight into [`Stage::Driver`]. What counts as leaving `Q_v`
//! is the integrator's choice and should be "the link has taken the bytes": transmission start on a
//! point-to-point link, and on 802.11 the MPDU's first transmission attempt (so an A-MPDU leaves in one
//! tick, as it leaves ns-3's `WifiMacQueue`; retries belong to the MAC). A drop from `Q_v` counts as a departure
//! (the ns-3 queue's `received − queued` byte count does the same); a drop from `Q_d` does not.

use super::dequeue_window::Backlog;
use crate::time::SimTime;
use std::collections::{BTreeMap, VecDeque};

/// Where a packet enters the AP egress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The qdisc (`Q_d`).
    Qdisc,
    /// The driver/device queue (`Q_v`), for an AP without a separate qdisc.
    Driver,
}

/// A packet entering the AP egress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EgressPacket {
    /// A key unique among the packets queued at the AP (lasthop: `Packet::id`).
    pub id: u64,
    /// Bytes on the wire (IP packet size, as every queue in lasthop counts them).
    pub bytes: u32,
    /// The packet belongs to the flow this estimator serves (the Fortune Teller's monitored flow).
    pub monitored: bool,
}

/// The four egress events every Zhuge-side estimator consumes. Each call first catches the component
/// up to `now` (its 1-ms ticks see only what happened strictly before them).
pub trait EgressObserver {
    /// `pkt` was admitted to the egress at `stage` (after the queue accepted it).
    fn on_enqueue(&mut self, now: SimTime, pkt: EgressPacket, stage: Stage);
    /// Packet `id` moved from the qdisc to the driver queue.
    fn on_to_driver(&mut self, now: SimTime, id: u64);
    /// Packet `id` left the driver queue for the link.
    fn on_dequeue(&mut self, now: SimTime, id: u64);
    /// Packet `id` was dropped from whichever queue holds it.
    fn on_drop(&mut self, now: SimTime, id: u64);
}

/// An estimator that keeps its own mirror of the egress and catches up its 1-ms ticks before each
/// event: every such estimator observes the egress the same way ([`EgressObserver`] is implemented
/// for all of them).
pub trait EgressMirror {
    /// Replays the ticks due at or before `now`.
    fn catch_up(&mut self, now: SimTime);
    fn egress_mut(&mut self) -> &mut Egress;
    /// Called with each admitted packet before the mirror takes it (the Fortune Teller's head timer).
    fn on_admit(&mut self, _pkt: &EgressPacket) {}
}

impl<T: EgressMirror> EgressObserver for T {
    fn on_enqueue(&mut self, now: SimTime, pkt: EgressPacket, stage: Stage) {
        self.catch_up(now);
        self.on_admit(&pkt);
        self.egress_mut().enqueue(now, pkt, stage);
    }

    fn on_to_driver(&mut self, now: SimTime, id: u64) {
        self.catch_up(now);
        self.egress_mut().to_driver(now, id);
    }

    fn on_dequeue(&mut self, now: SimTime, id: u64) {
        self.catch_up(now);
        self.egress_mut().dequeue(now, id);
    }

    fn on_drop(&mut self, now: SimTime, id: u64) {
        self.catch_up(now);
        self.egress_mut().drop(now, id);
    }
}

/// Mirror of the egress queues.
#[derive(Clone, Debug, Default)]
pub struct Egress {
    qdisc: BTreeMap<u64, EgressPacket>,
    qdisc_bytes: u64,
    /// The driver queue, each packet with when it entered it.
    driver: VecDeque<(EgressPacket, SimTime)>,
    driver_bytes: u64,
    enqueued_total: u64,
    departed_total: u64,
    head_since: Option<SimTime>,
    /// When a packet last left the driver queue.
    last_departure: Option<SimTime>,
}

impl Egress {
    pub fn enqueue(&mut self, now: SimTime, pkt: EgressPacket, stage: Stage) {
        self.enqueued_total += pkt.bytes as u64;
        match stage {
            Stage::Qdisc => {
                let old = self.qdisc.insert(pkt.id, pkt);
                debug_assert!(old.is_none(), "packet {} enqueued twice", pkt.id);
                self.qdisc_bytes += pkt.bytes as u64;
            }
            Stage::Driver => self.push_driver(now, pkt),
        }
    }

    /// Moves a packet from the qdisc to the driver queue.
    pub fn to_driver(&mut self, now: SimTime, id: u64) {
        let Some(pkt) = self.qdisc.remove(&id) else {
            debug_assert!(false, "packet {id} is not in the qdisc");
            return;
        };
        self.qdisc_bytes -= pkt.bytes as u64;
        self.push_driver(now, pkt);
    }

    fn push_driver(&mut self, now: SimTime, pkt: EgressPacket) {
        if self.driver.is_empty() {
            self.head_since = Some(now);
        }
        self.driver_bytes += pkt.bytes as u64;
        self.driver.push_back((pkt, now));
    }

    /// Removes a packet from the driver queue (a departure, or a drop from it). `false` if absent.
    fn remove_driver(&mut self, now: SimTime, id: u64) -> bool {
        let Some(i) = self.driver.iter().position(|(p, _)| p.id == id) else { return false };
        let (p, _) = self.driver.remove(i).expect("index found");
        self.driver_bytes -= p.bytes as u64;
        self.departed_total += p.bytes as u64;
        self.last_departure = Some(now);
        if i == 0 {
            self.head_since = (!self.driver.is_empty()).then_some(now);
        }
        true
    }

    pub fn dequeue(&mut self, now: SimTime, id: u64) {
        let found = self.remove_driver(now, id);
        debug_assert!(found, "packet {id} is not in the driver queue");
    }

    pub fn drop(&mut self, now: SimTime, id: u64) {
        if let Some(pkt) = self.qdisc.remove(&id) {
            self.qdisc_bytes -= pkt.bytes as u64;
        } else {
            let found = self.remove_driver(now, id);
            debug_assert!(found, "dropped packet {id} is not queued");
        }
    }

    pub fn qdisc_bytes(&self) -> u64 {
        self.qdisc_bytes
    }

    pub fn driver_bytes(&self) -> u64 {
        self.driver_bytes
    }

    /// Bytes that ever entered the egress (qdisc or driver).
    pub fn enqueued_total(&self) -> u64 {
        self.enqueued_total
    }

    /// Bytes that ever left the driver queue (departures and drops from it).
    pub fn departed_total(&self) -> u64 {
        self.departed_total
    }

    /// What the driver queue holds, for the dequeue window's tick: a queue whose oldest packet came
    /// at or after the last departure has not been offered to the link yet (it waits for access); one
    /// that holds a packet the last departure left behind is being served.
    pub fn backlog(&self) -> Backlog {
        match (self.driver.front(), self.last_departure) {
            (None, _) => Backlog::Empty,
            (Some(&(_, t)), Some(d)) if t < d => Backlog::Served,
            (Some(_), _) => Backlog::AwaitingAccess,
        }
    }

    /// The packet at the head of the driver queue and since when it has been there.
    pub fn head(&self) -> Option<(EgressPacket, SimTime)> {
        self.driver.front().map(|(p, _)| (*p, self.head_since.expect("head has a start")))
    }

    /// Bytes of the driver queue ahead of its newest monitored packet (0 if it holds none): §2.4's walk
    /// from the tail, subtracting every packet up to and including the first monitored one.
    pub fn driver_bytes_ahead_of_last_monitored(&self) -> u64 {
        let mut q = self.driver_bytes;
        for (p, _) in self.driver.iter().rev() {
            q -= p.bytes as u64;
            if p.monitored {
                return q;
            }
        }
        q
    }
}

/// The 1-ms tick grid of an estimator: ticks at `start + k·TICK`, `k ≥ 1`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TickClock {
    next: SimTime,
}

impl TickClock {
    pub fn new(start: SimTime) -> Self {
        TickClock { next: start + super::dequeue_window::TICK }
    }

    /// The number of ticks at or before `now` not yet run; they count as run after this call.
    pub fn take_due(&mut self, now: SimTime) -> u64 {
        if now < self.next {
            return 0;
        }
        let tick = super::dequeue_window::TICK.as_ns();
        let n = (now - self.next).as_ns() / tick + 1;
        self.next = SimTime::from_ns(self.next.as_ns() + n * tick);
        n
    }
}
