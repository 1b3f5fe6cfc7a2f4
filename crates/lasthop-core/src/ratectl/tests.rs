//! Tests of the rate-control API, the config schema, the fixed controller and Thompson sampling.

use super::thompson::{sample_beta, sample_gamma};
use super::*;
use crate::phy::{ChannelWidth, GuardInterval};
use crate::time::SimDuration;

const LGI: GuardInterval = GuardInterval::Ns800;
const SGI: GuardInterval = GuardInterval::Ns400;

fn ht20(max_nss: u8, gis: &[GuardInterval]) -> LinkRates {
    LinkRates::new(
        PhyStandard::Ht,
        ChannelWidth::Mhz20,
        gis,
        max_nss,
        Band::Ghz5,
    )
}

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

fn parse(toml_src: &str) -> Result<RateControlParams, toml::de::Error> {
    #[derive(Deserialize)]
    struct Wrap {
        rate_control: RateControlParams,
    }
    toml::from_str::<Wrap>(toml_src).map(|w| w.rate_control)
}

#[test]
fn rate_set_walks_its_chain() {
    let r = |m| TxVector::ht(m, ChannelWidth::Mhz20, LGI).unwrap();
    let mut set = RateSet::single(r(7), 3);
    set.entries[1] = Some(RateEntry {
        txv: r(4),
        tries: 2,
        rts: true,
    });
    assert_eq!(set.total_tries(), 5);
    assert_eq!(set.entry_for_attempt(2).unwrap().0, 0);
    assert_eq!(set.entry_for_attempt(3).unwrap().1.txv, r(4));
    assert!(set.entry_for_attempt(5).is_none());
    let rep = set.report(4, 16, 9);
    assert_eq!(rep.tries, [3, 1, 0, 0]);
    assert_eq!(rep.rates, [Some(r(7)), Some(r(4)), None, None]);
    assert!(rep.success);
    let fail = set.report(5, 16, 0);
    assert_eq!(fail.tries, [3, 2, 0, 0]);
    assert!(!fail.success);
    // A report without A-MPDU information counts as one MPDU.
    let single = TxReport {
        ampdu_len: 0,
        ampdu_ack_len: 0,
        success: true,
        ..rep
    };
    assert_eq!(single.lens(), (1, 1));
}

