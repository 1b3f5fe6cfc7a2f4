//! A small simulation harness for rate control: a synthetic link at a static SNR, driven with an
//! infinite backlog of 1500-byte MPDUs, and the goodput each controller achieves against the best
//! fixed rate's (issue 4: ≥ 90 % on static SNRs 5…30 dB).
//!
//! The link: per-MPDU success `phy::error::mpdu_success_prob(Logistic, snr, rate, 1500)`, drawn
//! independently per MPDU and attempt; an attempt costs DIFS + the mean backoff at CWmin (7.5 slots) +
//! the PPDU + SIFS + ACK/BlockAck (idealised: no collisions, a lost PPDU costs the same as a received
//! one). A PSDU aggregates up to 32 MPDUs within 4 ms at the chain's slowest rate (ath9k's limits,
//! spec §2.3/§5.6); a probe carries one MPDU. Failed MPDUs are not retried (the backlog is infinite),
//! so goodput = acknowledged bytes / time.

use super::*;
use crate::phy::{
    ack_duration, ampdu_psdu_len, block_ack_duration, max_mpdus_within, mpdu_success_prob,
    ppdu_duration, AirtimeOptions, BlockAckBitmap, ErrorModel, PhyTimings,
};
use crate::time::SimDuration;

const MPDU_LEN: u32 = 1500;
const MAX_MPDUS: u32 = 32;
const BASIC: [u32; 3] = [6, 12, 24];

/// How many MPDUs a PSDU carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agg {
    /// Up to 32 within 4 ms at the first series' rate (idealised).
    FirstSeries,
    /// Up to 32 within 4 ms at the slowest rate of the chain (ath9k `ath_lookup_rate`, spec §5.6).
    SlowestSeries,
}

struct SynthLink {
    band: Band,
    snr_db: f64,
    agg: Agg,
    rng: Rng,
}

impl SynthLink {
    fn p_mpdu(&self, tx: &TxVector) -> f64 {
        mpdu_success_prob(ErrorModel::Logistic, self.snr_db, tx, MPDU_LEN)
    }

    fn airtime(&self, tx: &TxVector, n: u32) -> SimDuration {
        let t = PhyTimings::for_band(self.band);
        let (psdu, resp) = if n > 1 {
            let lens = vec![MPDU_LEN; n as usize];
            let ba = block_ack_duration(tx, &BASIC, self.band, BlockAckBitmap::Compressed64);
            (ampdu_psdu_len(&lens), ba)
        } else {
            (MPDU_LEN, ack_duration(tx, &BASIC, self.band))
        };
        let backoff = SimDuration::from_ns(t.slot.as_ns() * 15 / 2);
        t.difs() + backoff + ppdu_duration(tx, psdu, self.band, true) + t.sifs + resp
    }

    fn n_mpdus<'a>(&self, rates: impl Iterator<Item = &'a TxVector>) -> u32 {
        let four_ms = SimDuration::from_ms(4);
        let opts = AirtimeOptions::STANDARD;
        rates
            .map(|tx| max_mpdus_within(tx, MPDU_LEN, 65_535, four_ms, self.band, opts))
            .min()
            .unwrap_or(1)
            .clamp(1, MAX_MPDUS)
    }

    /// Expected goodput of a fixed rate, Mbit/s.
    fn fixed_goodput(&self, tx: &TxVector) -> f64 {
        let n = self.n_mpdus(std::iter::once(tx));
        n as f64 * self.p_mpdu(tx) * (MPDU_LEN * 8) as f64 / self.airtime(tx, n).as_ns() as f64
            * 1e3
    }

    /// Runs `ctl` for `duration`; returns its goodput in Mbit/s over `[warmup, duration)`.
    fn run(
        &mut self,
        ctl: &mut dyn RateControl,
        duration: SimDuration,
        warmup: SimDuration,
    ) -> f64 {
        let mut now = SimTime::ZERO;
        let end = SimTime::ZERO + duration;
        let start = SimTime::ZERO + warmup;
        let mut bits = 0u64;
        while now < end {
            let set = ctl.rate_set(now, MPDU_LEN);
            let n = match (set.probe, self.agg) {
                (true, _) => 1,
                (false, Agg::FirstSeries) => self.n_mpdus(std::iter::once(&set.first().txv)),
                (false, Agg::SlowestSeries) => self.n_mpdus(set.iter().map(|e| &e.txv)),
            };
            let (mut attempts, mut acked) = (0u32, 0u32);
            'chain: for e in set.iter() {
                let p = self.p_mpdu(&e.txv);
                for _ in 0..e.tries {
                    attempts += 1;
                    now += self.airtime(&e.txv, n);
                    acked = (0..n).filter(|_| self.rng.bernoulli(p)).count() as u32;
                    if acked > 0 {
                        break 'chain;
                    }
                }
            }
            if now >= start {
                bits += acked as u64 * (MPDU_LEN * 8) as u64;
            }
            ctl.on_tx_status(now, &set.report(attempts, n as u16, acked as u16));
        }
        bits as f64 / (now - start).as_ns() as f64 * 1e3
    }
}

