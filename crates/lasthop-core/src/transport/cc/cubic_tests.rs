//! Cubic script tests (RFC 9438, RFC 9406): slow start, HyStart++, multiplicative decrease, the cubic
//! curve, the Reno-friendly region, fast convergence, timeouts.

use super::testkit::*;
use super::*;

fn cubic(hystart: bool) -> Cubic {
    Cubic::new(
        &CubicParams {
            hystart,
            ..Default::default()
        },
        MSS,
    )
}

/// Grows a Cubic in slow start, ACK-clocked with round trips of `rtt`, to exactly `segs` segments,
/// and loses the oldest segment in flight one round trip later. Returns the time of that loss.
fn grow_and_lose(cc: &mut Cubic, f: &mut Flow, segs: u64, rtt: SimDuration) -> SimTime {
    let mut now = SimTime::ZERO;
    f.fill(cc, now);
    while cc.cwnd() < segs * MSS {
        now += rtt;
        for _ in 0..f.in_flight / MSS {
            if cc.cwnd() >= segs * MSS {
                break;
            }
            f.ack(cc, now, 1, Some(rtt));
            f.fill(cc, now);
        }
    }
    assert_eq!(cc.cwnd(), segs * MSS);
    f.lose(cc, now + rtt, 1);
    now + rtt
}

/// After a loss at `loss`: one round ACKs the rest of the lost window (recovery), the next one's first
/// ACK ends recovery and starts the CA epoch. Returns the epoch's start.
fn recover(cc: &mut Cubic, f: &mut Flow, loss: SimTime, rtt: SimDuration) -> SimTime {
    let now = f.round(cc, loss, rtt);
    assert_eq!(cc.state_name(), "recovery");
    let epoch = f.round(cc, now, rtt);
    assert_eq!(cc.state_name(), "congestion_avoidance");
    epoch
}

/// Full round trips of `rtt` from `now` while they end by `until`; returns the last one's time.
fn rounds_until(
    cc: &mut Cubic,
    f: &mut Flow,
    mut now: SimTime,
    until: SimTime,
    rtt: SimDuration,
) -> SimTime {
    while now + rtt <= until {
        now = f.round(cc, now, rtt);
    }
    now
}

fn segs(cc: &impl CongestionControl) -> f64 {
    cc.cwnd() as f64 / MSS as f64
}

#[test]
fn slow_start_doubles_every_round_trip() {
    let mut cc = cubic(false);
    let mut f = Flow::new();
    let mut now = SimTime::ZERO;
    for want in [20, 40, 80, 160, 320] {
        now = f.round(&mut cc, now, d_ms(40));
        assert_eq!(cc.cwnd(), want * MSS);
        assert_eq!(cc.state_name(), "slow_start");
    }
}

#[test]
fn loss_cuts_to_beta_times_w_max_and_sets_k() {
    let mut cc = cubic(false);
    let mut f = Flow::new();
    grow_and_lose(&mut cc, &mut f, 100, d_ms(100));
    assert_eq!(
        cc.cwnd(),
        (100.0 * MSS as f64 * 0.7) as u64,
        "cwnd = β·W_max"
    );
    assert_eq!(cc.ssthresh(), cc.cwnd());
    assert_eq!(cc.w_max(), 100 * MSS);
    assert_eq!(cc.state_name(), "recovery");
    assert_eq!(
        cc.k(),
        None,
        "the epoch starts with the first ACK in congestion avoidance"
    );
}

#[test]
fn window_follows_the_cubic_curve() {
    // W_max = 100 segments, RTT 100 ms: K = ∛(100·0.3/0.4) = ∛75 ≈ 4.217 s. The Reno-friendly
    // estimate (0.53 segment per RTT from 70) stays below the curve until ≈ 5.7 s, where it reaches
    // cwnd_prior = 100, grows 1 segment per RTT and overtakes the curve's slow start of the convex part.
    let rtt = d_ms(100);
    let mut cc = cubic(false);
    let mut f = Flow::new();
    let loss = grow_and_lose(&mut cc, &mut f, 100, rtt);
    let epoch = recover(&mut cc, &mut f, loss, rtt);
    let mut now = epoch;
    let k = cc.k().expect("epoch running");
    assert!((k - 75f64.cbrt()).abs() < 1e-9, "K = {k}");
    let w = |t: f64| 0.4 * (t - k).powi(3) + 100.0;
    for t_s in [0.5, 1.0, 2.0, 3.0, 4.2, 5.0] {
        now = rounds_until(
            &mut cc,
            &mut f,
            now,
            epoch + SimDuration::from_secs_f64(t_s).unwrap(),
            rtt,
        );
        let t = (now - epoch).as_secs_f64();
        // Per ACK cwnd moves toward W(t + RTT), so after a round it lies between W(t) and W(t + RTT).
        let (lo, hi) = (w(t) - 1.0, w(t + rtt.as_secs_f64()) + 1.0);
        assert!(
            (lo..=hi).contains(&segs(&cc)),
            "t = {t:.2}: {} not in [{lo:.1}, {hi:.1}]",
            segs(&cc)
        );
    }
    // Reno-friendly region from ≈ 5.7 s: W_est ≈ 100 + (t − 5.67 s)/RTT lies above W_cubic(t).
    now = rounds_until(&mut cc, &mut f, now, epoch + SimDuration::from_secs(7), rtt);
    let t = (now - epoch).as_secs_f64();
    assert!(
        segs(&cc) > w(t) + 5.0,
        "t = {t:.2}: {} vs W_cubic {:.1}",
        segs(&cc),
        w(t)
    );
    assert!(
        (segs(&cc) - (100.0 + (t - 5.67) / 0.1)).abs() < 2.0,
        "{}",
        segs(&cc)
    );
    assert_eq!(cc.state_name(), "congestion_avoidance");
}

