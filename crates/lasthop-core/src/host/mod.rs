//! Hosts: the two ends of a flow, and what they send and do with what arrives. Each kind of flow is
//! one [`Host`]: UDP CBR/Poisson and ping ([`udp`]), saturated ([`saturated`]), TCP with or without a
//! video application ([`tcp`]), an RTC call ([`rtc`]), and packets handed in from outside
//! ([`external`], the emulator's and `Sim::inject`'s).
//!
//! A host sees the network only through its [`Socket`]: it numbers new packets, puts them on the
//! network at their source, sets its timers and records what the flow's metrics need. The world
//! (`sim/`) implements the socket and calls the host when one of its timers fires, when one of its
//! packets arrives at either end, and when one is dropped. Hosts never see each other, the medium or
//! the mechanisms, so each can be driven in a test by a socket of the test's own.

pub mod external;
pub mod rtc;
pub mod saturated;
pub mod tcp;
pub mod udp;

use crate::engine::TimerId;
use crate::packet::{Hdr, Packet};
use crate::payload::Payload;
use crate::stats::{DropReason, FlowTracker};
use crate::time::SimTime;

/// What a host's timer is for: the next packet of a source that sends one per timer
/// ([`Wake::Send`]), or the flow's transport and application timers ([`Wake::Timer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    Send,
    Timer,
}

/// A flow's view of the network.
pub trait Socket {
    /// The model's clock.
    fn now(&self) -> SimTime;
    /// The end of the run.
    fn end(&self) -> SimTime;
    /// A new packet of the flow, numbered and opened in the packet log, with the flow's DSCP: from the
    /// flow's `from` end to its `to` end, or back (`reverse`: feedback, replies).
    fn open(&mut self, seq: u64, size: u32, reverse: bool, hdr: Hdr) -> Packet;
    /// Puts `pkt` on the network at its source; `payload` travels with it.
    fn send(&mut self, pkt: Packet, payload: Option<Payload>);
    /// The flow's metrics.
    fn tracker(&mut self) -> &mut FlowTracker;
    /// Sets a timer; the host's [`Host::on_wake`] runs at `at` (never before now).
    fn schedule(&mut self, at: SimTime, wake: Wake) -> TimerId;
    /// Cancels a timer that has not fired.
    fn cancel(&mut self, id: TimerId);
    /// Hands a delivered packet of an `external` flow out of the model (`Sim::drain_egress`).
    fn egress(&mut self, e: crate::sim::Egress);
}

/// Points `timer` at `next`: unchanged if it already fires then, else the old timer is cancelled and
/// a new one set at `next` (never in the past).
pub fn rearm(s: &mut dyn Socket, timer: &mut Option<(TimerId, SimTime)>, next: Option<SimTime>) {
    if timer.map(|x| x.1) == next {
        return;
    }
    if let Some((id, _)) = timer.take() {
        s.cancel(id);
    }
    let now = s.now();
    *timer = next.map(|at| (s.schedule(at.max(now), Wake::Timer), at));
}

pub use crate::rtc::quality::FrameRecord;

/// The two ends of one flow.
pub trait Host: Send + Sync + std::fmt::Debug {
    /// The run starts: set the first timers.
    fn start(&mut self, s: &mut dyn Socket);
    /// A timer the host set is due.
    fn on_wake(&mut self, wake: Wake, s: &mut dyn Socket);
    /// A packet of the flow reached its destination (either end); `payload` is what it carried.
    fn on_packet(&mut self, pkt: Packet, payload: Option<Payload>, s: &mut dyn Socket);
    /// A packet of the flow was dropped in the network (the flow's loss is already counted).
    fn on_dropped(&mut self, _pkt: &Packet, _reason: DropReason, _s: &mut dyn Socket) {}
    /// A packet handed in from outside at one end (`reverse`: at the `to` end), with the header fields
    /// read from it and what it carries beyond them; its id, or `None` for hosts that generate their own
    /// traffic.
    fn inject(&mut self, _size: u32, _dscp: Option<u8>, _hdr: Hdr, _payload: Option<Payload>, _reverse: bool, _s: &mut dyn Socket) -> Option<u64> {
        None
    }
    /// Changes the sending rate (a run-time command); false for hosts without one.
    fn set_rate(&mut self, _rate: crate::units::BitRate) -> bool {
        false
    }
    /// The run ended: hands the flow's end-of-run measurements (RTT samples, video quality) to its
    /// tracker.
    fn finish(&mut self, _tracker: &mut FlowTracker) {}
    /// Takes out the video frames the flow decoded or abandoned before `before` (not taken out yet),
    /// in the order they ended.
    fn take_frames(&mut self, _before: SimTime) -> Vec<FrameRecord> {
        Vec::new()
    }
    /// The transport's counters for `summary.json` (`None` for hosts without a transport).
    fn stats(&self) -> Option<serde_json::Value> {
        None
    }
}

#[cfg(test)]
mod tests;
