//! Linux `tbf` (token bucket filter, `net/sched/sch_tbf.c`) as a node's offered-load cap: packets wait in
//! a tail-drop FIFO and leave while the bucket holds at least their size; the bucket fills at `rate` up to
//! `burst` bytes and is full at the start. A packet larger than the bucket can never leave and is dropped
//! at enqueue, as `tbf_enqueue` drops what exceeds its `max_size`. No peak rate.
//!
//! Credit is kept in bit-nanoseconds (bits × 10⁹), so refills and the wait for the next packet are exact
//! integers at any rate.

use super::{Dropped, Fifo, QueueStats};
use crate::packet::Packet;
use crate::stats::DropReason;
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A token bucket shaper (`ap_path`/`sta_path = { type = "linux", tbf = { rate_mbps = 32 } }`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TbfParams {
    /// Token rate, Mbit/s (the cap on what the node offers to its Wi-Fi interface).
    pub rate_mbps: f64,
    /// Bucket size, bytes: how much may leave at once after an idle spell (at least one 1514-byte
    /// frame). Default 15,140 (ten frames).
    #[serde(default = "default_burst")]
    pub burst_bytes: u32,
    /// Packets the FIFO holds before it drops; default 1000 (txqueuelen).
    #[serde(default = "default_limit")]
    pub limit_packets: u32,
}

fn default_burst() -> u32 {
    15_140
}

fn default_limit() -> u32 {
    1000
}

impl TbfParams {
    /// The first invalid field as (name, reason).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(self.rate_mbps.is_finite() && (1e-3..=1e6).contains(&self.rate_mbps)) {
            return Err(("rate_mbps", format!("must be between 0.001 (1 kbit/s) and 1e6 Mbit/s, got {}", crate::scenario::shown(self.rate_mbps))));
        }
        if self.burst_bytes < 1514 {
            return Err(("burst_bytes", format!("must hold at least one 1514-byte frame, got {}", self.burst_bytes)));
        }
        if self.limit_packets == 0 {
            return Err(("limit_packets", "must be at least 1".into()));
        }
        Ok(())
    }
}

const NS_PER_S: u128 = 1_000_000_000;

/// The shaper's state.
#[derive(Debug)]
pub struct Tbf {
    rate_bps: u128,
    /// Bucket size and credit, bit-nanoseconds.
    burst: u128,
    credit: u128,
    last: SimTime,
    fifo: Fifo,
}

impl Tbf {
    pub fn new(p: &TbfParams) -> Self {
        let burst = p.burst_bytes as u128 * 8 * NS_PER_S;
        Tbf { rate_bps: (p.rate_mbps * 1e6).round() as u128, burst, credit: burst, last: SimTime::ZERO, fifo: Fifo::new(Some(p.limit_packets), None) }
    }

    fn refill(&mut self, now: SimTime) {
        let dt = now.saturating_since(self.last).as_ns() as u128;
        self.credit = (self.credit + dt * self.rate_bps).min(self.burst);
        self.last = now;
    }

    fn cost(p: &Packet) -> u128 {
        p.size as u128 * 8 * NS_PER_S
    }

    /// Queues a packet (refused when the FIFO is full or the packet is larger than the bucket).
    pub fn enqueue(&mut self, now: SimTime, p: Packet) -> Result<(), Dropped> {
        if Self::cost(&p) > self.burst {
            self.fifo.stats.dropped += 1;
            return Err((p, DropReason::QueueFull));
        }
        self.fifo.enqueue(now, p)
    }

    /// The head packet, if the bucket holds its size now.
    pub fn dequeue(&mut self, now: SimTime) -> Option<Packet> {
        self.refill(now);
        let need = Self::cost(self.fifo.peek()?);
        if need > self.credit {
            return None;
        }
        self.credit -= need;
        self.fifo.dequeue(now)
    }

