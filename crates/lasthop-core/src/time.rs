//! Simulated time as integer nanoseconds.
//!
//! 802.11 timing lives on a sub-microsecond grid (slot 9 µs, SIFS 16 µs, OFDM symbols 3.6/4 µs), so the
//! core never uses floating-point seconds: [`SimTime`] is an instant and [`SimDuration`] a span, both
//! `u64` nanoseconds. Conversions to `f64` exist only for reporting.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimDuration(pub u64);

impl serde::Serialize for SimDuration {
    /// Serialized as integer nanoseconds.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl serde::Serialize for SimTime {
    /// Serialized as integer nanoseconds.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns)
    }
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimTime(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimTime(s * 1_000_000_000)
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// For reporting only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// For reporting only.
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// The earliest of `times` that is set (`None` when none is): a component's next wake-up from its
    /// parts'. Compared one by one: `into_iter().flatten().min()` over the array compiled to 8 KB of
    /// vector shuffles, 6 % of the busy BSS's engine in an RTC call's `next_wakeup` alone.
    #[inline]
    pub fn earliest<const N: usize>(times: [Option<SimTime>; N]) -> Option<SimTime> {
        let mut first: Option<SimTime> = None;
        for t in times.into_iter().flatten() {
            if first.is_none_or(|f| t < f) {
                first = Some(t);
            }
        }
        first
    }
    /// Time elapsed since `earlier`; zero if `earlier` is later than `self`.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
    pub fn checked_add(self, d: SimDuration) -> Option<SimTime> {
        self.0.checked_add(d.0).map(SimTime)
    }
    pub fn saturating_add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    pub const fn from_ns(ns: u64) -> Self {
        SimDuration(ns)
    }
    pub const fn from_us(us: u64) -> Self {
        SimDuration(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * 1_000_000_000)
    }
    /// Converts a configuration value in seconds, rounding to the nearest nanosecond.
    /// Only for parsing user input at the edge; `None` for negative, NaN or out-of-range values.
    pub fn from_secs_f64(s: f64) -> Option<Self> {
        if !s.is_finite() || s < 0.0 || s * 1e9 > u64::MAX as f64 {
            return None;
        }
        Some(SimDuration((s * 1e9).round() as u64))
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 * 1e-3
    }
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn saturating_sub(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(o.0))
    }
    pub fn checked_mul(self, k: u64) -> Option<SimDuration> {
        self.0.checked_mul(k).map(SimDuration)
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.checked_add(d.0).expect("SimTime overflow"))
    }
}
impl AddAssign<SimDuration> for SimTime {
    #[inline]
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}
impl Sub<SimDuration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn sub(self, d: SimDuration) -> SimTime {
        SimTime(self.0.checked_sub(d.0).expect("SimTime underflow"))
    }
}
impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    /// Panics if `rhs` is later: time differences in the model are never negative.
    #[inline]
    fn sub(self, rhs: SimTime) -> SimDuration {
        SimDuration(self.0.checked_sub(rhs.0).expect("negative SimTime difference"))
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn add(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.checked_add(o.0).expect("SimDuration overflow"))
    }
}
impl AddAssign for SimDuration {
    #[inline]
    fn add_assign(&mut self, o: SimDuration) {
        *self = *self + o;
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn sub(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.checked_sub(o.0).expect("SimDuration underflow"))
    }
}
impl SubAssign for SimDuration {
    #[inline]
    fn sub_assign(&mut self, o: SimDuration) {
        *self = *self - o;
    }
}
impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn mul(self, k: u64) -> SimDuration {
        SimDuration(self.0.checked_mul(k).expect("SimDuration overflow"))
    }
}
impl Div<u64> for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn div(self, k: u64) -> SimDuration {
        SimDuration(self.0 / k)
    }
}

fn fmt_secs(ns: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{}.{:09}s", ns / 1_000_000_000, ns % 1_000_000_000)
}
impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_secs(self.0, f)
    }
}
impl fmt::Debug for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_secs(self.0, f)
    }
}
impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < 1_000_000 {
            write!(f, "{}.{:03}us", self.0 / 1_000, self.0 % 1_000)
        } else {
            fmt_secs(self.0, f)
        }
    }
}
impl fmt::Debug for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_and_display() {
        let t = SimTime::from_us(16) + SimDuration::from_us(9) * 3;
        assert_eq!(t.as_ns(), 43_000);
        assert_eq!(format!("{}", SimTime::from_ns(12_345_678_000)), "12.345678000s");
        assert_eq!(format!("{}", SimDuration::from_ns(3_600)), "3.600us");
        assert_eq!(SimTime::from_ms(5) - SimTime::from_ms(2), SimDuration::from_ms(3));
    }

    #[test]
    fn from_secs_f64_rejects_bad_input() {
        assert_eq!(SimDuration::from_secs_f64(0.0000036), Some(SimDuration::from_ns(3_600)));
        assert_eq!(SimDuration::from_secs_f64(-1.0), None);
        assert_eq!(SimDuration::from_secs_f64(f64::NAN), None);
    }

    #[test]
    fn earliest_is_the_smallest_set_time() {
        let t = SimTime::from_us;
        assert_eq!(SimTime::earliest::<3>([None, None, None]), None);
        assert_eq!(SimTime::earliest([None, Some(t(7)), None]), Some(t(7)));
        assert_eq!(SimTime::earliest([Some(t(9)), None, Some(t(4)), Some(t(4)), Some(t(5))]), Some(t(4)));
        assert_eq!(SimTime::earliest([Some(SimTime::MAX), Some(SimTime::ZERO)]), Some(SimTime::ZERO));
    }

    #[test]
    #[should_panic(expected = "negative SimTime difference")]
    fn negative_difference_is_a_bug() {
        let _ = SimTime::from_us(1) - SimTime::from_us(2);
    }
}