#[test]
fn plateau_at_w_max_around_k() {
    let rtt = d_ms(100);
    let mut cc = cubic(false);
    let mut f = Flow::new();
    let loss = grow_and_lose(&mut cc, &mut f, 100, rtt);
    let epoch = recover(&mut cc, &mut f, loss, rtt);
    let k = SimDuration::from_secs_f64(cc.k().unwrap()).unwrap();
    rounds_until(&mut cc, &mut f, epoch, epoch + k, rtt);
    assert!(
        (segs(&cc) - 100.0).abs() < 1.0,
        "{} segments at t = K",
        segs(&cc)
    );
}

#[test]
fn reno_friendly_region_on_short_rtts() {
    // W_max = 20 segments, RTT 10 ms: K = ∛15 ≈ 2.47 s, but Reno's estimate grows 100× per second.
    let rtt = d_ms(10);
    for (friendly, lo, hi) in [(true, 85.0, 110.0), (false, 14.0, 20.0)] {
        let mut cc = Cubic::new(
            &CubicParams {
                hystart: false,
                reno_friendly: friendly,
                ..Default::default()
            },
            MSS,
        );
        let mut f = Flow::new();
        let loss = grow_and_lose(&mut cc, &mut f, 20, rtt);
        assert_eq!(cc.cwnd(), 14 * MSS);
        let epoch = recover(&mut cc, &mut f, loss, rtt);
        rounds_until(&mut cc, &mut f, epoch, epoch + d_ms(1000), rtt);
        // W_est: 14 → 20 at α = 9/17 per RTT (≈ 12 RTTs), then +1 per RTT for ≈ 88 RTTs.
        assert!(
            (lo..=hi).contains(&segs(&cc)),
            "reno_friendly {friendly}: {}",
            segs(&cc)
        );
    }
}

#[test]
fn fast_convergence_releases_bandwidth_after_a_lower_peak() {
    for (fc, want_w_max) in [(true, 80.0 * 1.7 / 2.0), (false, 80.0)] {
        let mut cc = Cubic::new(
            &CubicParams {
                hystart: false,
                fast_convergence: fc,
                ..Default::default()
            },
            MSS,
        );
        let mut f = Flow::new();
        let loss = grow_and_lose(&mut cc, &mut f, 100, d_ms(40));
        // A second loss, in a later window, at 80 segments (< W_max = 100).
        let mut now = recover(&mut cc, &mut f, loss, d_ms(40));
        while cc.cwnd() < 80 * MSS {
            now = f.round(&mut cc, now, d_ms(40));
        }
        let at_loss = cc.cwnd();
        f.lose(&mut cc, now + d_ms(40), 1);
        let w_max = at_loss as f64 / MSS as f64 * want_w_max / 80.0;
        assert!(
            (cc.w_max() as f64 / MSS as f64 - w_max).abs() < 0.01,
            "fc {fc}: {}",
            cc.w_max()
        );
        assert_eq!(cc.cwnd(), (at_loss as f64 * 0.7) as u64);
    }
}

#[test]
fn one_reduction_per_window_and_none_while_recovering() {
    let mut cc = cubic(false);
    let mut f = Flow::new();
    let loss = grow_and_lose(&mut cc, &mut f, 100, d_ms(40));
    let cut = cc.cwnd();
    f.lose(&mut cc, loss + d_ms(2), 3);
    assert_eq!(cc.cwnd(), cut, "same window: no second reduction");
    f.drain(&mut cc, loss + d_ms(3), d_ms(40));
    assert_eq!(
        cc.cwnd(),
        cut,
        "no growth on ACKs of data sent before recovery began"
    );
}

