//! Per-component random number generators derived from a master seed and a stable path.
//!
//! `Rng::derive(master_seed, "ap0/edca/be")` hashes the path with FNV-1a, mixes it with the seed through
//! SplitMix64 and seeds a PCG-64 (`rand_pcg::Pcg64Mcg`). Adding station 7 therefore never shifts
//! station 3's draws, unlike a shared stream handed out in creation order (ns-3 `AssignStreams`).
//! There is no default entropy: every run records its seed.

use rand::{Rng as _, RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// A seeded generator owned by one component.
#[derive(Clone, Debug)]
pub struct Rng {
    inner: Pcg64Mcg,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator of the component at `path` in a run seeded with `master_seed`.
    pub fn derive(master_seed: u64, path: &str) -> Self {
        let mut state = master_seed ^ fnv1a(path.as_bytes()).rotate_left(17);
        let mut seed = [0u8; 16];
        seed[..8].copy_from_slice(&splitmix64(&mut state).to_le_bytes());
        seed[8..].copy_from_slice(&splitmix64(&mut state).to_le_bytes());
        Rng { inner: Pcg64Mcg::from_seed(seed) }
    }

    /// Uniform integer in `0..=max` (e.g. a backoff counter drawn from `0..=CW`).
    #[inline]
    pub fn uniform_inclusive(&mut self, max: u32) -> u32 {
        self.inner.random_range(0..=max)
    }

    /// Uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        self.inner.random::<f64>()
    }

    /// `true` with probability `p`.
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Exponential variate with the given mean (inverse-CDF method).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - unit() is in (0, 1], so ln is finite.
        -mean * (1.0 - self.unit()).ln()
    }

    /// Standard normal variate (Box–Muller; one of the pair is discarded for simplicity).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_path_same_stream_other_path_other_stream() {
        let mut a = Rng::derive(7, "sta3/edca/be");
        let mut b = Rng::derive(7, "sta3/edca/be");
        let mut c = Rng::derive(7, "sta4/edca/be");
        let mut d = Rng::derive(8, "sta3/edca/be");
        let xa: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        let xd: Vec<u64> = (0..4).map(|_| d.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
        assert_ne!(xa, xd);
    }

    #[test]
    fn uniform_inclusive_covers_both_ends_evenly() {
        let mut r = Rng::derive(1, "t");
        let mut hist = [0u32; 16];
        for _ in 0..160_000 {
            hist[r.uniform_inclusive(15) as usize] += 1;
        }
        for h in hist {
            assert!((9_000..11_000).contains(&h), "{hist:?}");
        }
    }

    #[test]
    fn exponential_mean() {
        let mut r = Rng::derive(2, "exp");
        let n = 200_000;
        let m: f64 = (0..n).map(|_| r.exponential(3.0)).sum::<f64>() / n as f64;
        assert!((m - 3.0).abs() < 0.03, "{m}");
    }
}
