//! Traffic sources. Each is a state machine: `next(now, rng)` gives the size and send time of the next
//! packet, or `None` when the source is done.

pub mod rtc;
pub mod tcp_video;

use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;

/// Packet gaps of a UDP source.
#[derive(Clone, Debug)]
pub enum UdpPattern {
    /// Constant bit rate: fixed gap.
    Cbr { gap: SimDuration },
    /// Poisson arrivals: exponential gaps with this mean (ns, fractional).
    Poisson { mean_gap_ns: f64 },
}

/// A UDP source sending fixed-size packets between `start` and `stop`.
#[derive(Clone, Debug)]
pub struct UdpSource {
    pub pattern: UdpPattern,
    pub packet_bytes: u32,
    pub start: SimTime,
    pub stop: SimTime,
    next: SimTime,
    /// Fractional nanoseconds carried between CBR gaps so long runs keep the exact rate.
    carry: f64,
    exact_gap_ns: f64,
}

impl UdpSource {
    pub fn new(rate: BitRate, packet_bytes: u32, poisson: bool, start: SimTime, stop: SimTime) -> Self {
        let exact_gap_ns = packet_bytes as f64 * 8.0 * 1e9 / rate.bps() as f64;
        let pattern = if poisson {
            UdpPattern::Poisson { mean_gap_ns: exact_gap_ns }
        } else {
            UdpPattern::Cbr { gap: SimDuration::from_ns(exact_gap_ns.floor() as u64) }
        };
        UdpSource { pattern, packet_bytes, start, stop, next: start, carry: 0.0, exact_gap_ns }
    }

    /// Changes the rate from the next gap on (a run-time command).
    pub fn set_rate(&mut self, rate: BitRate) {
        self.exact_gap_ns = self.packet_bytes as f64 * 8.0 * 1e9 / rate.bps() as f64;
        self.pattern = match self.pattern {
            UdpPattern::Poisson { .. } => UdpPattern::Poisson { mean_gap_ns: self.exact_gap_ns },
            UdpPattern::Cbr { .. } => UdpPattern::Cbr { gap: SimDuration::from_ns(self.exact_gap_ns.floor() as u64) },
        };
        self.carry = 0.0;
    }

    /// The first send time (for Poisson, one exponential gap after `start`).
    pub fn first(&mut self, rng: &mut Rng) -> Option<SimTime> {
        if let UdpPattern::Poisson { mean_gap_ns } = self.pattern {
            self.next = self.start + SimDuration::from_ns(rng.exponential(mean_gap_ns).round() as u64);
        }
        (self.next < self.stop).then_some(self.next)
    }

    /// Called when the packet due now was sent; returns the next send time.
    pub fn advance(&mut self, rng: &mut Rng) -> Option<SimTime> {
        let gap = match self.pattern {
            UdpPattern::Cbr { gap } => {
                self.carry += self.exact_gap_ns - gap.as_ns() as f64;
                let extra = self.carry.floor();
                self.carry -= extra;
                gap + SimDuration::from_ns(extra as u64)
            }
            UdpPattern::Poisson { mean_gap_ns } => SimDuration::from_ns(rng.exponential(mean_gap_ns).round() as u64),
        };
        self.next = self.next.saturating_add(gap);
        (self.next < self.stop).then_some(self.next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbr_keeps_exact_rate_with_fractional_gaps() {
        // 1200 B at 7 Mbit/s: gap 1371428.57 ns.
        let mut s = UdpSource::new(BitRate::from_mbps(7), 1200, false, SimTime::ZERO, SimTime::from_secs(10));
        let mut rng = Rng::derive(0, "x");
        let mut n = 0u64;
        let mut t = s.first(&mut rng);
        while t.is_some() {
            n += 1;
            t = s.advance(&mut rng);
        }
        // 10 s × 7e6 / 9600 = 7291.67 → 7292 packets (t = 0 included).
        assert_eq!(n, 7292);
    }
}
