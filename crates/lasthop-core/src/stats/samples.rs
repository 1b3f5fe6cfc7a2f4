//! The samples of one metric of one flow (one-way latency, RTT), for its mean, maximum and percentiles,
//! in memory that stays bounded however long the run.
//!
//! Up to [`EXACT_SAMPLES`] samples every value is kept and the percentiles are exact (nearest rank,
//! [`percentile`]). Past that the values move into an HDR histogram with three significant digits
//! (`hdrhistogram`, as HdrHistogram/wrk): a percentile is then the largest value of its bucket, within
//! 0.1 % of the exact one, and never above the exact maximum, which is kept; the mean is exact.

use super::flows::percentile;
use hdrhistogram::Histogram;

/// Samples kept one by one before the histogram takes over (512 KiB of `u64`).
pub const EXACT_SAMPLES: usize = 1 << 16;

/// Significant digits of the histogram's buckets (relative error ≤ 10⁻³).
const SIGFIG: u8 = 3;

#[derive(Debug, Clone, Default)]
pub struct Samples {
    exact: Vec<u64>,
    hist: Option<Histogram<u64>>,
    n: u64,
    sum: u128,
    max: u64,
    sorted: bool,
}

impl Samples {
    pub fn push(&mut self, v: u64) {
        self.n += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
        match &mut self.hist {
            Some(h) => h.saturating_record(v),
            None if self.exact.len() < EXACT_SAMPLES => {
                self.exact.push(v);
                self.sorted = false;
            }
            None => {
                // 1 ns to 2^62 ns (146 years: longer than any run), ~430 KiB of counters.
                let mut h = Histogram::new_with_bounds(1, 1 << 62, SIGFIG).expect("valid bounds");
                for &x in self.exact.iter().chain([&v]) {
                    h.saturating_record(x);
                }
                self.exact = Vec::new();
                self.hist = Some(h);
            }
        }
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Every value, while they are all kept (`None` once the histogram took over).
    pub fn values(&self) -> Option<&[u64]> {
        self.hist.is_none().then_some(&self.exact[..])
    }

    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }

    /// The mean: while exact, the sum of the sorted values in floating point (as it always was); then
    /// the exact integer sum over the count.
    pub fn mean(&mut self) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        if self.hist.is_some() {
            return Some(self.sum as f64 / self.n as f64);
        }
        self.sort();
        Some(self.exact.iter().map(|&v| v as f64).sum::<f64>() / self.exact.len() as f64)
    }

    /// The `q`-th percentile (nearest rank), `q` in 0..=100.
    pub fn percentile(&mut self, q: f64) -> Option<u64> {
        match &self.hist {
            None => {
                self.sort();
                percentile(&self.exact, q)
            }
            Some(h) => Some(h.value_at_quantile(q / 100.0).min(self.max)),
        }
    }

    /// How many samples are above `x` (while exact, exactly; then to the histogram's buckets).
    pub fn count_above(&self, x: u64) -> u64 {
        match &self.hist {
            None => self.exact.iter().filter(|&&v| v > x).count() as u64,
            Some(h) => self.n - h.count_between(0, x).min(self.n),
        }
    }

    fn sort(&mut self) {
        if !self.sorted {
            self.exact.sort_unstable();
            self.sorted = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact_percentile(v: &[u64], q: f64) -> u64 {
        let mut s = v.to_vec();
        s.sort_unstable();
        percentile(&s, q).unwrap()
    }

    /// Up to the limit the percentiles, mean and count above a threshold are the exact ones.
    #[test]
    fn exact_while_small() {
        let v: Vec<u64> = (0..EXACT_SAMPLES as u64).map(|i| (i * 7919) % 100_003).collect();
        let mut s = Samples::default();
        v.iter().for_each(|&x| s.push(x));
        assert!(s.values().is_some());
        for q in [0.0, 50.0, 95.0, 99.0, 99.9, 100.0] {
            assert_eq!(s.percentile(q), Some(exact_percentile(&v, q)), "p{q}");
        }
        assert_eq!(s.count_above(50_000), v.iter().filter(|&&x| x > 50_000).count() as u64);
        assert_eq!(s.max(), v.iter().max().copied());
    }

    /// Past the limit memory stops growing, the count, sum and maximum stay exact, and every percentile
    /// is within 0.1 % of the exact one (values spread over five decades, as latencies in ns are).
    #[test]
    fn within_a_thousandth_when_large() {
        let mut rng = crate::rng::Rng::derive(1, "samples");
        let v: Vec<u64> = (0..4 * EXACT_SAMPLES).map(|_| (10f64.powf(4.0 + 5.0 * rng.unit())) as u64).collect();
        let mut s = Samples::default();
        v.iter().for_each(|&x| s.push(x));
        assert!(s.values().is_none());
        assert_eq!(s.len(), v.len() as u64);
        assert_eq!(s.max(), v.iter().max().copied());
        let mean = v.iter().map(|&x| x as u128).sum::<u128>() as f64 / v.len() as f64;
        assert!((s.mean().unwrap() - mean).abs() < 1e-9 * mean);
        for q in [1.0, 50.0, 95.0, 99.0, 99.9, 100.0] {
            let (got, want) = (s.percentile(q).unwrap() as f64, exact_percentile(&v, q) as f64);
            assert!((got - want).abs() <= 1e-3 * want, "p{q}: {got} against {want}");
        }
        let above = v.iter().filter(|&&x| x > 1_000_000).count() as f64;
        assert!((s.count_above(1_000_000) as f64 - above).abs() <= 2e-3 * v.len() as f64);
    }
}