fn link() -> LinkRates {
    LinkRates::new(
        PhyStandard::Ht,
        ChannelWidth::Mhz20,
        &[GuardInterval::Ns800, GuardInterval::Ns400],
        2,
        Band::Ghz5,
    )
}

fn controllers() -> Vec<(&'static str, RateControlParams)> {
    let modern = MinstrelHtParams::default();
    vec![
        (
            "minstrel modern 4x10",
            RateControlParams::MinstrelHt(modern.clone()),
        ),
        (
            "minstrel modern 1x7",
            RateControlParams::MinstrelHt(MinstrelHtParams {
                max_rates: 1,
                max_retry: 7,
                ..modern.clone()
            }),
        ),
        (
            "minstrel legacy 4x10",
            RateControlParams::MinstrelHt(MinstrelHtParams {
                variant: MinstrelVariant::Legacy,
                ..modern
            }),
        ),
        (
            "thompson",
            RateControlParams::Thompson(ThompsonParams::default()),
        ),
    ]
}

#[test]
fn harness_matches_the_analytic_fixed_rate_goodput() {
    let l = link();
    for snr in [5.0, 17.0, 30.0] {
        let mut ch = SynthLink {
            band: Band::Ghz5,
            snr_db: snr,
            agg: Agg::FirstSeries,
            rng: Rng::derive(1, "chan"),
        };
        let best = l
            .supported
            .iter()
            .max_by(|a, b| ch.fixed_goodput(a).total_cmp(&ch.fixed_goodput(b)))
            .unwrap();
        let p = FixedParams {
            mcs: best.ht_mcs_index().unwrap(),
            gi_ns: Some(best.gi),
            tries: 10,
            ..Default::default()
        };
        let mut f = Fixed::new(&p, &l).unwrap();
        let sim = ch.run(&mut f, SimDuration::from_secs(3), SimDuration::ZERO);
        let want = ch.fixed_goodput(best);
        assert!(
            (sim / want - 1.0).abs() < 0.03,
            "{snr} dB {best}: sim {sim} vs {want}"
        );
    }
}

const SEEDS: u64 = 5;

/// Goodput of every controller at `snr` under `agg` over 10 s, without and with a 1-s warm-up,
/// averaged over [`SEEDS`] seeds.
fn goodputs(l: &LinkRates, snr: f64, agg: Agg) -> Vec<(&'static str, f64, f64)> {
    controllers()
        .into_iter()
        .map(|(name, params)| {
            let run = |seed, warmup| {
                let mut ctl = params
                    .build(l, Rng::derive(seed, "sta0/ratectl"), SimTime::ZERO)
                    .unwrap();
                let mut ch = SynthLink {
                    band: Band::Ghz5,
                    snr_db: snr,
                    agg,
                    rng: Rng::derive(seed, "chan"),
                };
                ch.run(&mut ctl, SimDuration::from_secs(10), warmup)
            };
            let mean = |warmup| (0..SEEDS).map(|s| run(s, warmup)).sum::<f64>() / SEEDS as f64;
            (
                name,
                mean(SimDuration::ZERO),
                mean(SimDuration::from_secs(1)),
            )
        })
        .collect()
}

#[test]
fn goodput_is_at_least_90_percent_of_the_best_fixed_rate() {
    let l = link();
    let mut failures = Vec::new();
    for agg in [Agg::FirstSeries, Agg::SlowestSeries] {
        eprintln!(
            "{agg:?}: goodput in Mbit/s over 10 s (after a 1-s warm-up), % of the best fixed rate"
        );
        for snr in [5.0, 10.0, 15.0, 20.0, 25.0, 30.0] {
            let oracle = SynthLink {
                band: Band::Ghz5,
                snr_db: snr,
                agg,
                rng: Rng::derive(0, "x"),
            };
            let tp = |t: &TxVector| oracle.fixed_goodput(t);
            let best = l
                .supported
                .iter()
                .max_by(|a, b| tp(a).total_cmp(&tp(b)))
                .unwrap();
            let best_tp = tp(best);
            let mut line = format!("{snr:>4} dB  {:<16} {best_tp:>6.2} |", rate_name(best));
            for (name, full, steady) in goodputs(&l, snr, agg) {
                let (rf, rs) = (full / best_tp, steady / best_tp);
                line += &format!(
                    " {name} {full:.1} ({:.0} %) [{steady:.1} ({:.0} %)]",
                    100.0 * rf,
                    100.0 * rs
                );
                if agg == Agg::FirstSeries && rs < 0.9 {
                    failures.push(format!("{name} at {snr} dB: {:.1} %", 100.0 * rs));
                }
            }
            eprintln!("{line}");
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}
