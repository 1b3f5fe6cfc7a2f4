//! Tests shared by all controllers: configuration, dispatch, the delivery-rate estimator, recovery
//! episodes and NewReno.

use super::testkit::*;
use super::*;

fn parse(toml_src: &str) -> Result<CcParams, String> {
    #[derive(Deserialize)]
    struct Doc {
        cc: CcParams,
    }
    toml::from_str::<Doc>(toml_src)
        .map(|d| d.cc)
        .map_err(|e| e.to_string())
}

#[test]
fn config_tables_select_the_controller_and_default_every_field() {
    assert_eq!(
        parse("cc = { type = \"newreno\" }"),
        Ok(CcParams::NewReno(Default::default()))
    );
    assert_eq!(
        parse("cc = { type = \"cubic\" }"),
        Ok(CcParams::Cubic(Default::default()))
    );
    assert_eq!(
        parse("cc = { type = \"bbr\" }"),
        Ok(CcParams::Bbr(Default::default()))
    );
    assert_eq!(
        parse("cc = { type = \"copa\" }"),
        Ok(CcParams::Copa(Default::default()))
    );
    let c = parse("cc = { type = \"copa\", delta = 0.02, queue_delay = \"latest\" }").unwrap();
    let want = CopaParams {
        delta: 0.02,
        queue_delay: QueueDelaySignal::Latest,
        ..Default::default()
    };
    assert_eq!(c, CcParams::Copa(want));
    let b =
        parse("cc = { type = \"bbr\", pacing_gain_cycle = [1.5, 0.5, 1, 1], probe_rtt_ms = 100 }");
    let CcParams::Bbr(b) = b.unwrap() else {
        panic!()
    };
    assert_eq!(
        (b.pacing_gain_cycle, b.probe_rtt_ms, b.cwnd_gain),
        (vec![1.5, 0.5, 1.0, 1.0], 100, 2.0)
    );
    assert_eq!(CcParams::default(), CcParams::Cubic(CubicParams::default()));
}

#[test]
fn config_rejects_unknown_types_fields_and_ranges() {
    assert!(parse("cc = { type = \"vegas\" }")
        .unwrap_err()
        .contains("unknown variant"));
    assert!(parse("cc = { type = \"cubic\", betta = 0.7 }")
        .unwrap_err()
        .contains("unknown field"));
    let bad = [
        ("cc = { type = \"cubic\", beta = 1.0 }", "beta"),
        ("cc = { type = \"cubic\", c = 0 }", "c"),
        (
            "cc = { type = \"bbr\", pacing_gain_cycle = [1.25] }",
            "pacing_gain_cycle",
        ),
        (
            "cc = { type = \"bbr\", full_bw_threshold = 0.9 }",
            "full_bw_threshold",
        ),
        ("cc = { type = \"copa\", delta = 0 }", "delta"),
        (
            "cc = { type = \"newreno\", initial_window = 0 }",
            "initial_window",
        ),
    ];
    for (src, field) in bad {
        let p = parse(src).unwrap();
        assert_eq!(p.validate().map_err(|e| e.field), Err(field), "{src}");
        assert!(p.build(MSS, SimTime::ZERO, Rng::derive(0, "x")).is_err());
    }
}

