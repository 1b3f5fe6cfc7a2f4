//! BBR script tests (Linux `tcp_bbr.c`): STARTUP's full-pipe test, DRAIN, ProbeBW gain cycling,
//! PROBE_RTT, the cwnd target, loss recovery and timeouts. ACKs carry hand-made rate samples
//! ([`Samples`]) so that every bandwidth value is exact.

use super::testkit::*;
use super::*;

const RTT: SimDuration = SimDuration::from_ms(40);
const BIG: u64 = 1 << 30;

fn mbps(m: u64) -> BitRate {
    BitRate::from_mbps(m)
}

fn bbr(p: BbrParams, seed: u64) -> Bbr {
    Bbr::new(&p, MSS, SimTime::ZERO, Rng::derive(seed, "test/bbr"))
}

fn no_aggr() -> BbrParams {
    BbrParams {
        ack_aggregation: false,
        ..Default::default()
    }
}

/// One round-ending ACK of 10 segments at `now` with delivery rate `bw`.
fn round(b: &mut Bbr, s: &mut Samples, now: SimTime, bw: BitRate, in_flight: u64) {
    let ev = s.ack(now, bw, 10 * MSS, RTT, (in_flight, in_flight), true);
    b.on_ack(now, &ev);
}

/// STARTUP at 1, 2, 4, 8, 10 Mbit/s, then flat at 12 until DRAIN, then DRAIN until ProbeBW.
/// Returns the time of the last ACK (rounds 40 ms apart).
fn to_probe_bw(b: &mut Bbr, s: &mut Samples) -> SimTime {
    let mut now = SimTime::ZERO;
    for m in [1, 2, 4, 8, 10, 12, 12, 12] {
        now += RTT;
        round(b, s, now, mbps(m), BIG);
    }
    assert_eq!(b.mode(), BbrMode::Drain);
    now += RTT;
    let bdp = b.bdp(1.0);
    round(b, s, now, mbps(12), bdp);
    assert_eq!(b.mode(), BbrMode::ProbeBw);
    now
}

/// Rate samples are bytes over whole nanoseconds, so they come out a hair below the nominal rate.
fn assert_bw(b: &Bbr, m: u64) {
    let got = b.btl_bw().bps() as f64 / (m as f64 * 1e6);
    assert!(
        (got - 1.0).abs() < 1e-5,
        "btl_bw {} vs {m} Mbit/s",
        b.btl_bw()
    );
}

fn rate_of(b: &Bbr) -> f64 {
    b.pacing_rate().unwrap().bps() as f64
}

#[test]
fn startup_exits_after_three_rounds_without_25_percent_growth() {
    let mut b = bbr(no_aggr(), 1);
    let mut s = Samples::new();
    let high = 2.0 / std::f64::consts::LN_2;
    // 10 ≥ 1.25 × 8 still counts as growth; 12 < 1.25 × 10 does not.
    for (i, m) in [1, 2, 4, 8, 10, 12, 12].into_iter().enumerate() {
        round(&mut b, &mut s, t_ms(40 * (i as u64 + 1)), mbps(m), BIG);
        assert_eq!(b.mode(), BbrMode::Startup, "round {}", i + 1);
        assert!(!b.full_bw_reached());
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (high, high));
    }
    assert!(
        (rate_of(&b) / (12e6 * high * 0.99) - 1.0).abs() < 1e-5,
        "pacing = 2.885 × btl_bw × 0.99"
    );
    round(&mut b, &mut s, t_ms(320), mbps(12), BIG);
    assert!(b.full_bw_reached());
    assert_eq!(b.mode(), BbrMode::Drain);
    assert_eq!((b.pacing_gain(), b.cwnd_gain()), (1.0 / high, high));
    assert!(
        (rate_of(&b) / (12e6 / high * 0.99) - 1.0).abs() < 1e-5,
        "drain pacing"
    );
    assert_bw(&b, 12);
    assert_eq!(b.min_rtt(), Some(RTT));
}

