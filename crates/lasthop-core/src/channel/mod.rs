//! Radio channel models: the SNR of a link over time.
//!
//! A model is the mean SNR (constant, a file series, log-distance path loss, or a scripted ramp) plus
//! optional block fading (Rayleigh or Rician power gain redrawn every coherence time). The `office`
//! model ([`office`]) adds slow drift, people crossing the line of sight and interference bursts to
//! Rician fading (Law's testbed). The MAC asks for
//! the SNR at the start of each PPDU; the channel is constant over a PPDU (`wifi-model.md` §4.3).
//! Both directions of a station's link draw the same fading sequence (reciprocity): their RNG path is
//! the station's name. Gains are drawn for every coherence block in order, so the sequence does not
//! depend on when the MAC happens to ask.
//!
//! Receive diversity under fading ([LH], beyond `wifi-model.md` §4.4, which gives only the AWGN array
//! gain N_rx / N_SS): each receive antenna fades on its own *branch*, drawn like the single-antenna
//! gain. A PPDU of N_SS streams to N_rx antennas sees the mean of the first N_rx − N_SS + 1 branch
//! gains ([`diversity_order`]: a zero-forcing receiver's diversity order; for one stream, maximum-ratio
//! combining), so its block gain is Gamma-distributed with that shape, on top of §4.4's array gain. It
//! is a hybrid: a zero-forcing receiver's mean per-stream SNR is (N_rx − N_SS + 1) / N_SS, not
//! N_rx / N_SS, so for 1 < N_SS < N_rx it is optimistic by 10·log10(N_rx / (N_rx − N_SS + 1)) dB (1.76
//! dB for two streams to three antennas), and every stream gets the same gain. Preambles (one stream)
//! use order N_rx. Branch 0 is the single-antenna sequence, shared by both directions (reciprocity of
//! that antenna pair); branch k ≥ 1 is one receive antenna's own stream in one direction
//! ([`ChannelModel::set_receive_branches`]). One-antenna links fade exactly as before; the subframes of
//! a PPDU with as many streams as the receiver has antennas too, though its preamble gains the order.

pub mod config;
pub mod office;

pub use office::OfficeParams;

use crate::phy::error::noise_floor_dbm;
use crate::phy::mcs::ChannelWidth;
use crate::rng::Rng;
use crate::scenario::shown;
pub use config::{ChannelConfig, FadingConfig};
use crate::time::SimTime;
use crate::trace::read_snr_series;
use std::path::Path;
use std::sync::Arc;

/// The mean SNR over time.
#[derive(Clone, Debug)]
enum Mean {
    Const(f64),
    /// Sample times (ns) and values; `linear` interpolates, else step-hold.
    Series { t: Arc<Vec<u64>>, v: Arc<Vec<f64>>, linear: bool },
}

impl Mean {
    fn at(&self, now: u64) -> f64 {
        match self {
            Mean::Const(s) => *s,
            Mean::Series { t, v, linear } => {
                let i = t.partition_point(|&x| x <= now);
                if i == 0 {
                    v[0]
                } else if i == t.len() || !linear {
                    v[i - 1]
                } else {
                    let (t0, t1) = (t[i - 1] as f64, t[i] as f64);
                    v[i - 1] + (v[i] - v[i - 1]) * (now as f64 - t0) / (t1 - t0)
                }
            }
        }
    }
}

/// The most receive antennas a link's fading draws branches for (802.11ac/ax: 8 spatial streams).
pub const MAX_BRANCHES: usize = 8;

/// Block fading state.
#[derive(Clone, Debug)]
struct Fading {
    /// Rician K (linear); 0 = Rayleigh.
    k: f64,
    coherence_ns: u64,
    /// The generators as built, to replay the sequences for a query earlier than the current block:
    /// branch 0 (the single-antenna sequence, common to both directions of the link) and each further
    /// receive antenna's branch (its own stream, per direction).
    rng0: Rng,
    branch_rng0: Vec<Rng>,
    rng: Rng,
    branch_rng: Vec<Rng>,
    block: Option<u64>,
    /// The block's gain, dB, by diversity order − 1: 10·log10 of the mean of the first `order` branch
    /// gains (linear).
    gain_db: [f64; MAX_BRANCHES],
}

