//! Minstrel-HT script tests: build it, feed `TxReport`s at given times, assert the rate set.

use super::table::{ewma, filter_avg_add, frac, packet_duration_ns, Overheads, ONE};
use super::*;
use crate::phy::{Band, ChannelWidth, GuardInterval, PhyStandard};
use crate::ratectl::LinkRates;

const LGI: GuardInterval = GuardInterval::Ns800;
const SGI: GuardInterval = GuardInterval::Ns400;

fn link(max_nss: u8, gis: &[GuardInterval]) -> LinkRates {
    LinkRates::new(
        PhyStandard::Ht,
        ChannelWidth::Mhz20,
        gis,
        max_nss,
        Band::Ghz5,
    )
}

fn params(variant: MinstrelVariant) -> MinstrelHtParams {
    MinstrelHtParams {
        variant,
        ..MinstrelHtParams::default()
    }
}

fn build(p: &MinstrelHtParams, l: &LinkRates, seed: u64) -> MinstrelHt {
    MinstrelHt::new(p, l, Rng::derive(seed, "sta0/ratectl"), SimTime::ZERO).unwrap()
}

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

fn ht_index(t: &TxVector) -> u8 {
    t.ht_mcs_index().unwrap()
}

/// One PSDU on a deterministic channel: every MPDU at a rate with `ok(rate)` gets through, every other
/// attempt is lost. Probes carry one MPDU, other PSDUs `ampdu_len`.
fn one_psdu(
    mi: &mut MinstrelHt,
    now: SimTime,
    step_ms: u64,
    ampdu_len: u16,
    ok: &dyn Fn(&TxVector) -> bool,
) -> (RateSet, TxReport) {
    let set = mi.rate_set(now, 1500);
    let len = if set.probe { 1 } else { ampdu_len };
    let mut attempts = 0;
    let mut acked = 0;
    for e in set.iter() {
        if ok(&e.txv) {
            attempts += 1;
            acked = len;
            break;
        }
        attempts += e.tries as u32;
    }
    let report = set.report(attempts, len, acked);
    mi.on_tx_status(now + SimDuration::from_ms(step_ms), &report);
    (set, report)
}

/// Runs `[from, to)` in steps; returns (time, rate set) of every PSDU.
fn drive(
    mi: &mut MinstrelHt,
    from: u64,
    to: u64,
    step_ms: u64,
    ampdu_len: u16,
    ok: &dyn Fn(&TxVector) -> bool,
) -> Vec<(SimTime, RateSet)> {
    let mut out = Vec::new();
    let mut t = from;
    while t < to {
        let (set, _) = one_psdu(mi, ms(t), step_ms, ampdu_len, ok);
        out.push((ms(t), set));
        t += step_ms;
    }
    out
}

/// The first time from which `current_rate` satisfies `pred` for the rest of the run.
fn settled_at(
    mi: &mut MinstrelHt,
    from: u64,
    to: u64,
    ok: &dyn Fn(&TxVector) -> bool,
    pred: &dyn Fn(&TxVector) -> bool,
) -> Option<u64> {
    let mut since = None;
    let mut t = from;
    while t < to {
        one_psdu(mi, ms(t), 2, 16, ok);
        t += 2;
        match (pred(&mi.current_rate()), since) {
            (true, None) => since = Some(t),
            (false, _) => since = None,
            _ => {}
        }
    }
    since
}

#[test]
fn filter_matches_hand_computed_q12_values() {
    // c1 = 4096 − 5273 + 2350 = 1173 ≈ 0.2864·4096.
    assert_eq!(ONE as i32 - table::DEFAULT_C2 - table::DEFAULT_C3, 1173);
    let (c2, c3) = (table::DEFAULT_C2, table::DEFAULT_C3);
    let mut taps = (0, 0);
    // First sample initialises both taps.
    assert_eq!(filter_avg_add(&mut taps, 2048, c2, c3), 2048);
    assert_eq!(taps, (2048, 2048));
    // (1173·1 + 5273·2048 − 2350·2048) >> 12 = 5987477 >> 12 = 1461 (a zero input counts as 1).
    assert_eq!(filter_avg_add(&mut taps, 0, c2, c3), 1461);
    // (1173·4096 + 5273·1461 − 2350·2048) >> 12 = 7695661 >> 12 = 1878.
    assert_eq!(filter_avg_add(&mut taps, 4096, c2, c3), 1878);
    assert_eq!(filter_avg_add(&mut taps, 4096, c2, c3), 2752);
    assert_eq!(filter_avg_add(&mut taps, 4096, c2, c3), 3638);
    assert_eq!(taps, (3638, 2752));
    // Overshoot is clamped to 1.0 (4096).
    let mut taps = (4096, 2048);
    assert_eq!(filter_avg_add(&mut taps, 4096, c2, c3), 4096);
    // Floating-point coefficients of the spec (period 16): within one Q12 step of the kernel's.
    let a = (-std::f64::consts::PI * 2f64.sqrt() / 16.0).exp();
    let fc2 = 2.0 * a * (2.0 * std::f64::consts::PI * 2f64.sqrt() / 16.0).cos();
    let fc3 = -a * a;
    assert!((fc2 * 4096.0 - c2 as f64).abs() < 1.0, "{fc2}");
    assert!((fc3 * 4096.0 - c3 as f64).abs() < 1.0, "{fc3}");
    assert!(((1.0 - fc2 - fc3) - 0.2864).abs() < 1e-3);
}

