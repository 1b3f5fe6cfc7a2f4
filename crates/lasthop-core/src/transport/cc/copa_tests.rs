//! Copa script tests (NSDI'18 §2.1, mvfst): the target rate 1/(δ·d_q), slow start and its exit, the
//! v/δ-per-window steps, velocity doubling and resets, convergence toward the target, the queue-delay
//! signal, pacing, loss and timeouts.

use super::testkit::*;
use super::*;

fn copa() -> Copa {
    Copa::new(&CopaParams::default(), MSS)
}

fn segs(cc: &impl CongestionControl) -> f64 {
    cc.cwnd() as f64 / MSS as f64
}

/// Slow start at a 40 ms RTT (no queueing delay) up to 80 segments; returns the time of the last round.
fn slow_start_to_80(cc: &mut Copa, f: &mut Flow) -> SimTime {
    let mut now = SimTime::ZERO;
    for want in [20, 40, 80] {
        now = f.round(cc, now, d_ms(40));
        assert_eq!(cc.cwnd(), want * MSS);
        assert!(cc.in_slow_start());
    }
    now
}

#[test]
fn target_rate_is_one_packet_per_delta_times_queueing_delay() {
    let mut cc = copa();
    let mut s = Samples::new();
    cc.on_ack(
        t_ms(40),
        &s.ack(
            t_ms(40),
            BitRate::from_mbps(10),
            MSS,
            d_ms(40),
            (MSS, 0),
            true,
        ),
    );
    assert_eq!(cc.target_rate(), None, "d_q = 0: λ_t is infinite");
    // 60 ms later the 40 ms sample has left the srtt/2 ≈ 20 ms standing window: RTTstanding = 41 ms.
    cc.on_ack(
        t_ms(100),
        &s.ack(
            t_ms(100),
            BitRate::from_mbps(10),
            MSS,
            d_ms(41),
            (MSS, 0),
            true,
        ),
    );
    assert_eq!(cc.rtt_min(), Some(d_ms(40)));
    assert_eq!(cc.rtt_standing(), Some(d_ms(41)));
    assert_eq!(cc.queue_delay(), d_ms(1));
    // λ_t = 1 / (0.5 × 1 ms) = 2000 packets/s = 23.168 Mbit/s of 1448-byte packets.
    assert_eq!(cc.target_rate(), Some(BitRate::from_bps(23_168_000)));
}

#[test]
fn slow_start_doubles_each_rtt_until_the_first_decrease() {
    let mut cc = copa();
    let mut f = Flow::new();
    let now = slow_start_to_80(&mut cc, &mut f);
    // 2 ms of queueing: λ = 80 × 1448 B / 42 ms = 22 Mbit/s > λ_t = 11.6 Mbit/s, so decrease.
    f.round(&mut cc, now, d_ms(42));
    assert!(!cc.in_slow_start());
    assert_eq!(cc.stats()["mode"], "default");
    // One window of decreases at v = 1 removes about v/δ = 2 packets.
    assert!((segs(&cc) - 78.0).abs() < 0.1, "{}", segs(&cc));
}

#[test]
fn velocity_doubles_after_three_windows_in_one_direction_and_resets_on_a_turn() {
    let mut cc = copa();
    let mut f = Flow::new();
    let mut now = slow_start_to_80(&mut cc, &mut f);
    let mut vs = Vec::new();
    let mut cwnds = vec![segs(&cc)];
    // 4 ms of queueing: λ_t = 500 packets/s, a window of 22 packets, far below: seven windows down.
    for _ in 0..7 {
        now = f.round(&mut cc, now, d_ms(44));
        vs.push(cc.velocity());
        cwnds.push(segs(&cc));
    }
    // Window 1 records cwnd; 2 sets the direction (down); 3, 4 agree; from 5 on v doubles each window.
    assert_eq!(vs, [1, 1, 1, 1, 2, 4, 8]);
    assert_eq!(cc.direction(), Some(copa::Direction::Down));
    // Each window moves cwnd by about v/δ packets (more once v/δ is a sizeable part of cwnd, since the
    // per-ACK step v/(δ·cwnd) grows as cwnd shrinks).
    for (w, pair) in cwnds.windows(2).enumerate().take(6) {
        let step = pair[0] - pair[1];
        let want = 2.0 * vs[w] as f64;
        assert!(
            (step - want).abs() < 0.1 * want,
            "window {w}: −{step:.2} packets, want ≈ v/δ = {want}"
        );
    }
    // The queue empties (d_q = 0): the first ACK that calls for an increase resets v at once, and its
    // step is the new velocity's 1/(δ·cwnd) packets, not the old 8/(δ·cwnd).
    let before = segs(&cc);
    f.ack(&mut cc, now + d_ms(40), 1, Some(d_ms(40)));
    assert_eq!(
        (cc.velocity(), cc.direction()),
        (1, Some(copa::Direction::Up))
    );
    let grew = segs(&cc) - before;
    assert!((grew - 1.0 / (0.5 * before)).abs() < 0.02 / (0.5 * before), "grew {grew:.6} packets from {before:.4}");
}