impl Fading {
    fn new(k: f64, coherence_ns: u64, rng: Rng) -> Self {
        Fading { k, coherence_ns, rng0: rng.clone(), branch_rng0: Vec::new(), rng, branch_rng: Vec::new(), block: None, gain_db: [0.0; MAX_BRANCHES] }
    }

    fn branches(&self) -> usize {
        1 + self.branch_rng.len()
    }

    /// |h|² of one branch: h = √(K/(K+1)) + √(1/(K+1))·CN(0,1); E|h|² = 1.
    fn draw(k: f64, rng: &mut Rng) -> f64 {
        let los = (k / (k + 1.0)).sqrt();
        let s = (1.0 / (2.0 * (k + 1.0))).sqrt();
        let (re, im) = (los + s * rng.normal(), s * rng.normal());
        re * re + im * im
    }

    /// Draws the next block on every branch; its gains in dB only if `keep` (a block passed over on
    /// the way to a later query needs only its draws).
    fn draw_block(&mut self, keep: bool) {
        let mut sum = Self::draw(self.k, &mut self.rng);
        if keep {
            self.gain_db[0] = 10.0 * sum.max(1e-12).log10();
        }
        for (b, rng) in self.branch_rng.iter_mut().enumerate() {
            sum += Self::draw(self.k, rng);
            if keep {
                self.gain_db[b + 1] = 10.0 * (sum / (b + 2) as f64).max(1e-12).log10();
            }
        }
    }

    /// The gains of the block at `now`, dB, by diversity order − 1 (the first [`Fading::branches`]).
    fn gains_db(&mut self, now: u64) -> &[f64] {
        let b = now / self.coherence_ns;
        let from = match self.block {
            Some(cur) if cur == b => return &self.gain_db[..self.branches()],
            Some(cur) if cur < b => cur + 1,
            _ => {
                self.rng = self.rng0.clone();
                self.branch_rng.clone_from(&self.branch_rng0);
                0
            }
        };
        for i in from..=b {
            self.draw_block(i == b);
        }
        self.block = Some(b);
        &self.gain_db[..self.branches()]
    }
}

/// The shortest coherence time, ms. The channel is constant over a PPDU (`wifi-model.md` §4.3), so a
/// block shorter than a short PPDU is outside the model; and every block is drawn in order, so a tiny
/// one made a run crawl (1e-300 ms: one draw per nanosecond of simulated time).
pub const MIN_COHERENCE_MS: f64 = 0.1;

/// Checks a coherence time; the error is the message after the key.
pub fn check_coherence_ms(v: f64) -> Result<(), String> {
    if v.is_finite() && v >= MIN_COHERENCE_MS {
        Ok(())
    } else {
        Err(format!("must be at least {MIN_COHERENCE_MS} ms (shorter blocks are outside the model), got {}", shown(v)))
    }
}

/// The diversity order of `nss` streams received on `n_rx` antennas: N_rx − N_SS + 1, at least 1.
pub fn diversity_order(n_rx: u8, nss: u8) -> usize {
    (n_rx.saturating_sub(nss.max(1)) as usize + 1).min(MAX_BRANCHES)
}

/// A link's SNR at one instant, for every diversity order its fading has: what a PPDU's preamble and
/// subframes are drawn from ([`ChannelModel::sample`]).
#[derive(Clone, Copy, Debug)]
pub struct SnrSample {
    mean_db: f64,
    /// Fading gain by diversity order − 1, dB; `orders` = 0 without fading.
    gain_db: [f64; MAX_BRANCHES],
    orders: usize,
    /// The office model's offsets, dB.
    office_db: Option<f64>,
}