#[test]
fn ewma_keeps_75_percent() {
    assert_eq!(ewma(4096, 0, 96), 3072);
    assert_eq!(ewma(3072, 4096, 96), 3328);
    assert_eq!(ewma(4096, 16 * 4096, 96), 4096 + 15 * 1024);
    assert_eq!(frac(3, 4), 3072);
    assert_eq!(frac(10, 100), 409);
}

#[test]
fn overhead_and_packet_airtime() {
    for band in [Band::Ghz5, Band::Ghz2_4] {
        let o = Overheads::for_band(band);
        assert_eq!(
            (o.ht, o.ht_rts, o.legacy, o.legacy_rts),
            (108, 228, 60, 180),
            "{band}"
        );
    }
    // HT20 MCS7 LGI: ⌈153600/260⌉ = 591 symbols × 4 µs / 16 = 147.75 µs per 1200-B packet.
    let mcs7 = TxVector::ht(7, ChannelWidth::Mhz20, LGI).unwrap();
    assert_eq!(packet_duration_ns(&mcs7, Band::Ghz5), 147_750);
    let mcs7s = TxVector::ht(7, ChannelWidth::Mhz20, SGI).unwrap();
    assert_eq!(packet_duration_ns(&mcs7s, Band::Ghz5), 591 * 3600 / 16);
    // 54 Mb/s: SIFS 16 + preamble 20 + ⌈(16 + 8·1204 + 6)/216⌉ = 45 symbols → 216 µs.
    let ofdm = TxVector::ofdm_mbps(54).unwrap();
    assert_eq!(packet_duration_ns(&ofdm, Band::Ghz5), 216_000);
}

/// A station whose MCS7 probability is `prob` with the given average A-MPDU length.
fn with_mcs7(prob: u32, avg_ampdu: u32, max_retry: u8) -> (MinstrelHt, usize) {
    let p = MinstrelHtParams {
        max_retry,
        ..MinstrelHtParams::default()
    };
    let mut mi = build(&p, &link(1, &[LGI]), 1);
    let idx = mi
        .index_of(&TxVector::ht(7, ChannelWidth::Mhz20, LGI).unwrap())
        .unwrap();
    mi.rates[idx].st.prob = prob;
    mi.avg_ampdu_len = avg_ampdu << table::SCALE;
    (mi, idx)
}

