//! How fast a pipe drains: a fixed rate, a step-hold rate trace (pitree), or Mahimahi delivery
//! opportunities. Each answers one question: a packet of `bytes` starts service at `now`; when has it
//! left? Traces repeat (Mahimahi: period = last timestamp; pitree: the last sample holds for one more
//! gap, then the trace starts over).

use crate::time::SimTime;
use crate::trace::{OpportunityTrace, RateTrace};
use crate::units::BitRate;
use std::sync::Arc;

/// Bytes one Mahimahi opportunity can carry.
pub const MAHIMAHI_MTU: u64 = 1500;

#[derive(Clone, Debug)]
pub enum Server {
    Fixed(BitRate),
    Pitree(PitreeServer),
    Mahimahi(MahimahiServer),
}

impl Server {
    /// Departure time of a packet of `bytes` that starts service at `now`.
    pub fn departure(&mut self, now: SimTime, bytes: u64) -> SimTime {
        match self {
            Server::Fixed(r) => now + r.tx_time(bytes),
            Server::Pitree(p) => p.departure(now, bytes),
            Server::Mahimahi(m) => m.departure(now, bytes),
        }
    }
}

/// Step-hold rate segments, repeating.
#[derive(Clone, Debug)]
pub struct PitreeServer {
    /// Segment start times (ns, first = 0) and rates (bit/s).
    starts: Arc<Vec<u64>>,
    rates: Arc<Vec<u64>>,
    period: u64,
}

impl PitreeServer {
    pub fn new(t: &RateTrace) -> Self {
        Self::scaled(t, 1.0)
    }

    /// Rates multiplied by `scale` (the Zhuge artifact uses 15/13). Time is relative to the first
    /// sample: pitree chunks of a long capture start near 300·N s, or at a Unix epoch.
    pub fn scaled(t: &RateTrace, scale: f64) -> Self {
        let t0 = t.samples[0].0;
        let starts: Vec<u64> = t.samples.iter().map(|s| s.0 - t0).collect();
        let rates: Vec<u64> = t.samples.iter().map(|s| (s.1 as f64 * scale).round() as u64).collect();
        // The last rate holds for one more gap (or 1 s if alone), then the trace repeats.
        let n = starts.len();
        let last_gap = if n >= 2 { starts[n - 1] - starts[n - 2] } else { 1_000_000_000 };
        let period = starts[n - 1] + last_gap;
        PitreeServer { starts: Arc::new(starts), rates: Arc::new(rates), period }
    }

    /// The rate in force at `t`.
    pub fn rate_at(&self, t: SimTime) -> BitRate {
        let i = self.segment(t.as_ns() % self.period);
        BitRate(self.rates[i])
    }

    fn segment(&self, phase: u64) -> usize {
        self.starts.partition_point(|&s| s <= phase) - 1
    }

    fn departure(&mut self, now: SimTime, bytes: u64) -> SimTime {
        // Work in bit·ns: a segment of rate r (bit/s) and length d (ns) supplies r·d.
        let mut need = bytes as u128 * 8 * 1_000_000_000;
        let mut t = now.as_ns();
        let mut i = self.segment(t % self.period);
        loop {
            let base = t - t % self.period;
            let seg_end = base + if i + 1 < self.starts.len() { self.starts[i + 1] } else { self.period };
            let r = self.rates[i] as u128;
            let supply = r * (seg_end - t) as u128;
            if r > 0 && supply >= need {
                return SimTime(t + need.div_ceil(r) as u64);
            }
            need -= supply;
            t = seg_end;
            i = (i + 1) % self.starts.len();
        }
    }
}

/// Mahimahi opportunities, repeating with period = last timestamp.
#[derive(Clone, Debug)]
pub struct MahimahiServer {
    ms: Arc<Vec<u64>>,
    period_ms: u64,
    /// The opportunity in use (global index) and the bytes it still carries.
    cur: Option<(u64, u64)>,
    /// Bytes one opportunity carries (an MTU, times the trace's scale).
    mtu: u64,
}

impl MahimahiServer {
    pub fn new(t: &OpportunityTrace) -> Self {
        Self::scaled(t, 1.0)
    }

    /// Each opportunity carries `scale` MTUs' worth of bytes.
    pub fn scaled(t: &OpportunityTrace, scale: f64) -> Self {
        let mtu = ((MAHIMAHI_MTU as f64 * scale).round() as u64).max(1);
        MahimahiServer { period_ms: *t.ms.last().expect("non-empty"), ms: Arc::new(t.ms.clone()), cur: None, mtu }
    }

    fn time_ns(&self, g: u64) -> u64 {
        let n = self.ms.len() as u64;
        ((g / n) * self.period_ms + self.ms[(g % n) as usize]) * 1_000_000
    }