impl SnrSample {
    /// The SNR after combining `order` fading branches (clamped to those drawn), dB.
    #[inline]
    pub fn db(&self, order: usize) -> f64 {
        let mut snr = self.mean_db;
        if self.orders > 0 {
            snr += self.gain_db[order.clamp(1, self.orders) - 1];
        }
        if let Some(o) = self.office_db {
            snr += o;
        }
        snr
    }
}

/// A link's channel.
#[derive(Clone, Debug)]
pub struct ChannelModel {
    mean: Mean,
    fading: Option<Fading>,
    office: Option<office::Office>,
}

fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

/// The mean SNRs a scenario may give, dB: below −30 no MCS decodes and above 100 nothing changes (the
/// same range as a run-time `snr_db` command).
pub const SNR_RANGE_DB: std::ops::RangeInclusive<f64> = -30.0..=100.0;

impl ChannelModel {
    /// A constant SNR without fading.
    pub fn fixed(snr_db: f64) -> Self {
        ChannelModel { mean: Mean::Const(snr_db), fading: None, office: None }
    }

    /// Builds a validated configuration. `station` names the RNG path of the fading.
    pub fn from_config(c: &ChannelConfig, seed: u64, station: &str) -> Self {
        if let ChannelConfig::Office(p) = c {
            let (office, fading) = office::Office::new(p, seed, station);
            return ChannelModel { mean: Mean::Const(p.snr_db), fading: Some(fading), office: Some(office) };
        }
        let (mean, fading) = match c {
            ChannelConfig::FixedSnr { snr_db, fading } => (Mean::Const(*snr_db), fading),
            ChannelConfig::SnrTrace { file, interpolate, fading } => {
                let rows = read_snr_series(Path::new(file)).expect("validated");
                (series(&rows, *interpolate), fading)
            }
            ChannelConfig::LogDistance { distance_m, exponent, reference_loss_db, tx_power_dbm, noise_figure_db, fading } => {
                let pl = reference_loss_db + 10.0 * exponent * distance_m.max(1.0).log10();
                (Mean::Const(tx_power_dbm - pl - noise_floor_dbm(ChannelWidth::Mhz20, *noise_figure_db)), fading)
            }
            ChannelConfig::Ramp { points, fading } => (series(points, true), fading),
            ChannelConfig::Office(_) => unreachable!("handled above"),
        };
        let fading = fading.as_ref().map(|f| {
            let (k, coh) = match f {
                FadingConfig::Rayleigh { coherence_ms } => (0.0, *coherence_ms),
                FadingConfig::Rician { k_db, coherence_ms } => (10f64.powf(k_db / 10.0), *coherence_ms),
            };
            Fading::new(k, ms_to_ns(coh).max(1), Rng::derive(seed, &format!("channel/{station}/fading")))
        });
        ChannelModel { mean, fading, office: None }
    }