#[test]
fn defaults_are_the_sources_values() {
    let c = CubicParams::default();
    assert_eq!(
        (c.beta, c.c, c.fast_convergence, c.hystart, c.initial_window),
        (0.7, 0.4, true, true, 10)
    );
    let b = BbrParams::default();
    assert!((b.high_gain - 2.885).abs() < 1e-3 && (b.drain_gain * b.high_gain - 1.0).abs() < 1e-12);
    assert_eq!(
        b.pacing_gain_cycle,
        [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    );
    assert_eq!(
        (
            b.bw_window_rounds,
            b.min_rtt_window_ms,
            b.probe_rtt_ms,
            b.cwnd_min_target
        ),
        (10, 10_000, 200, 4)
    );
    assert_eq!(
        (
            b.full_bw_threshold,
            b.full_bw_rounds,
            b.pacing_margin_percent
        ),
        (1.25, 3, 1)
    );
    let p = CopaParams::default();
    assert_eq!(
        (p.delta, p.queue_delay, p.min_rtt_window_ms),
        (0.5, QueueDelaySignal::Standing, 10_000)
    );
}

#[test]
fn schema_lists_the_four_tags() {
    let schema = serde_json::to_string(&schemars::schema_for!(CcParams)).unwrap();
    for tag in ["\"newreno\"", "\"cubic\"", "\"bbr\"", "\"copa\""] {
        assert!(schema.contains(tag), "{tag} missing");
    }
}

#[test]
fn every_controller_starts_with_ten_segments_and_reports_stats() {
    for p in [
        CcParams::NewReno(Default::default()),
        CcParams::Cubic(Default::default()),
        CcParams::Bbr(Default::default()),
        CcParams::Copa(Default::default()),
    ] {
        let cc = build(p.clone());
        assert_eq!(cc.cwnd(), 10 * MSS, "{p:?}");
        assert_eq!(cc.stats()["cwnd"], 10 * MSS, "{}", cc.stats());
    }
    assert_eq!(
        build(CcParams::Cubic(Default::default())).pacing_rate(),
        None
    );
    assert_eq!(
        build(CcParams::Copa(Default::default())).pacing_rate(),
        None,
        "no RTT yet"
    );
    // BBR: high_gain × initial window / 1 ms (no RTT yet), 1 % below (bbr_init_pacing_rate_from_rtt).
    let bbr = build(CcParams::Bbr(Default::default()))
        .pacing_rate()
        .unwrap()
        .bps() as f64;
    let want = 2.0 / std::f64::consts::LN_2 * (10 * MSS * 8) as f64 / 1e-3 * 0.99;
    assert!((bbr / want - 1.0).abs() < 1e-6, "{bbr} vs {want}");
}

#[test]
fn delivery_rate_is_the_bottleneck_rate_of_a_steady_flight() {
    // Ten segments sent at once, ACKed 1 ms apart from t = 40 ms (a 11.584 Mbit/s bottleneck).
    let mut est = DeliveryRateEstimator::new(SimTime::ZERO);
    let pkts: Vec<_> = (0..10)
        .map(|i| est.on_sent(SimTime::ZERO, i * MSS))
        .collect();
    let mut last = None;
    for (i, p) in pkts.into_iter().enumerate() {
        last = est.on_ack(t_ms(40 + i as u64), [(p, MSS)], None);
    }
    let rs = last.unwrap();
    assert_eq!(
        (rs.delivered_total, rs.prior_delivered, rs.delivered),
        (10 * MSS, 0, 10 * MSS)
    );
    assert_eq!(
        rs.interval,
        Some(d_ms(49)),
        "ack_elapsed (49 ms) beats send_elapsed (0)"
    );
    // The next flight, sent at 49 ms as one burst, measures the ACK spacing only.
    let p = est.on_sent(t_ms(49), 0);
    assert_eq!((p.delivered, p.first_sent_time), (10 * MSS, t_ms(49)));
    let rs = est.on_ack(t_ms(89), [(p, MSS)], Some(d_ms(40))).unwrap();
    assert_eq!((rs.delivered, rs.interval), (MSS, Some(d_ms(40))));
    assert_eq!(rs.delivery_rate(), Some(BitRate::from_bps(MSS * 8 * 25)));
    // An interval shorter than the min RTT is not a valid sample (tcp_rate_gen).
    let p = est.on_sent(t_ms(89), 0);
    assert_eq!(
        est.on_ack(t_ms(90), [(p, MSS)], Some(d_ms(40)))
            .unwrap()
            .interval,
        None
    );
}

#[test]
fn app_limited_marks_last_until_the_flight_is_delivered() {
    let mut est = DeliveryRateEstimator::new(SimTime::ZERO);
    let a = est.on_sent(SimTime::ZERO, 0);
    est.on_app_limited(MSS);
    let b = est.on_sent(t_ms(1), MSS);
    assert!(!a.is_app_limited && b.is_app_limited);
    let rs = est.on_ack(t_ms(40), [(a, MSS)], None).unwrap();
    assert!(!rs.is_app_limited);
    let c = est.on_sent(t_ms(40), MSS);
    assert!(
        c.is_app_limited,
        "delivered (1 MSS) has not passed the mark (1 MSS) yet"
    );
    assert!(
        est.on_ack(t_ms(41), [(b, MSS)], None)
            .unwrap()
            .is_app_limited
    );
    assert!(!est.on_sent(t_ms(41), MSS).is_app_limited, "bubble over");
}

#[test]
fn one_reduction_per_round_trip() {
    let mut r = Recovery::default();
    assert!(r.on_loss(t_ms(100), t_ms(50)));
    assert!(
        !r.on_loss(t_ms(101), t_ms(60)),
        "sent before the episode began"
    );
    assert_eq!(r.state(), CaState::Recovery);
    assert!(!r.on_ack(t_ms(100)), "data sent when recovery began");
    assert!(r.on_ack(t_ms(101)), "data sent after it");
    assert_eq!(r.state(), CaState::Open);
    assert!(!r.on_loss(t_ms(150), t_ms(99)), "still from the old window");
    assert!(r.on_loss(t_ms(150), t_ms(120)));
    assert!(
        r.on_rto(t_ms(200)) && !r.on_rto(t_ms(600)),
        "a backed-off RTO does not reduce again"
    );
    assert_eq!(r.state(), CaState::Loss);
}

#[test]
fn newreno_slow_start_then_one_segment_per_window() {
    let mut cc = NewReno::new(&NewRenoParams::default(), MSS);
    let mut f = Flow::new();
    let mut now = SimTime::ZERO;
    for want in [20, 40, 80] {
        now = f.round(&mut cc, now, d_ms(40));
        assert_eq!(cc.cwnd(), want * MSS);
    }
    f.fill(&mut cc, now);
    f.lose(&mut cc, now + d_ms(40), 1);
    f.lose(&mut cc, now + d_ms(41), 1);
    assert_eq!(
        (cc.cwnd(), cc.ssthresh()),
        (40 * MSS, 40 * MSS),
        "one halving for the window"
    );
    let n = f.in_flight / MSS;
    f.ack_each(&mut cc, now + d_ms(41), n, d_ms(40));
    assert_eq!(cc.cwnd(), 40 * MSS, "no growth in recovery");
    now += d_ms(41);
    now = f.round(&mut cc, now, d_ms(40));
    assert_eq!(
        cc.cwnd(),
        41 * MSS,
        "recovery ended with the first ACK of new data; +1 MSS per window"
    );
    f.round(&mut cc, now, d_ms(40));
    assert_eq!(cc.cwnd(), 42 * MSS);
    cc.on_rto(t_ms(5_000));
    assert_eq!((cc.cwnd(), cc.ssthresh()), (MSS, 21 * MSS));
}

#[test]
fn linux_pacing_ratio_is_two_in_slow_start_and_1_2_after() {
    let r = linux_pacing_rate(100 * MSS, u64::MAX, Some(d_ms(100))).unwrap();
    assert_eq!(r.bps(), 100 * MSS * 8 * 10 * 2);
    let r = linux_pacing_rate(100 * MSS, 150 * MSS, Some(d_ms(100))).unwrap();
    assert_eq!(r.bps(), 100 * MSS * 8 * 10 * 6 / 5);
    assert_eq!(linux_pacing_rate(100 * MSS, 150 * MSS, None), None);
    let mut cc = Cubic::new(
        &CubicParams {
            pacing: true,
            ..Default::default()
        },
        MSS,
    );
    assert_eq!(cc.pacing_rate(), None, "no srtt yet");
    Flow::new().round(&mut cc, SimTime::ZERO, d_ms(40));
    assert_eq!(cc.pacing_rate().unwrap().bps(), 20 * MSS * 8 * 25 * 2);
}

#[test]
fn cube_root_without_libm() {
    for x in [75.0, 15.0, 1e-9, 0.5, 3.0e12, -8.0, 0.0] {
        let r = cubic::cbrt(x);
        assert!(
            (r - f64::cbrt(x)).abs() <= 1e-12 * f64::cbrt(x).abs().max(1.0),
            "{x}: {r}"
        );
    }
}
