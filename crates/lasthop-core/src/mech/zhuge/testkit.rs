//! Helpers for Zhuge's tests: times in ms/µs and a link that sends one packet per millisecond.

use super::egress::{EgressObserver, EgressPacket, Stage};
use crate::time::{SimDuration, SimTime};

pub fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

pub fn us(x: u64) -> SimTime {
    SimTime::from_us(x)
}

pub fn dms(x: u64) -> SimDuration {
    SimDuration::from_ms(x)
}

pub fn dus(x: u64) -> SimDuration {
    SimDuration::from_us(x)
}

/// A packet of `bytes`, not of the monitored flow.
pub fn pkt(id: u64, bytes: u32) -> EgressPacket {
    EgressPacket { id, bytes, monitored: false }
}

/// A link that keeps one packet in the driver queue and sends one every millisecond: at `k ms + 500 µs`
/// the head leaves and a new packet enters `Q_v` directly. Every tick after the first then sees
/// exactly one departure of `bytes` with a backlog, so the estimator converges to `8·bytes` kbit/s
/// and a 1000-µs dequeue interval.
pub struct SteadyLink {
    pub bytes: u32,
    /// Mark the packets as the monitored flow's.
    pub monitored: bool,
    next_id: u64,
    head: Option<u64>,
}

impl SteadyLink {
    pub fn new(bytes: u32) -> Self {
        SteadyLink { bytes, monitored: false, next_id: 1 << 40, head: None }
    }

    /// One departure (if a packet is queued) and one arrival at `now`.
    pub fn step(&mut self, obs: &mut impl EgressObserver, now: SimTime) {
        if let Some(h) = self.head.take() {
            obs.on_dequeue(now, h);
        }
        let id = self.next_id;
        self.next_id += 1;
        obs.on_enqueue(now, EgressPacket { id, bytes: self.bytes, monitored: self.monitored }, Stage::Driver);
        self.head = Some(id);
    }

    /// Steps at `k ms + 500 µs` for `k` in `from_ms .. from_ms + n`.
    pub fn run(&mut self, obs: &mut impl EgressObserver, from_ms: u64, n: u64) {
        for k in from_ms..from_ms + n {
            self.step(obs, us(k * 1000 + 500));
        }
    }

    /// The packet currently in the driver queue.
    pub fn head(&self) -> Option<u64> {
        self.head
    }

    /// The queued packet (if any) departs at `now`, ahead of the next step.
    pub fn depart(&mut self, obs: &mut impl EgressObserver, now: SimTime) {
        if let Some(h) = self.head.take() {
            obs.on_dequeue(now, h);
        }
    }
}