    /// Checks a configuration: `Err((key, message))` names the offending key.
    pub fn check(c: &ChannelConfig) -> Result<(), (&'static str, String)> {
        if let ChannelConfig::Office(p) = c {
            return p.check();
        }
        let fin = |key: &'static str, v: f64| if v.is_finite() { Ok(()) } else { Err((key, format!("must be a finite number, got {}", shown(v)))) };
        let fading = match c {
            ChannelConfig::FixedSnr { snr_db, fading } => {
                if !(SNR_RANGE_DB.contains(snr_db)) {
                    return Err(("snr_db", format!("must be in {}..={} dB, got {}", SNR_RANGE_DB.start(), SNR_RANGE_DB.end(), shown(*snr_db))));
                }
                fading
            }
            ChannelConfig::SnrTrace { file, fading, .. } => {
                read_snr_series(Path::new(file)).map_err(|e| ("file", e.to_string()))?;
                fading
            }
            ChannelConfig::LogDistance { distance_m, exponent, reference_loss_db, tx_power_dbm, noise_figure_db, fading } => {
                if !(distance_m.is_finite() && *distance_m > 0.0) {
                    return Err(("distance_m", format!("must be a positive number, got {}", shown(*distance_m))));
                }
                fin("exponent", *exponent)?;
                fin("reference_loss_db", *reference_loss_db)?;
                fin("tx_power_dbm", *tx_power_dbm)?;
                fin("noise_figure_db", *noise_figure_db)?;
                fading
            }
            ChannelConfig::Ramp { points, fading } => {
                if points.is_empty() {
                    return Err(("points", "needs at least one [time_s, snr_db] point".into()));
                }
                for (i, w) in points.iter().enumerate() {
                    if !(w.0.is_finite() && w.0 >= 0.0 && w.1.is_finite()) {
                        return Err(("points", format!("point {i}: time must be ≥ 0 and both values finite")));
                    }
                    if i > 0 && w.0 <= points[i - 1].0 {
                        return Err(("points", format!("point {i}: times must increase")));
                    }
                    // As a fixed SNR and a run-time `snr_db` are: what a radio can see.
                    if !SNR_RANGE_DB.contains(&w.1) {
                        return Err(("points", format!("point {i}: the SNR must be in {}..={} dB, got {}", SNR_RANGE_DB.start(), SNR_RANGE_DB.end(), shown(w.1))));
                    }
                    if w.0 > crate::scenario::MAX_TIME_S {
                        return Err(("points", format!("point {i}: the time must be at most 1e9 s, got {:e}", w.0)));
                    }
                }
                fading
            }
            ChannelConfig::Office(_) => unreachable!("handled above"),
        };
        let Some(f) = fading else { return Ok(()) };
        let (FadingConfig::Rayleigh { coherence_ms } | FadingConfig::Rician { coherence_ms, .. }) = f;
        check_coherence_ms(*coherence_ms).map_err(|m| ("fading", format!("coherence_ms {m}")))?;
        match f {
            FadingConfig::Rician { k_db, .. } if !k_db.is_finite() => Err(("fading", "k_db must be finite".into())),
            _ => Ok(()),
        }
    }

    /// Replaces the mean SNR by a constant from now on (a run-time command); fading and the office
    /// model's offsets stay.
    pub fn set_mean_snr(&mut self, snr_db: f64) {
        self.mean = Mean::Const(snr_db);
    }

    /// Gives this direction of the link a fading branch for each of `n_rx` receive antennas: branch 0 is
    /// the single-antenna sequence both directions share (reciprocity of the one antenna pair), and
    /// branch k ≥ 1 draws from `Rng::derive(seed, "{path}/branch{k}")`, its own antenna's, so it does
    /// not depend on the other branches or on the other direction. Without fading, nothing to do.
    pub fn set_receive_branches(&mut self, n_rx: u8, seed: u64, path: &str) {
        if let Some(f) = &mut self.fading {
            f.branch_rng0 = (1..(n_rx as usize).clamp(1, MAX_BRANCHES)).map(|k| Rng::derive(seed, &format!("{path}/branch{k}"))).collect();
            f.branch_rng.clone_from(&f.branch_rng0);
            f.block = None;
        }
    }

    /// How many diversity orders the fading draws (`usize::MAX` without fading: any order is the mean).
    pub fn branches(&self) -> usize {
        self.fading.as_ref().map_or(usize::MAX, Fading::branches)
    }

    /// SNR in dB at `now` at one receive antenna.
    #[inline]
    pub fn snr_db(&mut self, now: SimTime) -> f64 {
        self.sample(now).db(1)
    }

    /// The SNR at `now` for every diversity order (one evaluation of the mean, the offsets and the
    /// fading for a PPDU's preamble and subframes alike).
    pub fn sample(&mut self, now: SimTime) -> SnrSample {
        let mut out = SnrSample { mean_db: self.mean.at(now.as_ns()), gain_db: [0.0; MAX_BRANCHES], orders: 0, office_db: None };
        if let Some(f) = &mut self.fading {
            let g = f.gains_db(now.as_ns());
            out.orders = g.len();
            out.gain_db[..g.len()].copy_from_slice(g);
        }
        if let Some(o) = &mut self.office {
            out.office_db = Some(o.offset_db(now.as_ns()));
        }
        out
    }
}