#[test]
fn window_settles_around_the_target_rate() {
    // A constant 2 ms of queueing delay: λ_t = 1/(0.5 × 2 ms) = 1000 packets/s, i.e. a window of
    // 1000 × 42 ms = 42 packets. Copa steps toward it and then oscillates by a few packets.
    let mut cc = copa();
    let mut f = Flow::new();
    let mut now = slow_start_to_80(&mut cc, &mut f);
    let mut tail = Vec::new();
    for i in 0..200 {
        now = f.round(&mut cc, now, d_ms(42));
        if i >= 150 {
            tail.push(segs(&cc));
        }
    }
    let mean = tail.iter().sum::<f64>() / tail.len() as f64;
    let (lo, hi) = tail
        .iter()
        .fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
    assert!((mean - 42.0).abs() < 2.0, "mean {mean:.1}");
    assert!(lo > 36.0 && hi < 48.0, "range {lo:.1}..{hi:.1}");
}

#[test]
fn queue_delay_from_the_standing_rtt_or_the_latest_sample() {
    for (signal, want) in [
        (QueueDelaySignal::Standing, d_ms(1)),
        (QueueDelaySignal::Latest, d_ms(10)),
    ] {
        let mut cc = Copa::new(
            &CopaParams {
                queue_delay: signal,
                ..Default::default()
            },
            MSS,
        );
        let mut s = Samples::new();
        for (t, rtt) in [(40, 40), (100, 41), (105, 50)] {
            cc.on_ack(
                t_ms(t),
                &s.ack(
                    t_ms(t),
                    BitRate::from_mbps(10),
                    MSS,
                    d_ms(rtt),
                    (MSS, 0),
                    true,
                ),
            );
        }
        assert_eq!(cc.rtt_standing(), Some(d_ms(41)));
        assert_eq!(cc.queue_delay(), want, "{signal:?}");
    }
}

#[test]
fn paces_at_twice_the_window_per_standing_rtt() {
    let mut cc = copa();
    let mut f = Flow::new();
    f.round(&mut cc, SimTime::ZERO, d_ms(40));
    let want = 2 * cc.cwnd() * 8 * 25;
    assert_eq!(cc.pacing_rate(), Some(BitRate::from_bps(want)));
}

#[test]
fn loss_is_ignored_and_a_timeout_resets_to_the_minimum_window() {
    let mut cc = copa();
    let mut f = Flow::new();
    let now = slow_start_to_80(&mut cc, &mut f);
    f.lose(&mut cc, now + d_ms(40), 5);
    assert_eq!(cc.cwnd(), 80 * MSS);
    assert_eq!(cc.stats()["losses"], 5);
    cc.on_rto(now + d_ms(500));
    assert_eq!((cc.cwnd(), cc.velocity()), (4 * MSS, 1));
}

#[test]
fn the_window_grows_only_while_in_use() {
    // At 80 segments, ACKs of rounds with ≤ 40 segments in flight leave it; 41 in flight grow it.
    let mut cc = copa();
    let mut f = Flow::new();
    let now = slow_start_to_80(&mut cc, &mut f);
    // Rounds far past the slow-start flow's, one per ACK.
    let ev = |i: u64, in_flight: u64| one_ack(in_flight, 1_000_000 + i, true);
    // After two of these rounds, the slow-start rounds' in-flight no longer counts.
    cc.on_ack(now, &ev(0, 40));
    cc.on_ack(now, &ev(1, 40));
    let before = cc.cwnd();
    for i in 2..100 {
        cc.on_ack(now + d_ms(i), &ev(i, 40));
    }
    assert_eq!(cc.cwnd(), before);
    cc.on_ack(now + d_ms(100), &ev(100, 41));
    assert!(cc.cwnd() > before);
}
