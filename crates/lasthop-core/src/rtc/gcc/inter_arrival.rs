//! Send-time grouping and inter-group delay variation (libwebrtc `InterArrivalDelta`).
//!
//! Packets are grouped by send time: a group holds the packets sent within `group_length` (5 ms) of its
//! first one, plus a *burst* — a packet that arrived within 5 ms of the group's last arrival, sooner
//! after it than it was sent (arrival delta < send delta), and less than 100 ms after the group's first
//! arrival — or any packet sent at the same instant as the group's last. When a packet opens a new group,
//! the previous two complete groups give one sample:
//!
//! ```text
//! send_delta    = G.last_send − G_prev.last_send
//! arrival_delta = G.last_arrival − G_prev.last_arrival      (d = arrival_delta − send_delta)
//! ```
//!
//! A packet sent before the current group's first packet is reordered and ignored. A negative
//! `arrival_delta` skips the sample (and the packet that revealed it), and three in a row reset the
//! state; a jump of 3 s or more between the arrival clock and the feedback clock also resets it.

use crate::time::{SimDuration, SimTime};

const BURST_DELTA: i64 = 5_000_000;
const MAX_BURST_DURATION: i64 = 100_000_000;
const ARRIVAL_OFFSET_THRESHOLD: i64 = 3_000_000_000;
const REORDERED_RESET: u32 = 3;

/// One inter-group sample, nanoseconds and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deltas {
    pub send_ns: i64,
    pub arrival_ns: i64,
    pub size_bytes: i64,
}

#[derive(Clone, Copy, Debug)]
struct Group {
    first_send: SimTime,
    /// Latest send time in the group.
    send: SimTime,
    first_arrival: SimTime,
    /// Arrival of the group's last packet.
    complete: SimTime,
    /// Feedback (system) time of the group's last packet.
    last_system: SimTime,
    size: u64,
}

fn diff(a: SimTime, b: SimTime) -> i64 {
    a.as_ns() as i64 - b.as_ns() as i64
}

/// Groups packets and produces inter-group deltas.
#[derive(Clone, Debug)]
pub struct InterArrival {
    group_length: SimDuration,
    current: Option<Group>,
    prev: Option<Group>,
    reordered: u32,
}

impl InterArrival {
    pub fn new(group_length: SimDuration) -> Self {
        InterArrival { group_length, current: None, prev: None, reordered: 0 }
    }

    fn reset(&mut self) {
        *self = InterArrival::new(self.group_length);
    }

    /// Adds one packet (in arrival order); returns a sample when it completes a group after a previous
    /// complete group. `system` is the time the feedback was processed.
    pub fn compute(&mut self, send: SimTime, arrival: SimTime, system: SimTime, size: u64) -> Option<Deltas> {
        let mut out = None;
        match self.current {
            None => {
                self.current = Some(Group {
                    first_send: send,
                    send,
                    first_arrival: arrival,
                    complete: arrival,
                    last_system: system,
                    size: 0,
                });
            }
            Some(cur) if cur.first_send > send => return None,
            Some(cur) if self.new_group(&cur, arrival, send) => {
                if let Some(prev) = self.prev {
                    out = Some(self.sample(&prev, &cur)?);
                }
                self.prev = Some(cur);
                self.current =
                    Some(Group { first_send: send, send, first_arrival: arrival, complete: arrival, last_system: system, size: 0 });
            }
            Some(ref mut cur) => {
                cur.send = cur.send.max(send);
                self.current = Some(*cur);
            }
        }
        let cur = self.current.as_mut().expect("set above");
        cur.size += size;
        cur.complete = arrival;
        cur.last_system = system;
        out
    }