#[test]
fn timeout_restarts_from_one_segment_with_k_zero() {
    let mut cc = cubic(false);
    let mut f = Flow::new();
    let mut now = SimTime::ZERO;
    for _ in 0..3 {
        now = f.round(&mut cc, now, d_ms(40));
    }
    cc.on_rto(now + d_ms(300));
    assert_eq!(
        (cc.cwnd(), cc.ssthresh()),
        (MSS, (80.0 * MSS as f64 * 0.7) as u64)
    );
    assert_eq!(cc.state_name(), "loss");
    cc.on_rto(now + d_ms(900));
    assert_eq!(
        cc.ssthresh(),
        (80.0 * MSS as f64 * 0.7) as u64,
        "a backed-off timeout keeps ssthresh"
    );
    let mut f = Flow::new();
    now += d_ms(901);
    while cc.state_name() != "congestion_avoidance" {
        now = f.round(&mut cc, now, d_ms(40));
    }
    assert_eq!(
        cc.k(),
        Some(0.0),
        "RFC 9438 §4.8: K = 0 and W_max = cwnd at the start of CA"
    );
}

#[test]
fn app_limited_acks_do_not_grow_the_window() {
    let mut cc = cubic(false);
    let mut f = Flow::new();
    f.send(&mut cc, SimTime::ZERO, 2);
    cc.on_ack(t_ms(40), &one_ack(2, 0, true));
    assert_eq!(cc.cwnd(), 10 * MSS);
}

#[test]
fn hystart_plus_plus_enters_css_on_an_rtt_rise_then_congestion_avoidance() {
    let mut cc = cubic(true);
    let mut f = Flow::new();
    let base = d_ms(40);
    let mut now = SimTime::ZERO;
    // Two rounds at the base RTT (≥ 8 samples each): plain slow start, capped at L = 8 segments per ACK.
    for want in [20, 40] {
        now = f.round(&mut cc, now, base);
        assert_eq!((cc.cwnd(), cc.state_name()), (want * MSS, "slow_start"));
    }
    // RTT +5 ms = max(4 ms, min(40/8, 16) ms): CSS after 8 samples of the round; growth ÷ 4 after that.
    f.fill(&mut cc, now);
    let n = f.in_flight / MSS;
    now += d_ms(45);
    f.ack_each(&mut cc, now, n, d_ms(45));
    assert_eq!(cc.state_name(), "css");
    assert_eq!(n, 40);
    assert_eq!(
        cc.cwnd(),
        47 * MSS + 33 * (MSS / 4),
        "7 ACKs of slow start; from the 8th sample on ÷4"
    );
    assert_eq!(cc.stats()["css_entries"], 1);
    // Five CSS rounds at the raised RTT, then congestion avoidance with ssthresh = cwnd.
    for _ in 0..4 {
        now = f.round(&mut cc, now, d_ms(45));
        assert_eq!(cc.state_name(), "css");
    }
    f.ack(&mut cc, now + d_ms(45), 1, Some(d_ms(45)));
    assert_eq!(cc.state_name(), "congestion_avoidance");
    assert!(
        cc.ssthresh() <= cc.cwnd() && cc.cwnd() - cc.ssthresh() < MSS,
        "ssthresh = cwnd, then CA"
    );
}

#[test]
fn hystart_plus_plus_returns_to_slow_start_when_the_rise_was_spurious() {
    let mut cc = cubic(true);
    let mut f = Flow::new();
    let mut now = f.round(&mut cc, SimTime::ZERO, d_ms(40));
    now = f.round(&mut cc, now, d_ms(40));
    now = f.round(&mut cc, now, d_ms(50));
    assert_eq!(cc.state_name(), "css");
    // The next round's minimum falls below the CSS baseline (50 ms): back to slow start.
    now = f.round(&mut cc, now, d_ms(41));
    assert_eq!(cc.state_name(), "slow_start");
    let before = cc.cwnd();
    f.round(&mut cc, now, d_ms(41));
    assert!(cc.cwnd() > before * 3 / 2, "full-speed slow start again");
}

#[test]
fn restart_after_idle_does_not_count_idle_time_as_growth() {
    // 0.2 s into an epoch with K ≈ 4.2 s the target is ≈ W(0.3 s) ≈ 76 segments; had the 3 s of idle
    // counted, it would be W(3.3 s) ≈ 99.7 (capped at 1.5 × cwnd).
    let rtt = d_ms(100);
    let mut cc = cubic(false);
    let mut f = Flow::new();
    let loss = grow_and_lose(&mut cc, &mut f, 100, rtt);
    let epoch = recover(&mut cc, &mut f, loss, rtt);
    let now = f.round(&mut cc, epoch, rtt);
    f.drain(&mut cc, now + rtt, rtt);
    let idle_end = now + rtt + SimDuration::from_secs(3);
    f.round(&mut cc, idle_end, rtt);
    assert!((70.0..80.0).contains(&segs(&cc)), "{} segments", segs(&cc));
}