#[test]
fn retry_counts_of_the_spec_examples() {
    // Spec §6.1: HT20 MCS7, 16-MPDU aggregates → 2 (contention 67 + 139, then 2 × (108 + 2364) = 5150 µs,
    // and a third try would end at 7905 µs > 6000 µs).
    let (mi, idx) = with_mcs7(ONE, 16, 10);
    assert_eq!(mi.calc_retransmit(idx).0, 2);
    // Single MPDUs → 5: 716, 1254, 2080, 3482 µs, then 6036 µs exceeds the segment (contention grows).
    let (mi, idx) = with_mcs7(ONE, 1, 10);
    assert_eq!(mi.calc_retransmit(idx), (5, 5));
    // max_retry caps the count; < 10 % success gives 1 try.
    let (mi, idx) = with_mcs7(ONE, 1, 4);
    assert_eq!(mi.calc_retransmit(idx).0, 4);
    let (mi, idx) = with_mcs7(frac(5, 100), 1, 10);
    assert_eq!(mi.calc_retransmit(idx), (1, 1));
    // The spec says counts reach 10 for short, fast frames, but the contention term alone is
    // 67 + 139 + 283 + 571 + 1147 + 2299 = 4506 µs after six tries and 9109 µs after seven, so no rate
    // gets more than 6 within a 6000-µs segment: even HT40 SGI MCS15 single MPDUs (32 µs each) stop at 6.
    let l = LinkRates::new(PhyStandard::Ht, ChannelWidth::Mhz40, &[SGI], 2, Band::Ghz5);
    let mut mi = build(&MinstrelHtParams::default(), &l, 1);
    let idx = mi
        .index_of(&TxVector::ht(15, ChannelWidth::Mhz40, SGI).unwrap())
        .unwrap();
    mi.rates[idx].st.prob = ONE;
    assert_eq!(mi.calc_retransmit(idx).0, 6);
    for r in mi.rates.iter_mut() {
        r.st.prob = ONE;
    }
    let counts: Vec<u8> = (0..mi.rates.len())
        .map(|i| mi.calc_retransmit(i).0)
        .collect();
    assert_eq!(counts.iter().max(), Some(&6), "{counts:?}");
}

#[test]
fn initial_table_is_the_lowest_rate_with_two_tries() {
    let mi = build(&MinstrelHtParams::default(), &link(2, &[LGI, SGI]), 3);
    let set = RateSet {
        entries: mi.table,
        probe: false,
    };
    assert_eq!(set.iter().count(), 4);
    for (i, e) in set.iter().enumerate() {
        assert_eq!(ht_index(&e.txv), 0);
        assert_eq!(e.txv.gi, LGI);
        assert_eq!(e.tries, 2);
        assert_eq!(e.rts, i > 0);
    }
}

#[test]
fn modern_converges_to_the_best_rate_of_a_step_channel() {
    let ok = |t: &TxVector| t.mcs <= 5;
    let mut mi = build(&params(MinstrelVariant::Modern), &link(1, &[LGI]), 7);
    let at = settled_at(&mut mi, 0, 2000, &ok, &|t| t.mcs == 5).expect("settles on MCS5");
    eprintln!("modern settled on MCS5 at {at} ms");
    assert!(at <= 300, "settled at {at} ms");
    // The fallbacks are the next-best rates, and max_prob is a rate that works.
    let set = mi.rate_set(ms(2001), 1500);
    let set = if set.probe {
        mi.rate_set(ms(2001), 1500)
    } else {
        set
    };
    let mcs: Vec<u8> = set.iter().map(|e| e.txv.mcs).collect();
    assert_eq!(mcs[0], 5);
    assert!(mcs.iter().all(|&m| m <= 5), "{mcs:?}");
}

#[test]
fn legacy_converges_to_the_best_rate_of_a_step_channel() {
    let ok = |t: &TxVector| t.mcs <= 5;
    let mut mi = build(&params(MinstrelVariant::Legacy), &link(1, &[LGI]), 7);
    let at = settled_at(&mut mi, 0, 4000, &ok, &|t| t.mcs == 5).expect("settles on MCS5");
    eprintln!("legacy settled on MCS5 at {at} ms");
    assert!(at <= 1000, "settled at {at} ms");
    // Legacy chain: [max_tp[0], max_tp[1], max_prob].
    assert_eq!(mi.table.iter().flatten().count(), 3);
}

#[test]
fn both_variants_converge_over_many_seeds_and_groups() {
    // HT20 MCS 0–15 in both guard intervals; only single-stream MCS ≤ 4 work: best = SGI MCS4.
    let ok = |t: &TxVector| t.nss == 1 && t.mcs <= 4;
    let best = |t: &TxVector| t.nss == 1 && t.mcs == 4 && t.gi == SGI;
    for variant in [MinstrelVariant::Modern, MinstrelVariant::Legacy] {
        let mut worst = 0;
        for seed in 0..10 {
            let mut mi = build(&params(variant), &link(2, &[LGI, SGI]), seed);
            let at = settled_at(&mut mi, 0, 5000, &ok, &best).expect("settles");
            eprintln!("{variant:?} seed {seed}: {at} ms");
            worst = worst.max(at);
        }
        eprintln!("{variant:?}: worst settling time over 10 seeds {worst} ms");
        assert!(
            worst
                <= if variant == MinstrelVariant::Modern {
                    1500
                } else {
                    3000
                },
            "{variant:?} {worst}"
        );
    }
}