    /// First opportunity at or after `t` ns.
    fn first_at_or_after(&self, t: u64) -> u64 {
        let n = self.ms.len() as u64;
        let t_ms = t.div_ceil(1_000_000);
        let k = t_ms / self.period_ms;
        let phase = t_ms % self.period_ms;
        let j = self.ms.partition_point(|&m| m < phase) as u64;
        // Opportunities at `phase == 0` of the next period coincide with the last of this one.
        k * n + j
    }

    /// Average capacity of the trace.
    pub fn mean_rate(&self) -> BitRate {
        BitRate(self.ms.len() as u64 * self.mtu * 8 * 1000 / self.period_ms)
    }

    fn departure(&mut self, now: SimTime, mut bytes: u64) -> SimTime {
        let (mut g, mut left) = match self.cur {
            Some((g, left)) if left > 0 && self.time_ns(g) >= now.as_ns() => (g, left),
            // An opportunity is used at most once: never go back to (or before) the last one.
            Some((g, _)) => (self.first_at_or_after(now.as_ns()).max(g + 1), self.mtu),
            None => (self.first_at_or_after(now.as_ns()), self.mtu),
        };
        while bytes > left {
            bytes -= left;
            g += 1;
            left = self.mtu;
        }
        left -= bytes;
        self.cur = Some((g, left));
        SimTime(self.time_ns(g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pitree_integrates_across_steps_and_wraps() {
        // 8 Mbit/s from 0, 0 Mbit/s from 1 s, 16 Mbit/s from 2 s; the last step holds 1 s, period 3 s.
        let t = RateTrace { samples: vec![(0, 8_000_000), (1_000_000_000, 0), (2_000_000_000, 16_000_000)] };
        let mut s = PitreeServer::new(&t);
        // 1000 bytes at 8 Mbit/s = 1 ms.
        assert_eq!(s.departure(SimTime::ZERO, 1000), SimTime::from_ms(1));
        // Starting 0.5 ms before the outage: half at 8 Mbit/s, none for 1 s, the rest at 16 Mbit/s.
        assert_eq!(s.departure(SimTime::from_us(999_500), 1000), SimTime::from_ns(2_000_250_000));
        // After the period (3 s) the trace starts over at 8 Mbit/s.
        assert_eq!(s.departure(SimTime::from_secs(3), 1000), SimTime::from_ns(3_001_000_000));
        assert_eq!(s.rate_at(SimTime::from_ms(1500)), BitRate(0));
    }

    /// A chunk of a long capture starts at its first timestamp, not at 0; `scale` multiplies rates.
    #[test]
    fn pitree_time_is_relative_to_the_first_sample_and_scales() {
        let t = RateTrace { samples: vec![(900_000_000_000, 8_000_000), (900_200_000_000, 16_000_000)] };
        let s = PitreeServer::scaled(&t, 1.5);
        assert_eq!(s.rate_at(SimTime::ZERO), BitRate(12_000_000));
        assert_eq!(s.rate_at(SimTime::from_ms(250)), BitRate(24_000_000));
        // Period: the last sample holds one more gap (0.2 s), then the trace repeats.
        assert_eq!(s.rate_at(SimTime::from_ms(450)), BitRate(12_000_000));
    }

    #[test]
    fn mahimahi_opportunities_carry_mtu_bytes_and_repeat() {
        let t = OpportunityTrace { ms: vec![0, 0, 1, 5] };
        let mut s = MahimahiServer::new(&t);
        assert_eq!(s.mean_rate(), BitRate(4 * 1500 * 8 * 1000 / 5));
        assert_eq!(MahimahiServer::scaled(&t, 2.0).mean_rate(), BitRate(2 * 4 * 1500 * 8 * 1000 / 5));
        let ms = |x| SimTime::from_ms(x);
        assert_eq!(s.departure(ms(0), 1500), ms(0));
        assert_eq!(s.departure(ms(0), 1000), ms(0), "second opportunity at t = 0");
        assert_eq!(s.departure(ms(0), 400), ms(0), "500 bytes left in it");
        assert_eq!(s.departure(ms(0), 200), ms(1), "100 left were not enough: carried over, done at 1 ms");
        // Idle: the opportunity at 5 ms; then the next period (5 ms + {0,0,1,5}).
        assert_eq!(s.departure(ms(2), 1500), ms(5));
        assert_eq!(s.departure(ms(5), 1500), ms(5), "period 2 starts at 5 ms with two opportunities");
        assert_eq!(s.departure(ms(5), 1500), ms(5));
        assert_eq!(s.departure(ms(5), 1500), ms(6));
        assert_eq!(s.departure(ms(7), 1500), ms(10));
    }
}