    /// The sample between two complete groups, or `None` (with the resets) when it must be skipped.
    fn sample(&mut self, prev: &Group, cur: &Group) -> Option<Deltas> {
        let send_ns = diff(cur.send, prev.send);
        let arrival_ns = diff(cur.complete, prev.complete);
        let system_ns = diff(cur.last_system, prev.last_system);
        if arrival_ns - system_ns >= ARRIVAL_OFFSET_THRESHOLD {
            self.reset();
            return None;
        }
        if arrival_ns < 0 {
            self.reordered += 1;
            if self.reordered >= REORDERED_RESET {
                self.reset();
            }
            return None;
        }
        self.reordered = 0;
        Some(Deltas { send_ns, arrival_ns, size_bytes: cur.size as i64 - prev.size as i64 })
    }

    fn new_group(&self, cur: &Group, arrival: SimTime, send: SimTime) -> bool {
        !self.belongs_to_burst(cur, arrival, send) && diff(send, cur.first_send) > self.group_length.as_ns() as i64
    }

    fn belongs_to_burst(&self, cur: &Group, arrival: SimTime, send: SimTime) -> bool {
        let arrival_delta = diff(arrival, cur.complete);
        let send_delta = diff(send, cur.send);
        if send_delta == 0 {
            return true;
        }
        arrival_delta - send_delta < 0
            && arrival_delta <= BURST_DELTA
            && diff(arrival, cur.first_arrival) < MAX_BURST_DURATION
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime::from_ms(x)
    }

    fn feed(ia: &mut InterArrival, pkts: &[(u64, u64)]) -> Vec<Option<(i64, i64)>> {
        pkts.iter()
            .map(|&(s, a)| ia.compute(ms(s), ms(a), ms(a), 1_000).map(|d| (d.send_ns / 1_000_000, d.arrival_ns / 1_000_000)))
            .collect()
    }

    #[test]
    fn groups_of_five_ms_give_one_sample_per_new_group() {
        // Sent at 0, 4 (group A), 8, 12 (B), 16 (C); one way 20 ms, then the last two 2 ms later.
        let mut ia = InterArrival::new(SimDuration::from_ms(5));
        let got = feed(&mut ia, &[(0, 20), (4, 24), (8, 28), (12, 34), (16, 38)]);
        // The sample A→B appears when C's first packet arrives: send 12−4 = 8, arrival 34−24 = 10.
        assert_eq!(got, vec![None, None, None, None, Some((8, 10))]);
    }

    #[test]
    fn a_burst_that_arrives_faster_than_sent_joins_the_group() {
        let mut ia = InterArrival::new(SimDuration::from_ms(5));
        // Sent 0 and 6 ms apart but arriving 1 ms apart (queued behind each other): same group.
        let got = feed(&mut ia, &[(0, 30), (6, 31), (20, 50), (40, 70)]);
        assert_eq!(got, vec![None, None, None, Some((14, 19))]);
    }

    #[test]
    fn negative_arrival_deltas_are_skipped_and_three_reset() {
        // Packets are fed in arrival order, so a group can only complete before its predecessor when
        // the predecessor's burst outlasted 100 ms: B = {10 ms → 110, 12 ms → 215}, C = {20 ms → 212}.
        let mut ia = InterArrival::new(SimDuration::from_ms(5));
        let got = feed(&mut ia, &[(0, 100), (10, 110), (12, 215), (20, 212)]);
        assert_eq!(got, vec![None, None, None, Some((12, 115))]);
        // Closing C gives arrival delta 212 − 215 < 0: skipped, C stays open, the packet is dropped.
        assert_eq!(feed(&mut ia, &[(30, 330), (40, 331)]), vec![None, None]);
        assert_eq!(ia.reordered, 2);
        assert_eq!(feed(&mut ia, &[(50, 332)]), vec![None]);
        assert_eq!(ia.reordered, 0, "reset after three");
        assert!(ia.prev.is_none() && ia.current.is_none());
        // A packet sent before the current group's first one is ignored.
        let mut ia = InterArrival::new(SimDuration::from_ms(5));
        feed(&mut ia, &[(10, 30)]);
        assert_eq!(feed(&mut ia, &[(5, 31)]), vec![None]);
        assert_eq!(ia.current.unwrap().size, 1_000);
    }
}