fn series(rows: &[(f64, f64)], linear: bool) -> Mean {
    Mean::Series {
        t: Arc::new(rows.iter().map(|r| (r.0 * 1e9).round() as u64).collect()),
        v: Arc::new(rows.iter().map(|r| r.1).collect()),
        linear,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_interpolates_and_holds() {
        let mut c = ChannelModel::from_config(&ChannelConfig::Ramp { points: vec![(1.0, 30.0), (3.0, 10.0)], fading: None }, 1, "s");
        assert_eq!(c.snr_db(SimTime::ZERO), 30.0);
        assert!((c.snr_db(SimTime::from_secs(2)) - 20.0).abs() < 1e-9);
        assert_eq!(c.snr_db(SimTime::from_secs(9)), 10.0);
    }

    /// A coherence time under 0.1 ms is refused: the fading draws every block in order, and 1e-300 ms
    /// (a fuzzed value) had made a 0.2-s run take half a minute.
    #[test]
    fn coherence_time_has_a_floor() {
        let with = |coherence_ms| ChannelConfig::FixedSnr { snr_db: 20.0, fading: Some(FadingConfig::Rician { k_db: 3.0, coherence_ms }) };
        for bad in [1e-300, 0.0999, 0.0, -1.0, f64::NAN] {
            let (key, msg) = ChannelModel::check(&with(bad)).unwrap_err();
            assert_eq!(key, "fading");
            assert!(msg.starts_with("coherence_ms must be at least 0.1 ms"), "{msg}");
        }
        assert!(ChannelModel::check(&with(0.1)).is_ok());
        assert!(ChannelModel::check(&with(1e9)).is_ok());
    }

    #[test]
    fn log_distance_matches_ns3_link_budget() {
        // 1 m: 16.02 − 46.68 − (−94) ≈ 63.3 dB; 10 m with exponent 3: 30 dB less.
        let c = |d| ChannelConfig::LogDistance { distance_m: d, exponent: 3.0, reference_loss_db: 46.6777, tx_power_dbm: 16.0206, noise_figure_db: 7.0, fading: None };
        let s1 = ChannelModel::from_config(&c(1.0), 1, "s").snr_db(SimTime::ZERO);
        let s10 = ChannelModel::from_config(&c(10.0), 1, "s").snr_db(SimTime::ZERO);
        assert!((s1 - 63.33).abs() < 0.05, "{s1}");
        assert!((s1 - s10 - 30.0).abs() < 1e-9);
    }

    /// Rayleigh: mean linear gain 1 and P(|h|² < x) = 1 − e^(−x); the gain holds within a block and the
    /// sequence does not depend on query times.
    #[test]
    fn rayleigh_statistics_and_query_independence() {
        let cfg = ChannelConfig::FixedSnr { snr_db: 20.0, fading: Some(FadingConfig::Rayleigh { coherence_ms: 10.0 }) };
        let mut a = ChannelModel::from_config(&cfg, 7, "sta");
        let n = 40_000u64;
        let (mut sum, mut below) = (0.0, 0u64);
        for b in 0..n {
            let g = 10f64.powf((a.snr_db(SimTime::from_ms(b * 10)) - 20.0) / 10.0);
            sum += g;
            below += (g < 0.1) as u64;
        }
        assert!((sum / n as f64 - 1.0).abs() < 0.02, "mean {}", sum / n as f64);
        let p = below as f64 / n as f64;
        assert!((p - (1.0 - (-0.1f64).exp())).abs() < 0.005, "P(<0.1) = {p}");
        let mut b = ChannelModel::from_config(&cfg, 7, "sta");
        let mut c = ChannelModel::from_config(&cfg, 7, "sta");
        assert_eq!(b.snr_db(SimTime::from_ms(3)), b.snr_db(SimTime::from_ms(9)), "constant within a block");
        let late = b.snr_db(SimTime::from_ms(995));
        for t in (0..1000).step_by(7) {
            c.snr_db(SimTime::from_ms(t));
        }
        assert_eq!(late, c.snr_db(SimTime::from_ms(995)));
    }

    /// Diversity order m: the block gain is the mean of m unit-mean exponentials, Gamma(m, 1/m), so
    /// P(g < 0.1) = 1 − e^(−0.1m)·Σ_{j<m} (0.1m)^j / j!: 0.0952 for one branch, 0.0175 for two, 0.0036
    /// for three; the mean stays 1. Branch 0 is the single-antenna sequence whatever the branches.
    #[test]
    fn diversity_order_shapes_the_fading_as_gamma() {
        let cfg = ChannelConfig::FixedSnr { snr_db: 20.0, fading: Some(FadingConfig::Rayleigh { coherence_ms: 10.0 }) };
        let mut plain = ChannelModel::from_config(&cfg, 7, "sta");
        let mut three = ChannelModel::from_config(&cfg, 7, "sta");
        three.set_receive_branches(3, 7, "channel/sta/downlink");
        let n = 40_000u64;
        let mut stats = [(0.0, 0u64); 3];
        for b in 0..n {
            let t = SimTime::from_ms(b * 10);
            assert_eq!(three.snr_db(t), plain.snr_db(t), "branch 0 unchanged by more branches");
            for (m, s) in stats.iter_mut().enumerate() {
                let g = 10f64.powf((three.sample(t).db(m + 1) - 20.0) / 10.0);
                s.0 += g;
                s.1 += (g < 0.1) as u64;
            }
        }
        for (m, &(sum, below)) in stats.iter().enumerate() {
            let x = 0.1 * (m + 1) as f64;
            let expected = 1.0 - (-x).exp() * (0..=m).map(|j| x.powi(j as i32) / (1..=j).product::<usize>() as f64).sum::<f64>();
            let p = below as f64 / n as f64;
            assert!((sum / n as f64 - 1.0).abs() < 0.02, "order {}: mean {}", m + 1, sum / n as f64);
            assert!((p - expected).abs() < 0.1 * expected + 0.001, "order {}: P(<0.1) = {p}, Gamma gives {expected}", m + 1);
        }
        assert_eq!(three.sample(SimTime::from_ms(5)).db(8), three.sample(SimTime::from_ms(5)).db(3), "at most its branches");
        // A query earlier than the current block replays every branch from the start.
        let late = three.sample(SimTime::from_ms(995)).db(3);
        let mut fresh = ChannelModel::from_config(&cfg, 7, "sta");
        fresh.set_receive_branches(3, 7, "channel/sta/downlink");
        for t in (0..1000).step_by(7) {
            fresh.sample(SimTime::from_ms(t));
        }
        assert_eq!(late, fresh.sample(SimTime::from_ms(995)).db(3));
        // Branch k is its antenna's own: the same with more branches beside it, another in the other
        // direction (branch 0, the shared one, aside).
        let mut four = ChannelModel::from_config(&cfg, 7, "sta");
        four.set_receive_branches(4, 7, "channel/sta/downlink");
        let mut up = ChannelModel::from_config(&cfg, 7, "sta");
        up.set_receive_branches(3, 7, "channel/sta/uplink");
        let t = SimTime::from_ms(400);
        assert_eq!(four.sample(t).db(3), fresh.sample(t).db(3));
        assert_eq!(up.snr_db(t), fresh.snr_db(t));
        assert_ne!(up.sample(t).db(2), fresh.sample(t).db(2));
        assert_eq!((diversity_order(1, 1), diversity_order(2, 1), diversity_order(2, 2), diversity_order(3, 2), diversity_order(1, 3)), (1, 2, 1, 2, 1));
    }

    #[test]
    fn rician_with_large_k_is_nearly_constant() {
        let cfg = ChannelConfig::FixedSnr { snr_db: 20.0, fading: Some(FadingConfig::Rician { k_db: 30.0, coherence_ms: 1.0 }) };
        let mut a = ChannelModel::from_config(&cfg, 3, "s");
        for b in 0..1000 {
            assert!((a.snr_db(SimTime::from_ms(b)) - 20.0).abs() < 1.0);
        }
    }
}