#[test]
fn startup_pacing_starts_from_the_initial_window_and_never_falls_before_the_pipe_is_full() {
    let mut b = bbr(no_aggr(), 1);
    let mut s = Samples::new();
    let high = 2.0 / std::f64::consts::LN_2;
    round(&mut b, &mut s, t_ms(40), mbps(1), BIG);
    // bbr_init_pacing_rate_from_rtt: 2.885 × 10 segments / 40 ms; the 1 Mbit/s sample is lower.
    let init = (10 * MSS * 8) as f64 / 0.040 * high * 0.99;
    assert!(
        (rate_of(&b) / init - 1.0).abs() < 1e-6,
        "{} vs {init}",
        rate_of(&b)
    );
    round(&mut b, &mut s, t_ms(80), mbps(2), BIG);
    assert!((rate_of(&b) / init - 1.0).abs() < 1e-6);
}

#[test]
fn drain_lasts_until_inflight_is_down_to_the_bdp() {
    let mut b = bbr(no_aggr(), 1);
    let mut s = Samples::new();
    for (i, m) in [1, 2, 4, 8, 10, 12, 12, 12].into_iter().enumerate() {
        round(&mut b, &mut s, t_ms(40 * (i as u64 + 1)), mbps(m), BIG);
    }
    // BDP = 12 Mbit/s × 40 ms = 60 000 bytes = 41.4 → 42 segments.
    assert_eq!(b.bdp(1.0), 42 * MSS);
    let bdp = b.bdp(1.0);
    round(&mut b, &mut s, t_ms(360), mbps(12), 3 * bdp);
    assert_eq!(b.mode(), BbrMode::Drain);
    round(&mut b, &mut s, t_ms(400), mbps(12), bdp);
    assert_eq!(b.mode(), BbrMode::ProbeBw);
    assert_ne!(b.cycle_idx(), 1, "never starts in the draining phase");
    assert_eq!(b.cwnd_gain(), 2.0);
}

#[test]
fn probe_bw_cycles_gains_each_min_rtt_and_paces_at_gain_times_btl_bw() {
    let p = no_aggr();
    let mut b = bbr(p.clone(), 3);
    let mut s = Samples::new();
    let mut now = to_probe_bw(&mut b, &mut s);
    let first = b.cycle_idx();
    let mut seen = vec![(b.cycle_idx(), now)];
    // ACKs every 10 ms with plenty in flight: each phase lasts until just over min_rtt (40 ms).
    while seen.len() < 10 {
        now += d_ms(10);
        let ev = s.ack(now, mbps(12), MSS, RTT, (BIG, BIG), true);
        b.on_ack(now, &ev);
        let gain = p.pacing_gain_cycle[b.cycle_idx()];
        assert_eq!(b.pacing_gain(), gain);
        assert!(
            (rate_of(&b) / (12e6 * gain * 0.99) - 1.0).abs() < 1e-5,
            "gain {gain}"
        );
        if b.cycle_idx() != seen.last().unwrap().0 {
            seen.push((b.cycle_idx(), now));
        }
    }
    for (i, w) in seen.windows(2).enumerate() {
        assert_eq!(w[1].0, (first + i + 1) % 8, "phases in order");
        assert_eq!(
            w[1].1 - w[0].1,
            d_ms(50),
            "first ACK more than min_rtt after the phase began"
        );
    }
}