#[test]
fn config_parses_with_defaults_and_rejects_unknown_fields() {
    let p = parse(r#"rate_control = { type = "minstrel_ht" }"#).unwrap();
    assert_eq!(
        p,
        RateControlParams::MinstrelHt(MinstrelHtParams::default())
    );
    let p = parse(r#"rate_control = { type = "minstrel_ht", variant = "legacy", max_rates = 1, max_retry = 7 }"#).unwrap();
    let RateControlParams::MinstrelHt(m) = &p else {
        panic!()
    };
    assert_eq!(
        (m.variant, m.max_rates, m.max_retry, m.update_interval_ms),
        (MinstrelVariant::Legacy, 1, 7, 50)
    );
    let p = parse(
        r#"rate_control = { type = "fixed", mcs = 15, tries = 4, fallback = [{ mcs = 3 }] }"#,
    )
    .unwrap();
    let RateControlParams::Fixed(f) = &p else {
        panic!()
    };
    assert_eq!((f.mcs, f.tries, f.fallback[0].tries), (15, 4, 7));
    let p = parse(r#"rate_control = { type = "thompson", decay_hz = 0.5 }"#).unwrap();
    let RateControlParams::Thompson(t) = &p else {
        panic!()
    };
    assert_eq!(
        (t.decay_hz, t.truncate_counts, t.max_rates, t.tries),
        (0.5, true, 4, 7)
    );
    assert!(parse(r#"rate_control = { type = "minstrel_ht", update_interval = 50 }"#).is_err());
    assert!(parse(r#"rate_control = { type = "fixed", mcs = 7, speed = 1 }"#).is_err());
    assert!(parse(r#"rate_control = { type = "arf" }"#).is_err());
    // Round trip.
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["type"], "thompson");
    assert_eq!(
        serde_json::from_value::<RateControlParams>(json).unwrap(),
        p
    );
}

#[test]
fn schema_names_the_three_types() {
    let schema = serde_json::to_string(&schemars::schema_for!(RateControlParams)).unwrap();
    for word in [
        "minstrel_ht",
        "thompson",
        "fixed",
        "update_interval_ms",
        "decay_hz",
        "legacy",
    ] {
        assert!(schema.contains(word), "{word} missing from {schema}");
    }
}

#[test]
fn validation_names_the_field() {
    let bad = RateControlParams::MinstrelHt(MinstrelHtParams {
        max_rates: 5,
        ..Default::default()
    });
    let err = bad.validate().unwrap_err();
    assert_eq!(err.to_string(), "max_rates: must be in 1..=4");
    let bad = RateControlParams::Thompson(ThompsonParams {
        decay_hz: -1.0,
        ..Default::default()
    });
    assert!(matches!(
        bad.validate(),
        Err(RateControlError::Param {
            field: "decay_hz",
            ..
        })
    ));
    let link = LinkRates {
        supported: vec![],
        band: Band::Ghz5,
        ampdu_len_reported: true,
    };
    let r = RateControlParams::default().build(&link, Rng::derive(1, "x"), SimTime::ZERO);
    assert!(matches!(r, Err(RateControlError::NoRates)));
}

#[test]
fn fixed_resolves_ht_index_width_and_gi() {
    let link = LinkRates::new(
        PhyStandard::Ht,
        ChannelWidth::Mhz40,
        &[LGI, SGI],
        2,
        Band::Ghz5,
    );
    let p = FixedParams {
        mcs: 15,
        tries: 4,
        ..Default::default()
    };
    let mut f = Fixed::new(&p, &link).unwrap();
    let set = f.rate_set(SimTime::ZERO, 1500);
    assert_eq!(
        set.first().txv,
        TxVector::ht(15, ChannelWidth::Mhz40, SGI).unwrap()
    );
    assert_eq!(
        (set.first().tries, set.first().rts, set.probe),
        (4, false, false)
    );
    let p = FixedParams {
        mcs: 7,
        gi_ns: Some(LGI),
        fallback: vec![FixedEntry {
            mcs: 2,
            nss: None,
            tries: 3,
        }],
        ..Default::default()
    };
    let mut f = Fixed::new(&p, &link).unwrap();
    let set = f.rate_set(SimTime::ZERO, 1500);
    assert_eq!(
        set.first().txv,
        TxVector::ht(7, ChannelWidth::Mhz40, LGI).unwrap()
    );
    assert_eq!(set.entries[1].unwrap().txv.mcs, 2);
    f.on_tx_status(ms(1), &set.report(9, 10, 10));
    assert_eq!(f.stats()["rates"][0]["attempts"], 70);
    assert_eq!(f.stats()["rates"][1]["success"], 10);
    let p = FixedParams {
        mcs: 23,
        ..Default::default()
    };
    assert!(matches!(
        Fixed::new(&p, &link),
        Err(RateControlError::Unsupported(_))
    ));
}

#[test]
fn gamma_and_beta_moments() {
    let mut rng = Rng::derive(3, "gamma");
    for shape in [0.5, 1.0, 3.0, 40.0] {
        let n = 40_000;
        let xs: Vec<f64> = (0..n).map(|_| sample_gamma(&mut rng, shape)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            (mean - shape).abs() < 0.05 * shape.max(1.0),
            "shape {shape}: mean {mean}"
        );
        assert!(
            (var - shape).abs() < 0.1 * shape.max(1.0),
            "shape {shape}: var {var}"
        );
    }
    let n = 40_000;
    let m = (0..n).map(|_| sample_beta(&mut rng, 3.0, 7.0)).sum::<f64>() / n as f64;
    assert!((m - 0.3).abs() < 0.01, "{m}");
}

/// Drives a controller on a channel where each MPDU at rate `t` succeeds with `p(t)`.
fn drive_prob(
    c: &mut dyn RateControl,
    rng: &mut Rng,
    from: u64,
    to: u64,
    p: &dyn Fn(&TxVector) -> f64,
) -> Vec<RateSet> {
    let mut out = Vec::new();
    let mut t = from;
    while t < to {
        let set = c.rate_set(ms(t), 1500);
        let len: u16 = if set.probe { 1 } else { 16 };
        let (mut attempts, mut acked) = (0, 0);
        'chain: for e in set.iter() {
            for _ in 0..e.tries {
                attempts += 1;
                acked = (0..len).filter(|_| rng.bernoulli(p(&e.txv))).count() as u16;
                if acked > 0 {
                    break 'chain;
                }
            }
        }
        c.on_tx_status(
            ms(t) + SimDuration::from_ms(2),
            &set.report(attempts, len, acked),
        );
        out.push(set);
        t += 2;
    }
    out
}

fn thompson(p: &ThompsonParams, link: &LinkRates, seed: u64) -> Thompson {
    Thompson::new(p, link, Rng::derive(seed, "sta0/ratectl"), SimTime::ZERO).unwrap()
}

#[test]
fn thompson_candidates_keep_the_short_gi_in_ns3_order() {
    let t = thompson(&ThompsonParams::default(), &ht20(2, &[LGI, SGI]), 1);
    let stats = t.stats();
    let names: Vec<&str> = stats["rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rate"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 16);
    assert_eq!(names[0], "HT20 SGI 1 MCS0");
    assert_eq!(names[8], "HT20 SGI 2 MCS0");
    assert_eq!(names[15], "HT20 SGI 2 MCS7");
}

#[test]
fn thompson_picks_the_best_rate_on_a_static_channel() {
    // Success 100 % up to MCS4, 30 % at MCS5 (0.3·52 < 39), 0 above: best = MCS4.
    let p = |t: &TxVector| match t.mcs {
        0..=4 => 1.0,
        5 => 0.3,
        _ => 0.0,
    };
    for seed in 0..5 {
        let mut c = thompson(&ThompsonParams::default(), &ht20(1, &[LGI]), seed);
        let mut rng = Rng::derive(seed, "channel");
        drive_prob(&mut c, &mut rng, 0, 1000, &p);
        let sets = drive_prob(&mut c, &mut rng, 1000, 5000, &p);
        let best = sets.iter().filter(|s| s.first().txv.mcs == 4).count();
        let share = best as f64 / sets.len() as f64;
        eprintln!(
            "thompson seed {seed}: MCS4 first in {:.1} % of PSDUs",
            100.0 * share
        );
        assert!(share >= 0.9, "seed {seed}: {share}");
    }
}

/// Milliseconds (2 ms per PSDU) until the first window of 50 PSDUs with ≥ 90 % starting at `mcs`.
fn adapted_after(sets: &[RateSet], mcs: u8) -> Option<usize> {
    sets.windows(50)
        .position(|w| w.iter().filter(|s| s.first().txv.mcs == mcs).count() >= 45)
        .map(|i| 2 * i)
}

#[test]
fn thompson_adapts_after_a_change() {
    let mut c = thompson(&ThompsonParams::default(), &ht20(1, &[LGI]), 3);
    let mut rng = Rng::derive(3, "channel");
    let before = |t: &TxVector| if t.mcs <= 6 { 1.0 } else { 0.0 };
    let after = |t: &TxVector| if t.mcs <= 2 { 1.0 } else { 0.0 };
    drive_prob(&mut c, &mut rng, 0, 2000, &before);
    assert_eq!(c.current_rate().mcs, 6);
    // Degradation: MCS6's success count (≈ 16 MPDUs × 500 PSDUs/s ÷ 1 Hz) must be outweighed first.
    let sets = drive_prob(&mut c, &mut rng, 2000, 4000, &after);
    let down = adapted_after(&sets, 2).expect("moves to MCS2");
    // Improvement: with 1 Hz decay the failed rates' counts (MCS6: thousands of failed MPDUs) must fade
    // before they are retried, which takes seconds (ln(10^4) ≈ 9 s for the worst).
    let sets = drive_prob(&mut c, &mut rng, 4000, 16_000, &before);
    let up = adapted_after(&sets, 6).expect("moves back to MCS6");
    eprintln!("thompson: down to MCS2 after {down} ms, back to MCS6 after {up} ms");
    assert!(down <= 1000, "{down}");
    assert!(up <= 10_000, "{up}");
    let tail = &sets[sets.len() - 500..];
    let share = tail.iter().filter(|s| s.first().txv.mcs == 6).count() as f64 / tail.len() as f64;
    assert!(share >= 0.9, "{share}");
}

#[test]
fn thompson_chain_resamples_as_if_earlier_series_failed() {
    let mut c = thompson(&ThompsonParams::default(), &ht20(1, &[LGI]), 2);
    let mut rng = Rng::derive(2, "channel");
    let p = |t: &TxVector| if t.mcs <= 5 { 1.0 } else { 0.0 };
    let sets = drive_prob(&mut c, &mut rng, 0, 3000, &p);
    for s in &sets {
        assert_eq!(s.total_tries(), 7);
        assert!(!s.probe);
        let v: Vec<_> = s.iter().map(|e| e.txv).collect();
        assert!(v.windows(2).all(|w| w[0] != w[1]), "neighbours merge");
    }
    // One series: all tries at the sampled rate (the baselines' minimum-faithful chain).
    let ones = ThompsonParams {
        max_rates: 1,
        ..Default::default()
    };
    let mut c1 = thompson(&ones, &ht20(1, &[LGI]), 2);
    let set = c1.rate_set(SimTime::ZERO, 1500);
    assert_eq!((set.iter().count(), set.first().tries), (1, 7));
}

#[test]
fn thompson_is_deterministic_per_seed() {
    let run = |seed| {
        let mut c = thompson(&ThompsonParams::default(), &ht20(2, &[LGI, SGI]), seed);
        let mut rng = Rng::derive(9, "channel");
        drive_prob(&mut c, &mut rng, 0, 500, &|t: &TxVector| {
            if t.mcs <= 3 {
                0.95
            } else {
                0.2
            }
        })
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn any_rate_control_dispatches() {
    let link = ht20(1, &[LGI]);
    for src in [
        r#"rate_control = { type = "fixed", mcs = 3 }"#,
        r#"rate_control = { type = "minstrel_ht" }"#,
        r#"rate_control = { type = "thompson" }"#,
    ] {
        let mut c = parse(src)
            .unwrap()
            .build(&link, Rng::derive(1, "sta"), SimTime::ZERO)
            .unwrap();
        let set = c.rate_set(SimTime::ZERO, 1500);
        c.on_tx_status(ms(1), &set.report(1, 1, 1));
        assert!(
            c.stats()["rates"].as_array().is_some_and(|r| !r.is_empty()),
            "{src}"
        );
        let _ = c.current_rate();
    }
}