#[test]
fn falls_back_when_the_channel_degrades_and_climbs_back() {
    for variant in [MinstrelVariant::Modern, MinstrelVariant::Legacy] {
        let mut mi = build(&params(variant), &link(1, &[LGI]), 11);
        let good = |t: &TxVector| t.mcs <= 5;
        let bad = |t: &TxVector| t.mcs <= 2;
        settled_at(&mut mi, 0, 2000, &good, &|t| t.mcs == 5).expect("converged");
        // Degrade at 2 s: MCS 3–5 now fail.
        let down = settled_at(&mut mi, 2000, 4000, &bad, &|t| t.mcs == 2).expect("falls back");
        // While degraded, every chain still ends in a working rate (max_prob), so frames get through.
        let set = mi.rate_set(ms(4000), 1500);
        assert!(bad(&set.iter().last().unwrap().txv), "{variant:?}");
        // Improve at 4 s: probes find MCS 3–5 again.
        let up = settled_at(&mut mi, 4000, 8000, &good, &|t| t.mcs == 5).expect("climbs back");
        eprintln!(
            "{variant:?}: fell back after {} ms, climbed back after {} ms",
            down - 2000,
            up - 4000
        );
        assert!(
            down - 2000 <= 500,
            "{variant:?} fell back after {} ms",
            down - 2000
        );
        assert!(
            up - 4000 <= 2000,
            "{variant:?} climbed back after {} ms",
            up - 4000
        );
    }
}

#[test]
fn sudden_death_downgrades_streams_before_the_next_update() {
    let mut mi = build(&params(MinstrelVariant::Modern), &link(2, &[LGI]), 5);
    let all = |_: &TxVector| true;
    settled_at(&mut mi, 0, 1000, &all, &|t| ht_index(t) == 15).expect("reaches MCS15");
    // At 1 s the second stream dies. Find the first non-probe PSDU, which carries max_tp[0] = MCS15.
    let one_ss = |t: &TxVector| t.nss == 1;
    let update_before = mi.n.stats_updates;
    let mut t = 1000;
    loop {
        let (set, _) = one_psdu(&mut mi, ms(t), 1, 16, &one_ss);
        t += 1;
        if !set.probe {
            break;
        }
    }
    // 16 MPDUs × 2 tries > 30 attempts with no success: downgraded at once, without a stats update.
    assert_eq!(
        mi.n.stats_updates, update_before,
        "happened within the interval"
    );
    assert!(mi.n.sudden_deaths >= 1);
    assert_eq!(mi.current_rate().nss, 1, "{}", mi.current_rate());
    assert_eq!(mi.table[0].unwrap().txv.nss, 1);
    // One-rate hardware has no sudden death.
    let p1 = MinstrelHtParams {
        max_rates: 1,
        max_retry: 7,
        ..MinstrelHtParams::default()
    };
    let mut mi1 = build(&p1, &link(2, &[LGI]), 5);
    settled_at(&mut mi1, 0, 1000, &all, &|t| ht_index(t) == 15).expect("reaches MCS15");
    drive(&mut mi1, 1000, 1010, 1, 16, &one_ss);
    assert_eq!(mi1.n.sudden_deaths, 0);
}

#[test]
fn modern_probes_at_most_every_20_ms_and_flagged() {
    let mut mi = build(&params(MinstrelVariant::Modern), &link(2, &[LGI, SGI]), 9);
    let ok = |t: &TxVector| t.nss == 1 && t.mcs <= 4;
    let mut probes: Vec<SimTime> = Vec::new();
    let mut updates: Vec<SimTime> = Vec::new();
    let mut t = 0;
    while t < 3000 {
        let before = mi.n.stats_updates;
        let table = mi.table;
        let (set, _) = one_psdu(&mut mi, ms(t), 1, 16, &ok);
        if set.probe {
            probes.push(ms(t));
            let e0 = set.first();
            assert_eq!(e0.tries, 1);
            assert!(!e0.rts);
            assert_eq!(
                &set.entries[1..],
                &table[1..],
                "the rest of the chain is the rate table"
            );
        }
        if mi.n.stats_updates > before {
            updates.push(ms(t + 1));
        }
        t += 1;
    }
    for w in probes.windows(2) {
        let gap = w[1] - w[0];
        let update_between = updates.iter().any(|&u| u > w[0] && u <= w[1]);
        assert!(
            gap >= SimDuration::from_ms(20) || update_between,
            "probes at {:?} and {:?}",
            w[0],
            w[1]
        );
    }
    let bound = 3000 / 20 + updates.len() + 1;
    eprintln!(
        "modern: {} probes in 3 s ({} stats updates)",
        probes.len(),
        updates.len()
    );
    assert!(probes.len() <= bound);
    assert!(probes.len() >= 20, "it does probe: {}", probes.len());
    assert_eq!(mi.n.probes, probes.len() as u64);
}