    /// When the head packet can leave (`None`: the FIFO is empty).
    pub fn next_release(&self, now: SimTime) -> Option<SimTime> {
        let need = Self::cost(self.fifo.peek()?);
        let credit = (self.credit + now.saturating_since(self.last).as_ns() as u128 * self.rate_bps).min(self.burst);
        let wait = need.saturating_sub(credit).div_ceil(self.rate_bps);
        Some(now + SimDuration::from_ns(wait as u64))
    }

    pub fn len_packets(&self) -> usize {
        self.fifo.len_packets()
    }

    pub fn stats(&self) -> QueueStats {
        self.fifo.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u64, size: u32) -> Packet {
        Packet { id, flow: 0, seq: id, size, src: 0, dst: 1, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
    }

    fn params(rate_mbps: f64, burst_bytes: u32) -> TbfParams {
        TbfParams { rate_mbps, burst_bytes, limit_packets: 1000 }
    }

    /// By hand, 12 Mbit/s (1500 B = 1 ms) with a 3000-byte bucket: two packets leave at once, the third
    /// 1 ms later, and after 10 idle ms the bucket holds 3000 bytes again (not more).
    #[test]
    fn releases_by_hand() {
        let mut t = Tbf::new(&params(12.0, 3000));
        for id in 0..3 {
            t.enqueue(SimTime::ZERO, pkt(id, 1500)).unwrap();
        }
        assert_eq!(t.dequeue(SimTime::ZERO).map(|p| p.id), Some(0));
        assert_eq!(t.dequeue(SimTime::ZERO).map(|p| p.id), Some(1));
        assert_eq!(t.dequeue(SimTime::ZERO), None);
        assert_eq!(t.next_release(SimTime::ZERO), Some(SimTime::from_ms(1)));
        assert_eq!(t.dequeue(SimTime::from_us(999)), None);
        assert_eq!(t.next_release(SimTime::from_us(999)), Some(SimTime::from_ms(1)));
        assert_eq!(t.dequeue(SimTime::from_ms(1)).map(|p| p.id), Some(2));
        assert_eq!(t.next_release(SimTime::from_ms(1)), None);
        let later = SimTime::from_ms(11);
        for id in 3..6 {
            t.enqueue(later, pkt(id, 1500)).unwrap();
        }
        assert_eq!((t.dequeue(later).map(|p| p.id), t.dequeue(later).map(|p| p.id), t.dequeue(later)), (Some(3), Some(4), None));
    }

    /// A long backlog leaves at the token rate: 10,000 packets of 1000 B at 8 Mbit/s take 10 s (less the
    /// first bucketful).
    #[test]
    fn a_backlog_leaves_at_the_rate() {
        let mut t = Tbf::new(&TbfParams { rate_mbps: 8.0, burst_bytes: 2000, limit_packets: 10_000 });
        for id in 0..10_000 {
            t.enqueue(SimTime::ZERO, pkt(id, 1000)).unwrap();
        }
        let mut now = SimTime::ZERO;
        let mut out = 0;
        while let Some(at) = t.next_release(now) {
            now = at;
            while t.dequeue(now).is_some() {
                out += 1;
            }
        }
        assert_eq!(out, 10_000);
        assert_eq!(now, SimTime::from_ms(9_998));
    }

    #[test]
    fn too_large_or_too_many_are_dropped() {
        let mut t = Tbf::new(&TbfParams { rate_mbps: 1.0, burst_bytes: 1514, limit_packets: 1 });
        assert!(t.enqueue(SimTime::ZERO, pkt(0, 1600)).is_err());
        t.enqueue(SimTime::ZERO, pkt(1, 1500)).unwrap();
        assert!(t.enqueue(SimTime::ZERO, pkt(2, 100)).is_err());
        assert_eq!(t.stats().dropped, 2);
        assert!(params(0.0, 3000).validate().is_err() && params(1.0, 1000).validate().is_err() && params(1.0, 1514).validate().is_ok());
    }
}
