//! Physical units as newtypes, so a rate is never confused with a size or a time.

use crate::time::SimDuration;
use std::fmt;

/// A size in bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Bytes(pub u64);

/// A bit rate in bits per second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct BitRate(pub u64);

impl BitRate {
    pub const fn from_bps(bps: u64) -> Self {
        BitRate(bps)
    }
    pub const fn from_kbps(k: u64) -> Self {
        BitRate(k * 1_000)
    }
    pub const fn from_mbps(m: u64) -> Self {
        BitRate(m * 1_000_000)
    }
    /// Parses a configuration value in Mbit/s; `None` unless finite and > 0.
    pub fn from_mbps_f64(m: f64) -> Option<Self> {
        if !m.is_finite() || m <= 0.0 {
            return None;
        }
        let bps = (m * 1e6).round();
        (bps >= 1.0 && bps < u64::MAX as f64).then_some(BitRate(bps as u64))
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    pub fn as_mbps_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// Serialization time of `bytes` at this rate, rounded up to the next nanosecond.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> SimDuration {
        debug_assert!(self.0 > 0);
        let bits = bytes as u128 * 8 * 1_000_000_000;
        SimDuration(bits.div_ceil(self.0 as u128) as u64)
    }
}

impl fmt::Display for BitRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Mbit/s", self.as_mbps_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tx_time_rounds_up() {
        assert_eq!(BitRate::from_mbps(12).tx_time(1500), SimDuration::from_us(1000));
        assert_eq!(BitRate::from_bps(3).tx_time(1).as_ns(), 2_666_666_667);
        assert!(BitRate::from_mbps_f64(0.0).is_none());
        assert!(BitRate::from_mbps_f64(-3.0).is_none());
    }
}