#[test]
fn one_rate_hardware_gets_a_single_series() {
    let p = MinstrelHtParams {
        max_rates: 1,
        max_retry: 7,
        ..MinstrelHtParams::default()
    };
    let mut mi = build(&p, &link(1, &[LGI]), 2);
    let ok = |t: &TxVector| t.mcs <= 6;
    for (_, set) in drive(&mut mi, 0, 2000, 2, 16, &ok) {
        assert_eq!(set.iter().count(), 1);
        assert!(set.first().tries <= 7);
    }
    assert_eq!(mi.current_rate().mcs, 6);
}

/// Drives `mi` for `[0, to_ms)` with 10-MPDU aggregates; `acked(mcs, len)` MPDUs get through per attempt.
fn drive_acked(mi: &mut MinstrelHt, to_ms: u64, acked: &mut dyn FnMut(u8, u16) -> u16) {
    let mut t = 0;
    while t < to_ms {
        let set = mi.rate_set(ms(t), 1500);
        let len: u16 = if set.probe { 1 } else { 10 };
        let (mut attempts, mut got) = (0, 0);
        for e in set.iter() {
            let a = acked(e.txv.mcs, len).min(len);
            if a > 0 {
                attempts += 1;
                got = a;
                break;
            }
            attempts += e.tries as u32;
        }
        mi.on_tx_status(ms(t + 2), &set.report(attempts, len, got));
        t += 2;
    }
}