#[test]
fn probe_bw_phase_exits_depend_on_inflight_and_losses() {
    // Find a seed whose ProbeBW starts in phase 0 (gain 1.25).
    let seed = (0..100)
        .find(|&seed| {
            let mut b = bbr(no_aggr(), seed);
            to_probe_bw(&mut b, &mut Samples::new());
            b.cycle_idx() == 0
        })
        .expect("phase 0 is one of seven equally likely starts");
    let mut b = bbr(no_aggr(), seed);
    let mut s = Samples::new();
    let now = to_probe_bw(&mut b, &mut s);
    let bdp = b.bdp(1.0);
    // 1.25: after min_rtt, stays while inflight < 1.25 × BDP and nothing is lost…
    let ev = s.ack(now + d_ms(50), mbps(12), MSS, RTT, (bdp, bdp), true);
    b.on_ack(now + d_ms(50), &ev);
    assert_eq!(b.cycle_idx(), 0);
    // …and ends at the first loss.
    b.on_loss(
        now + d_ms(55),
        &LossEvent {
            bytes_lost: MSS,
            largest_lost_sent: now,
        },
    );
    let ev = s.ack(now + d_ms(55), mbps(12), MSS, RTT, (bdp, bdp), true);
    b.on_ack(now + d_ms(55), &ev);
    assert_eq!(b.cycle_idx(), 1);
    // 0.75: ends as soon as inflight is down to the BDP, before min_rtt.
    let ev = s.ack(now + d_ms(60), mbps(12), MSS, RTT, (bdp, bdp), true);
    b.on_ack(now + d_ms(60), &ev);
    assert_eq!(b.cycle_idx(), 2);
}

#[test]
fn probe_bw_never_starts_in_the_draining_phase() {
    let mut starts = [0u32; 8];
    for seed in 0..280 {
        let mut b = bbr(no_aggr(), seed);
        to_probe_bw(&mut b, &mut Samples::new());
        starts[b.cycle_idx()] += 1;
    }
    assert_eq!(starts[1], 0);
    assert!(
        starts.iter().enumerate().all(|(i, &n)| i == 1 || n > 15),
        "{starts:?}"
    );
}

#[test]
fn cwnd_converges_to_two_bdp_plus_the_quantisation_budget() {
    for budget in [false, true] {
        let mut b = bbr(
            BbrParams {
                quantization_budget: budget,
                ..no_aggr()
            },
            5,
        );
        let mut s = Samples::new();
        let mut now = to_probe_bw(&mut b, &mut s);
        for _ in 0..100 {
            now += d_ms(10);
            let ev = s.ack(now, mbps(12), MSS, RTT, (BIG, BIG), false);
            b.on_ack(now, &ev);
        }
        let two_bdp = b.bdp(2.0) / MSS;
        assert_eq!(two_bdp, 83, "ceil(2 × 60 000 / 1448)");
        let extra = if b.cycle_idx() == 0 { 2 } else { 0 };
        // Budget: 3 × tso_segs_goal (2 segments at ≥ 1.2 Mbit/s) = 6, rounded up to even: 89 → 90.
        let want = if budget { 90 + extra } else { two_bdp + extra };
        assert_eq!(
            b.cwnd(),
            want * MSS,
            "budget {budget}, cycle {}",
            b.cycle_idx()
        );
    }
}

#[test]
fn probe_rtt_after_ten_seconds_without_a_lower_rtt() {
    let mut b = bbr(no_aggr(), 2);
    let mut s = Samples::new();
    let mut now = to_probe_bw(&mut b, &mut s);
    let stamp = now;
    let higher = d_ms(45);
    let flight = 80 * MSS;
    // RTT samples above min_rtt (40 ms, last seen at `stamp`) for 10 s: no PROBE_RTT yet.
    while now + d_ms(20) <= stamp + SimDuration::from_secs(10) {
        now += d_ms(20);
        let ev = s.ack(now, mbps(12), MSS, higher, (flight, flight), true);
        b.on_ack(now, &ev);
        assert_eq!(b.mode(), BbrMode::ProbeBw, "{now}");
    }
    let prior = b.cwnd();
    now += d_ms(20);
    let ev = s.ack(now, mbps(12), MSS, higher, (flight, flight), true);
    b.on_ack(now, &ev);
    assert_eq!(b.mode(), BbrMode::ProbeRtt);
    assert_eq!(
        b.min_rtt(),
        Some(higher),
        "the expired filter takes the current sample"
    );
    assert_eq!(b.cwnd(), 4 * MSS);
    assert_eq!((b.pacing_gain(), b.cwnd_gain()), (1.0, 1.0));
    // Inflight falls to 4 packets at `low`: PROBE_RTT lasts 200 ms from then and at least a round.
    // Its slow samples (1 Mbit/s) are app-limited and leave btl_bw alone.
    let low = now + d_ms(20);
    let mut t = low;
    while t <= low + d_ms(200) {
        let ev = s.ack(t, mbps(1), MSS, d_ms(40), (4 * MSS, 4 * MSS), true);
        b.on_ack(t, &ev);
        assert_eq!(b.mode(), BbrMode::ProbeRtt, "{t}");
        assert_eq!(b.cwnd(), 4 * MSS);
        t += d_ms(10);
    }
    assert_bw(&b, 12); // PROBE_RTT's 1 Mbit/s samples are app-limited
    let ev = s.ack(t, mbps(1), MSS, d_ms(40), (4 * MSS, 4 * MSS), true);
    b.on_ack(t, &ev);
    assert_eq!(b.mode(), BbrMode::ProbeBw, "pipe was full: back to ProbeBW");
    assert!(
        b.cwnd() >= b.bdp(2.0),
        "cwnd restored toward {prior}: {}",
        b.cwnd()
    );
    assert_eq!(b.min_rtt(), Some(d_ms(40)));
    assert_eq!(b.stats()["probe_rtt_count"], 1);
}

