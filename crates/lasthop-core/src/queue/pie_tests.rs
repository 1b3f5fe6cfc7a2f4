//! Script tests of PIE: updates driven at chosen instants, probabilities checked against the
//! RFC 8033 / Linux formulas, drop decisions counted.

use super::*;

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

fn pkt(id: u64, size: u32) -> Packet {
    Packet { id, flow: 0, seq: id, size, src: 0, dst: 1, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

fn pie(params: PieParams) -> Pie {
    Pie::new(params, Rng::derive(5, "test/pie"))
}

fn prob(p: f64) -> u64 {
    (p * MAX_PROB as f64) as u64
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1e-12)
}

/// Fills `q` with `n` packets of 1000 B at `t` (during the burst allowance: none is dropped).
fn fill(q: &mut Pie, n: u64, t: SimTime) {
    for i in 0..n {
        q.enqueue(t, pkt(i, 1000)).unwrap();
    }
}

#[test]
fn defaults_match_pie_params_init() {
    let p = PieParams::default();
    assert_eq!((p.target(), p.tupdate(), p.limit, p.alpha, p.beta, p.ecn), (SimDuration::from_ms(15), SimDuration::from_ms(15), 1000, 2, 20, false));
    assert_eq!(p.max_burst(), SimDuration::from_ms(150));
    assert!(p.validate().is_ok());
    assert!(PieParams { tupdate_us: 0, ..p }.validate().is_err());
    assert!(PieParams { alpha: 33, ..p }.validate().is_err());
    assert_eq!(serde_json::from_str::<PieParams>(r#"{"target_us": 20000}"#).unwrap(), PieParams { target_us: 20_000, ..p });
}

#[test]
fn wakeups_start_500_ms_after_creation_then_every_tupdate() {
    let mut q = pie(PieParams::default());
    assert_eq!(q.next_wakeup(), None, "an empty PIE at rest needs no timer");
    fill(&mut q, 1, ms(10));
    assert_eq!(q.next_wakeup(), Some(ms(500)));
    q.advance_to(ms(499));
    assert_eq!(q.pie_stats().updates, 0);
    q.advance_to(ms(500));
    assert_eq!((q.pie_stats().updates, q.next_wakeup()), (1, Some(ms(515))));
    q.advance_to(ms(560));
    assert_eq!((q.pie_stats().updates, q.next_wakeup()), (5, Some(ms(575))), "515, 530, 545, 560");
}

/// Delay 100 ms (one dequeue at 100 ms of packets queued at 0), p = 0: the first update scales α and
/// β by 1/2048 (p < 1e-6); the second, at p ≈ 6.6e-5, by 1/128.
#[test]
fn probability_updates_follow_the_auto_tuned_gains() {
    let mut q = pie(PieParams::default());
    fill(&mut q, 100, ms(0));
    q.dequeue(ms(100)).unwrap();
    assert_eq!(q.qdelay(), SimDuration::from_ms(100));
    q.advance_to(ms(500));
    let p1 = (0.125 * (0.100 - 0.015) + 1.25 * 0.100) / 2048.0;
    assert!(close(q.prob(), p1), "{} vs {p1}", q.prob());
    q.advance_to(ms(515));
    let p2 = p1 + 0.125 * (0.100 - 0.015) / 128.0;
    assert!(close(q.prob(), p2), "{} vs {p2}", q.prob());
}

#[test]
fn steps_are_capped_at_two_percent_above_ten_percent_and_high_delay_adds_two() {
    let mut q = pie(PieParams::default());
    fill(&mut q, 10, ms(0));
    q.vars.prob = prob(0.2);
    q.vars.qdelay = SimDuration::from_ms(300);
    q.vars.qdelay_old = SimDuration::from_ms(300);
    q.calculate_probability();
    // Unscaled step 0.125 × 0.285 = 0.0356 → capped to 0.02; qdelay > 250 ms adds 0.02.
    assert!(close(q.prob(), 0.24), "{}", q.prob());
    q.vars.prob = MAX_PROB - 10;
    q.calculate_probability();
    assert!(q.prob() >= 1.0, "p may pass 1 as in Linux; it acts as 1");
}

#[test]
fn zero_delay_decays_the_probability_and_low_delay_resets_the_measurement() {
    let mut q = pie(PieParams::default());
    q.vars.prob = prob(0.5);
    q.vars.burst_time = SimDuration::ZERO;
    q.calculate_probability();
    let p = (0.5 - 0.125 * 0.015) * 63.0 / 64.0;
    assert!(close(q.prob(), p), "{} vs {p}", q.prob());
    assert!(q.burst_allowance().is_zero());
    q.vars.prob = prob(1e-9);
    q.calculate_probability();
    assert_eq!(q.prob(), 0.0);
    assert_eq!(q.burst_allowance(), SimDuration::from_ms(150), "reset restores the burst allowance");
    assert_eq!(q.next_wakeup(), None);
}

#[test]
fn the_burst_allowance_shrinks_with_dequeue_time() {
    let mut q = pie(PieParams::default());
    fill(&mut q, 300, ms(0));
    q.dequeue(ms(0));
    assert_eq!(q.burst_allowance(), SimDuration::from_ms(150), "the first dequeue only starts the clock");
    q.dequeue(ms(10));
    q.dequeue(ms(20));
    assert_eq!(q.burst_allowance(), SimDuration::from_ms(130));
    for t in 21..200 {
        q.dequeue(ms(t));
    }
    assert!(q.burst_allowance().is_zero());
}

/// A queue that PIE may drop from: burst spent, delay well above target/2, p set by hand.
fn primed(p: f64) -> Pie {
    let mut q = pie(PieParams { limit: 100_000, ..Default::default() });
    fill(&mut q, 10, ms(0));
    q.vars.burst_time = SimDuration::ZERO;
    q.vars.qdelay = SimDuration::from_ms(100);
    q.vars.prob = prob(p);
    q
}

#[test]
fn early_drop_is_derandomised() {
    let mut q = primed(0.3);
    let mut decisions = vec![];
    for i in 0..3000 {
        decisions.push(q.enqueue(ms(0), pkt(100 + i, 1000)).is_err());
    }
    // Never before 0.85 is accumulated: after every drop (and at the start) two packets pass.
    let mut since = 0;
    for &d in &decisions {
        if d {
            assert!(since >= 2);
            since = 0;
        } else {
            since += 1;
        }
    }
    // Cycles of 2 + Geometric(0.3) packets: drop fraction 1 / (2 + 1/0.3) = 0.1875.
    let frac = decisions.iter().filter(|&&d| d).count() as f64 / 3000.0;
    assert!((0.16..0.22).contains(&frac), "{frac}");
    assert_eq!(q.pie_stats().early_drops as usize, decisions.iter().filter(|&&d| d).count());
}

#[test]
fn no_early_drop_during_burst_or_low_delay_or_short_queue() {
    let mut q = primed(1.0);
    q.vars.burst_time = SimDuration::from_ms(1);
    assert!(q.enqueue(ms(0), pkt(50, 1000)).is_ok(), "burst allowance left");
    q.vars.burst_time = SimDuration::ZERO;
    q.vars.qdelay = SimDuration::from_ms(7);
    q.vars.prob = prob(0.19);
    for i in 0..20 {
        assert!(q.enqueue(ms(0), pkt(60 + i, 1000)).is_ok(), "qdelay < target/2 and p < 20 %");
    }
    q.vars.prob = prob(1.0);
    assert_eq!(q.enqueue(ms(0), pkt(90, 1000)).unwrap_err().1, DropReason::Aqm);
    let mut q = pie(PieParams::default());
    fill(&mut q, 3, ms(0));
    q.vars.burst_time = SimDuration::ZERO;
    q.vars.qdelay = SimDuration::from_ms(100);
    q.vars.prob = prob(1.0);
    assert!(q.enqueue(ms(0), pkt(9, 1000)).is_ok(), "3000 B < 2 MTU");
    assert!(q.enqueue(ms(0), pkt(10, 1000)).is_err());
}

#[test]
fn ecn_capable_packets_are_marked_while_p_is_at_most_ten_percent() {
    let mut q = pie(PieParams { ecn: true, ..Default::default() });
    q.set_ecn_classifier(|_| true);
    fill(&mut q, 10, ms(0));
    q.vars.burst_time = SimDuration::ZERO;
    q.vars.qdelay = SimDuration::from_ms(100);
    q.vars.prob = prob(0.09);
    for i in 0..500 {
        assert!(q.enqueue(ms(0), pkt(20 + i, 1000)).is_ok());
    }
    assert!(q.pie_stats().ecn_mark > 10, "{:?}", q.pie_stats());
    q.vars.prob = prob(0.9);
    let refused = (0..50).filter(|i| q.enqueue(ms(0), pkt(100 + i, 1000)).is_err()).count();
    assert!(refused > 20, "{refused}");
}

#[test]
fn tail_drop_at_the_limit() {
    let mut q = pie(PieParams { limit: 2, ..Default::default() });
    fill(&mut q, 2, ms(0));
    assert_eq!(q.enqueue(ms(1), pkt(5, 100)).unwrap_err().1, DropReason::QueueFull);
    assert_eq!((q.pie_stats().overlimit, q.stats.dropped, q.stats.enqueued), (1, 1, 2));
    assert_eq!(q.dequeue(ms(2)).unwrap().enqueued, ms(0));
    assert!(pie(PieParams::default()).dequeue(ms(1)).is_none());
}

/// Packets every 0.5 ms, one served per ms: without drops the delay would grow by 0.5 ms per ms.
/// Returns the sojourns of delivered packets by dequeue time, the drops and the final queue.
type Sojourns = Vec<(u64, SimDuration)>;

fn overload(secs: u64) -> (Sojourns, Vec<(SimTime, DropReason)>, Pie) {
    let mut q = pie(PieParams::default());
    let (mut sojourns, mut drops, mut next_us, mut id) = (vec![], vec![], 0u64, 0);
    for tick in 1..=secs * 1000 {
        while next_us <= tick * 1000 {
            let t = SimTime::from_us(next_us);
            if let Err((_, r)) = q.enqueue(t, pkt(id, 1000)) {
                drops.push((t, r));
            }
            id += 1;
            next_us += 500;
        }
        if let Some(p) = q.dequeue(ms(tick)) {
            sojourns.push((tick, ms(tick).saturating_since(p.enqueued)));
        }
    }
    (sojourns, drops, q)
}

#[test]
fn overload_is_held_near_the_target_delay() {
    let (sojourns, drops, q) = overload(20);
    assert!(drops.iter().all(|d| d.1 == DropReason::Aqm), "never reaches the 1000-packet limit");
    let first = drops[0].0;
    assert!(first > ms(500), "no drop before the first update: {first:?}");
    // Once settled, the drop rate matches the excess (half the arrivals) and the mean delay is near
    // 15 ms.
    let late: Vec<f64> = sojourns.iter().filter(|s| s.0 > 10_000).map(|s| s.1.as_ms_f64()).collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!((10.0..25.0).contains(&mean), "mean sojourn {mean} ms");
    let late_drops = drops.iter().filter(|d| d.0 > ms(10_000)).count() as f64 / 20_000.0;
    assert!((0.45..0.55).contains(&late_drops), "{late_drops}");
    assert_eq!(q.pie_stats().early_drops as usize, drops.len());
}

/// The same workload with and without the engine calling `advance_to` at every wakeup gives the same
/// decisions: enqueue and dequeue catch up by themselves, and idle stretches at rest are skipped.
#[test]
fn catch_up_equals_running_every_timer() {
    let mut timed = pie(PieParams::default());
    let mut lazy = pie(PieParams::default());
    let mut ops: Vec<(SimTime, bool)> = vec![];
    for burst in 0..4u64 {
        let start = burst * 3_000;
        for k in 0..1_200u64 {
            ops.push((SimTime::from_us((start + k / 2) * 1000 + (k % 2) * 500), true));
        }
        for k in 1..=1_300u64 {
            ops.push((ms(start + k), false));
        }
    }
    ops.sort_by_key(|o| (o.0, !o.1));
    let (mut a, mut b) = (vec![], vec![]);
    for (i, &(t, enq)) in ops.iter().enumerate() {
        while let Some(w) = timed.next_wakeup().filter(|&w| w <= t) {
            timed.advance_to(w);
        }
        if enq {
            a.push(timed.enqueue(t, pkt(i as u64, 1000)).is_ok());
            b.push(lazy.enqueue(t, pkt(i as u64, 1000)).is_ok());
        } else {
            a.push(timed.dequeue(t).is_some());
            b.push(lazy.dequeue(t).is_some());
        }
    }
    assert_eq!(a, b);
    assert!(a.iter().any(|&x| !x));
    assert_eq!((timed.vars, timed.pie_stats()), (lazy.vars, lazy.pie_stats()));
    lazy.advance_to(ms(60_000));
    assert_eq!(lazy.next_wakeup(), None, "drained and decayed: at rest");
}