#[test]
fn chain_is_max_tp_then_max_prob_with_rts_on_fallbacks() {
    let mut mi = build(&params(MinstrelVariant::Modern), &link(1, &[LGI]), 4);
    // MCS ≤ 4 always work, MCS5 works for 60 % of the MPDUs, MCS 6–7 never.
    let mut n = 0u32;
    drive_acked(&mut mi, 3000, &mut |mcs, len| match mcs {
        0..=4 => len,
        5 => {
            n += 1;
            (len as u32 * 6 / 10 + (n % 2)) as u16
        }
        _ => 0,
    });
    let table: Vec<RateEntry> = mi.table.iter().flatten().copied().collect();
    let mcs: Vec<u8> = table.iter().map(|e| e.txv.mcs).collect();
    assert_eq!(table.len(), 4);
    assert_eq!(mcs[0], mi.rates[mi.max_tp[0]].txv.mcs);
    assert_eq!(mcs[1], mi.rates[mi.max_tp[1]].txv.mcs);
    assert_eq!(mcs[2], mi.rates[mi.max_tp[2]].txv.mcs);
    assert_eq!(mcs[3], mi.rates[mi.max_prob].txv.mcs);
    // 0.9-capped tp: MCS5 (52 Mb/s) at 60 % loses to MCS4 (39 Mb/s) at 100 %: 0.6·52 < 0.9·39.
    assert_eq!(mcs[0], 4, "{mcs:?}");
    assert!(mi.rates[mi.max_prob].st.prob > frac(75, 100));
    for (i, e) in table.iter().enumerate() {
        assert_eq!(e.rts, i > 0, "RTS/CTS on fallbacks only");
        let idx = mi.index_of(&e.txv).unwrap();
        let (c, c_rts) = mi.calc_retransmit(idx);
        let want = if mi.rates[idx].st.prob < frac(20, 100) {
            2
        } else if i > 0 {
            c_rts
        } else {
            c
        };
        assert_eq!(e.tries, want, "entry {i}");
    }
    let stats = mi.stats();
    let rows = stats["rates"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    assert!(
        rows[4]["best"].as_str().unwrap().starts_with('A'),
        "{}",
        rows[4]
    );
    assert_eq!(stats["max_tp"][0], "HT20 LGI 1 MCS4");
}

#[test]
fn reports_are_counted_per_series_as_in_tx_status() {
    let mut mi = build(&params(MinstrelVariant::Modern), &link(1, &[LGI]), 4);
    let r = |m: u8| TxVector::ht(m, ChannelWidth::Mhz20, LGI).unwrap();
    let report = TxReport {
        ampdu_len: 8,
        ampdu_ack_len: 5,
        tries: [2, 3, 0, 0],
        rates: [Some(r(6)), Some(r(4)), Some(r(0)), None],
        success: true,
        probe: false,
    };
    mi.on_tx_status(ms(1), &report);
    let st = |m: u8| mi.rates[mi.index_of(&r(m)).unwrap()].st;
    assert_eq!((st(6).attempts, st(6).success), (16, 0));
    assert_eq!((st(4).attempts, st(4).success), (24, 5));
    assert_eq!(
        (st(0).attempts, st(0).success),
        (0, 0),
        "a series with 0 tries ends the chain"
    );
    assert_eq!((mi.ampdu_packets, mi.ampdu_len_sum), (1, 8));
}

#[test]
fn avg_ampdu_len_follows_the_reports() {
    let mut mi = build(&params(MinstrelVariant::Modern), &link(1, &[LGI]), 4);
    let ok = |_: &TxVector| true;
    drive(&mut mi, 0, 3000, 2, 24, &ok);
    let avg = mi.avg_ampdu_len_pkts();
    assert!((20..=24).contains(&avg), "{avg}");
    // Without A-MPDU lengths, the modern variant derives it from max_tp[0]'s airtime (MCS7: 16).
    let mut l = link(1, &[LGI]);
    l.ampdu_len_reported = false;
    let mut mi = build(&params(MinstrelVariant::Modern), &l, 4);
    drive(&mut mi, 0, 2000, 2, 24, &ok);
    assert_eq!(mi.avg_ampdu_len, 0);
    assert_eq!(mi.avg_ampdu_len_pkts(), 16);
}

#[test]
fn same_seed_same_decisions_other_seed_other_table() {
    let ok = |t: &TxVector| t.nss == 1 && t.mcs <= 5;
    let run = |seed: u64, variant| {
        let mut mi = build(&params(variant), &link(2, &[LGI, SGI]), seed);
        drive(&mut mi, 0, 1500, 1, 16, &ok)
    };
    for variant in [MinstrelVariant::Modern, MinstrelVariant::Legacy] {
        assert_eq!(run(1, variant), run(1, variant));
    }
    let a = build(&MinstrelHtParams::default(), &link(1, &[LGI]), 1);
    let b = build(&MinstrelHtParams::default(), &link(1, &[LGI]), 2);
    assert_ne!(a.sample_table, b.sample_table);
    for row in a.sample_table {
        let mut v: Vec<u8> = row[..10].to_vec();
        v.sort();
        assert_eq!(
            v,
            (0..10).collect::<Vec<u8>>(),
            "each column is a permutation"
        );
    }
}

#[test]
fn legacy_sampling_waits_for_frames_not_time() {
    let mut mi = build(&params(MinstrelVariant::Legacy), &link(1, &[LGI]), 3);
    let ok = |t: &TxVector| t.mcs <= 5;
    // At association: up to 4 probes without waiting (MRR hardware).
    let sets = drive(&mut mi, 0, 10, 1, 16, &ok);
    assert!(sets.iter().take(10).filter(|(_, s)| s.probe).count() >= 2);
    // Later, probes are at least sample_wait = 16 + 2·avg_ampdu_len frames apart.
    let sets = drive(&mut mi, 2000, 6000, 1, 16, &ok);
    let idx: Vec<usize> = sets
        .iter()
        .enumerate()
        .filter(|(_, (_, s))| s.probe)
        .map(|(i, _)| i)
        .collect();
    assert!(idx.len() >= 5, "{}", idx.len());
    for w in idx.windows(2) {
        assert!(w[1] - w[0] > 16 + 2, "probes {} frames apart", w[1] - w[0]);
    }
}

#[test]
fn vht_and_he_links_build_and_converge() {
    for std in [PhyStandard::Vht, PhyStandard::He] {
        let gis: Vec<GuardInterval> = GuardInterval::allowed(std).to_vec();
        let l = LinkRates::new(std, ChannelWidth::Mhz80, &gis, 2, Band::Ghz5);
        let mut mi = build(&MinstrelHtParams::default(), &l, 8);
        let ok = |t: &TxVector| t.mcs <= 6;
        settled_at(&mut mi, 0, 3000, &ok, &|t| t.mcs == 6 && t.nss == 2).expect("settles");
        assert!(mi.stats()["rates"].as_array().unwrap().len() >= 30);
    }
}