#[test]
fn recovery_conserves_packets_for_a_round_then_restores_cwnd() {
    let mut b = bbr(no_aggr(), 4);
    let mut s = Samples::new();
    let mut now = to_probe_bw(&mut b, &mut s);
    for _ in 0..50 {
        now += d_ms(10);
        let ev = s.ack(now, mbps(12), MSS, RTT, (BIG, BIG), false);
        b.on_ack(now, &ev);
    }
    let before = b.cwnd();
    let loss_at = now + d_ms(5);
    b.on_loss(
        loss_at,
        &LossEvent {
            bytes_lost: 3 * MSS,
            largest_lost_sent: now,
        },
    );
    assert_eq!(b.cwnd(), before, "the window changes on the next ACK");
    // First ACK in recovery: cwnd = inflight + acked (packet conservation).
    let inflight = 30 * MSS;
    let ev = s.ack(
        loss_at,
        mbps(12),
        MSS,
        RTT,
        (inflight + 4 * MSS, inflight),
        false,
    );
    b.on_ack(loss_at, &ev);
    assert_eq!(b.cwnd(), inflight + MSS);
    assert_eq!(b.stats()["ca_state"], "recovery");
    // Still conserving in the same round: cwnd ≥ inflight + acked, no growth beyond it.
    let ev = s.ack(
        loss_at + d_ms(1),
        mbps(12),
        MSS,
        RTT,
        (inflight + MSS, inflight + MSS),
        false,
    );
    b.on_ack(loss_at + d_ms(1), &ev);
    assert_eq!(b.cwnd(), inflight + 2 * MSS);
    // An ACK of data sent after recovery began ends it: the saved cwnd comes back.
    let after = loss_at + RTT + d_ms(2);
    let ev = s.ack(after, mbps(12), MSS, RTT, (inflight, inflight), true);
    b.on_ack(after, &ev);
    assert_eq!(b.stats()["ca_state"], "open");
    assert!(
        b.cwnd() >= before.min(b.bdp(2.0)),
        "{} vs {before}",
        b.cwnd()
    );
}

#[test]
fn timeout_drops_to_one_segment_and_restores_on_the_first_new_ack() {
    let mut b = bbr(no_aggr(), 4);
    let mut s = Samples::new();
    let now = to_probe_bw(&mut b, &mut s);
    let before = b.cwnd();
    b.on_rto(now + d_ms(300));
    assert_eq!(b.cwnd(), MSS);
    assert_eq!(b.stats()["ca_state"], "loss");
    let t = now + d_ms(300) + RTT + d_ms(1);
    let ev = s.ack(t, mbps(12), MSS, RTT, (0, 0), true);
    b.on_ack(t, &ev);
    assert_eq!(b.stats()["ca_state"], "open");
    assert!(
        b.cwnd() >= before.min(b.bdp(2.0)),
        "{} < {before}",
        b.cwnd()
    );
    assert_bw(&b, 12); // a timeout does not forget the bandwidth
}
