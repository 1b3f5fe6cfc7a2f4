//! QAir's state machines on hand-computed vectors (spec §3–§5).

use super::control::Control;
use super::monitor::DelayMonitor;
use super::regulator::TokenBucket;
use super::QairParams;
use crate::time::{SimDuration, SimTime};

fn ms(x: f64) -> SimTime {
    SimTime(SimDuration::from_secs_f64(x * 1e-3).unwrap().as_ns())
}
fn dur_ms(x: f64) -> SimDuration {
    SimDuration::from_secs_f64(x * 1e-3).unwrap()
}

fn params() -> QairParams {
    QairParams { t_target_ms: 12.0, n_star: None, alpha: 0.9, check_interval_ms: 2.5, delta: 2.0, r_min: 5.0, r_max: 100.0, depth: 2.0, explicit_tags: true, tagged_flows: Vec::new(), enabled: true, release_point: crate::mac::txpath::gate::ReleasePoint::Formation, t_k_from: super::TkFrom::Head, increase: super::Increase::PerUpdate, decrease_hold: 0, decrease_floor: 0.0, token_unit: super::TokenUnit::Psdu, r_0: None, first_descent: super::FirstDescent::AsLater }
}

/// Feeds a controller one sample 3 ms after the last (each an update: over the 2.5-ms interval); the
/// new rate.
fn stepper() -> impl FnMut(&mut Control, f64) -> f64 {
    let mut t = 0.0;
    move |c: &mut Control, t_k: f64| {
        t += 3.0;
        c.on_frame_success(ms(t), dur_ms(t_k)).unwrap()
    }
}

/// Algorithm 1: the mean over an interval (Eq. 4) seeds T̂, then the EWMA (Eq. 5); the check is strict
/// and runs only on a completion; decrease is proportional to the overshoot, increase additive.
#[test]
fn algorithm_1_by_hand() {
    let mut c = Control::new(&params(), SimTime::ZERO);
    assert_eq!(c.rate(), 100.0, "R_0 = R_max");
    assert_eq!(c.on_frame_success(ms(1.0), dur_ms(20.0)), None, "1 ms is inside the interval");
    // T_i = (20 + 10) / 2 = 15 ms seeds T̂; 15 ≥ 12 → R = 100 · 12 / 15 = 80.
    assert_eq!(c.on_frame_success(ms(3.0), dur_ms(10.0)), Some(80.0));
    assert_eq!(c.t_hat_us(), Some(15_000.0));
    assert_eq!(c.on_frame_success(ms(4.0), dur_ms(6.0)), None);
    assert_eq!(c.on_frame_success(ms(5.5), dur_ms(6.0)), None, "exactly one interval later: strict >");
    // T_i = 6 ms; T̂ = 0.9 · 15 + 0.1 · 6 = 14.1 ms; R = 80 · 12 / 14.1.
    let r = c.on_frame_success(ms(5.6), dur_ms(6.0)).unwrap();
    assert!((c.t_hat_us().unwrap() - 14_100.0).abs() < 1e-6);
    assert!((r - 80.0 * 12.0 / 14.1).abs() < 1e-9, "{r}");
}

/// Below target R grows by δ per update up to R_max; at exactly T_target it holds; far above it falls
/// to R_min and no further (the dead corner, §4.2).
#[test]
fn bounds_and_the_target_itself() {
    let p = QairParams { alpha: 0.0, ..params() };
    let mut c = Control::new(&p, SimTime::ZERO);
    let mut step = stepper();
    assert_eq!(step(&mut c, 12.0), 100.0, "T̂ = T_target: factor 1");
    assert_eq!(step(&mut c, 24.0), 50.0);
    assert_eq!(step(&mut c, 1.0), 52.0);
    assert_eq!(step(&mut c, 1.0), 54.0);
    for _ in 0..30 {
        step(&mut c, 1200.0);
    }
    assert_eq!(c.rate(), 5.0, "R_min");
    for _ in 0..100 {
        step(&mut c, 1.0);
    }
    assert_eq!(c.rate(), 100.0, "R_max");
}

/// `increase = "per_interval"`: δ per check interval elapsed since the last update, so a node that
/// completes rarely grows as fast per second as one completing every interval (`per_update` gives both
/// δ per update).
#[test]
fn increase_per_interval_by_hand() {
    let p = QairParams { alpha: 0.0, r_max: 1000.0, increase: super::Increase::PerInterval, ..params() };
    let mut c = Control::new(&p, SimTime::ZERO);
    // Seed T̂ above target: 1000 · 12 / 24 = 500.
    assert_eq!(c.on_frame_success(ms(3.0), dur_ms(24.0)), Some(500.0));
    // 47 ms later, T̂ = 6 ms: 500 + 2 · 47 / 2.5 = 537.6.
    let r = c.on_frame_success(ms(50.0), dur_ms(6.0)).unwrap();
    assert!((r - 537.6).abs() < 1e-9, "{r}");
    // 3 ms later: + 2 · 3 / 2.5 = 2.4.
    let r = c.on_frame_success(ms(53.0), dur_ms(6.0)).unwrap();
    assert!((r - 540.0).abs() < 1e-9, "{r}");
    let mut lit = Control::new(&QairParams { increase: super::Increase::PerUpdate, ..p }, SimTime::ZERO);
    lit.on_frame_success(ms(3.0), dur_ms(24.0));
    assert_eq!(lit.on_frame_success(ms(50.0), dur_ms(6.0)), Some(502.0), "Algorithm 1: δ per update");
}

/// `decrease_hold`: after a decrease, that many updates above target pass before the next; an update
/// below target ends the hold. `decrease_floor`: one decrease multiplies R by no less than that factor.
#[test]
fn decrease_hold_and_floor_by_hand() {
    let p = QairParams { alpha: 0.0, r_max: 1000.0, decrease_hold: 2, decrease_floor: 0.5, ..params() };
    let mut c = Control::new(&p, SimTime::ZERO);
    let mut step = stepper();
    assert_eq!(step(&mut c, 16.0), 750.0, "12 / 16 = 0.75, above the floor");
    assert_eq!(step(&mut c, 16.0), 750.0, "held");
    assert_eq!(step(&mut c, 16.0), 750.0, "held");
    assert_eq!(step(&mut c, 120.0), 375.0, "12 / 120 = 0.1, floored at 0.5");
    assert_eq!(step(&mut c, 6.0), 377.0, "below target: +δ, and the hold ends");
    assert_eq!(step(&mut c, 24.0), 188.5, "decreases at once");
    let mut lit = Control::new(&QairParams { decrease_hold: 0, decrease_floor: 0.0, ..p }, SimTime::ZERO);
    let mut t = 0.0;
    for (t_k, r) in [(16.0, 750.0), (16.0, 562.5), (120.0, 56.25)] {
        t += 3.0;
        assert_eq!(lit.on_frame_success(ms(t), dur_ms(t_k)), Some(r), "Algorithm 1: every update above target decreases");
    }
}

/// `first_descent = "from_delivered"`: until T̂ is below target after a cut, a decrease starts from the
/// lower of R and the delivered rate (tokens delivered since the first update over the time since; the
/// first interval, which may span an idle start, is left out) and is not held; ten updates below
/// target before any cut end it as well; later decreases start from R and are held.
#[test]
fn first_descent_from_the_delivered_rate_by_hand() {
    let p = QairParams { alpha: 0.0, r_max: 1000.0, decrease_hold: 2, decrease_floor: 0.5, first_descent: super::FirstDescent::FromDelivered, ..params() };
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
    let mut c = Control::new(&p, SimTime::ZERO);
    let r = c.on_frame_success(ms(3.0), dur_ms(16.0));
    assert!(close(r, 750.0), "the first update has no delivered rate yet: from R, 1000 · 12 / 16: {r:?}");
    assert_eq!(c.on_frame_success(ms(4.0), dur_ms(16.0)), None);
    let r = c.on_frame_success(ms(9.0), dur_ms(16.0));
    assert!(close(r, 2.0 / 0.006 * 0.75), "2 PSDUs in the 6 ms since the first update: 333.3 · 0.75: {r:?}");
    let r = c.on_frame_success(ms(12.0), dur_ms(120.0));
    assert!(close(r, 125.0), "from R = 250 (below 3 / 9 ms), floored at 0.5, not held: {r:?}");
    let r = c.on_frame_success(ms(15.0), dur_ms(6.0));
    assert!(close(r, 127.0), "below target: +δ, and the first descent ends: {r:?}");
    let r = c.on_frame_success(ms(18.0), dur_ms(16.0));
    assert!(close(r, 127.0 * 0.75), "from R now: {r:?}");
    assert!(close(c.on_frame_success(ms(21.0), dur_ms(16.0)), 127.0 * 0.75), "and held");

    let mut low = Control::new(&QairParams { r_min: 200.0, ..p.clone() }, SimTime::ZERO);
    low.on_frame_success(ms(3.0), dur_ms(120.0));
    assert_eq!(low.on_frame_success(ms(6.0), dur_ms(120.0)), Some(200.0), "333.3 · 0.5 clamped at R_min");

    let mut mpdus = Control::new(&p, SimTime::ZERO);
    mpdus.on_frame_delivered(ms(3.0), dur_ms(16.0), 32.0);
    let r = mpdus.on_frame_delivered(ms(9.0), dur_ms(16.0), 32.0);
    assert!(close(r, 562.5), "32 MPDUs in 6 ms: 5,333 MPDUs/s, above R = 750, which the cut starts from: {r:?}");

    for below in [9, 10] {
        let mut c = Control::new(&p, SimTime::ZERO);
        let mut step = stepper();
        for _ in 0..below {
            assert_eq!(step(&mut c, 6.0), 1000.0);
        }
        let r = Some(step(&mut c, 24.0));
        let want = if below == 10 { 500.0 } else { (below as f64) / (3e-3 * below as f64) * 0.5 };
        assert!(close(r, want), "after {below} updates below target: {r:?}, want {want}");
    }
    let mut lit = Control::new(&QairParams { first_descent: super::FirstDescent::AsLater, ..p }, SimTime::ZERO);
    lit.on_frame_success(ms(3.0), dur_ms(16.0));
    assert_eq!(lit.on_frame_success(ms(9.0), dur_ms(16.0)), Some(750.0), "as_later: the first cut held as every later one");
}

/// `t_k_from = "hw_enqueue"`: the sample starts when the frame entered the hardware queue, so a frame
/// queued behind its predecessor counts that wait (Eq. 6 starts it at the predecessor's completion).
#[test]
fn t_k_from_the_hardware_enqueue() {
    let mut m = DelayMonitor::default();
    m.on_enqueue(ms(0.0), 2);
    m.on_enqueue(ms(1.0), 2);
    assert_eq!(m.on_done(ms(5.0), 2, true, true), (Some(dur_ms(5.0)), ms(0.0)));
    assert_eq!(m.on_done(ms(7.0), 2, true, true), (Some(dur_ms(6.0)), ms(5.0)), "from t_w = 1 ms; t_h is still Eq. 6's");
    m.on_enqueue(ms(10.0), 2);
    assert_eq!(m.on_done(ms(12.0), 2, true, true), (Some(dur_ms(2.0)), ms(10.0)), "an empty queue: t_w = t_h");
}

/// Eq. 6 per AC: a frame starts contending when enqueued or when its predecessor leaves, whichever is
/// later; failures leave the queue without a sample.
#[test]
fn head_of_queue_inference() {
    let mut m = DelayMonitor::default();
    m.on_enqueue(ms(0.0), 2);
    m.on_enqueue(ms(1.0), 2);
    m.on_enqueue(ms(1.5), 1);
    assert_eq!(m.on_done(ms(5.0), 2, true, false), (Some(dur_ms(5.0)), ms(0.0)));
    assert_eq!(m.on_done(ms(7.0), 2, true, false), (Some(dur_ms(2.0)), ms(5.0)), "behind its predecessor");
    assert_eq!(m.on_done(ms(4.0), 1, false, false), (None, ms(1.5)), "another AC; a failure gives no sample");
    m.on_enqueue(ms(10.0), 2);
    assert_eq!(m.on_done(ms(12.0), 2, true, false), (Some(dur_ms(2.0)), ms(10.0)), "enqueued after the queue emptied");
}

/// Tokens in PSDUs, depth 2, the wait rounded up to the µs; a rate change accrues at the old rate.
#[test]
fn token_bucket_by_hand() {
    let mut b = TokenBucket::new(2.0, SimTime::ZERO);
    for _ in 0..2 {
        assert_eq!(b.ready(SimTime::ZERO, 1000.0), Ok(()));
        b.consume(1.0);
    }
    assert_eq!(b.ready(SimTime::ZERO, 1000.0), Err(ms(1.0)));
    // At 3 tokens/s, 0.5 ms adds 0.0015 token; the next is due (1 − 0.0015) / 3 s = 332 833.3 µs later,
    // rounded up to the µs.
    assert_eq!(b.ready(ms(0.5), 3.0), Err(ms(0.5) + SimDuration::from_us(332_834)));
    assert_eq!(b.ready(ms(1000.0), 1e6), Ok(()));
    assert_eq!(b.tokens(), 2.0, "capped at the depth");
}

/// MPDU tokens: a 32-MPDU aggregate released with two tokens leaves the bucket 30 in debt, and the next
/// PSDU waits until the balance is back at one: 31 tokens at 1000/s, 31 ms.
#[test]
fn mpdu_tokens_go_into_debt() {
    let mut b = TokenBucket::new(2.0, SimTime::ZERO);
    assert_eq!(b.ready(SimTime::ZERO, 1000.0), Ok(()));
    b.consume(32.0);
    assert_eq!(b.tokens(), -30.0);
    assert_eq!(b.ready(ms(1.0), 1000.0), Err(ms(31.0)));
    assert_eq!(b.ready(ms(31.0), 1000.0), Ok(()));
}

/// The gate with MPDU tokens: a released 32-MPDU PSDU pays 32 (at R_0 = R_max = 100 MPDUs/s the next
/// release waits (1 − (2 − 32)) / 100 s = 310 ms), a single-MPDU one pays one, and the gate says its
/// unit; with PSDU tokens the same aggregate pays one.
#[test]
fn the_gate_charges_each_mpdu_with_mpdu_tokens() {
    use crate::mac::txpath::gate::ReleaseGate;
    let p = QairParams { token_unit: super::TokenUnit::Mpdu, ..params() };
    let mut g = super::gate::QairGate::new(&p);
    assert_eq!(g.may_release(SimTime::ZERO), Ok(()));
    g.on_release(SimTime::ZERO, 0, 2, 49_406, 32);
    assert_eq!(g.may_release(SimTime::ZERO), Err(ms(310.0)));
    assert_eq!(g.expected_hold(SimTime::ZERO, 0), dur_ms(310.0), "in debt: (0 + 1 + 30) / 100 s");
    assert_eq!(g.may_release(ms(310.0)), Ok(()));
    g.on_release(ms(310.0), 0, 2, 1538, 1);
    assert_eq!(g.may_release(ms(310.0)), Err(ms(320.0)));
    assert_eq!(g.stats()["token_unit"], "mpdu");
    let mut psdu = super::gate::QairGate::new(&params());
    psdu.on_release(SimTime::ZERO, 0, 2, 49_406, 32);
    assert_eq!(psdu.may_release(SimTime::ZERO), Ok(()), "one of two PSDU tokens paid");
    assert!(psdu.stats().get("token_unit").is_none());
}

/// The hold LAST-PQ adds to its estimate (spec §17.6): max(0, (h + 1 − tokens) / R), TV4's numbers.
#[test]
fn expected_wait_for_a_token() {
    let mut b = TokenBucket::new(2.0, SimTime::ZERO);
    assert_eq!(b.expected_wait(SimTime::ZERO, 500.0, 0.0), SimDuration::ZERO, "a token is there");
    b.consume(1.0);
    b.consume(1.0);
    assert_eq!(b.expected_wait(SimTime::ZERO, 500.0, 0.0), SimDuration::from_ms(2));
    assert_eq!(b.expected_wait(SimTime::ZERO, 500.0, 1.0), SimDuration::from_ms(4), "behind one held PSDU");
    assert_eq!(b.expected_wait(ms(1.0), 500.0, 0.0), SimDuration::from_ms(1), "half a token accrued");
    assert_eq!(b.tokens(), 0.0, "the bucket itself is untouched");
}

#[test]
fn params_are_checked() {
    assert!(QairParams::default().validate().is_ok());
    assert_eq!(QairParams { r_min: 0.0, ..QairParams::default() }.validate().unwrap_err().0, "r_min");
    assert_eq!(QairParams { alpha: 1.0, ..QairParams::default() }.validate().unwrap_err().0, "alpha");
    assert_eq!(QairParams { r_min: 10.0, r_max: 5.0, ..QairParams::default() }.validate().unwrap_err().0, "r_min");
    for bad in [4.0, 9000.0, f64::NAN] {
        assert_eq!(QairParams { r_0: Some(bad), ..QairParams::default() }.validate().unwrap_err().0, "r_0");
    }
    assert_eq!(QairParams { r_min: 10.0, r_max: 5.0, r_0: Some(7.0), ..QairParams::default() }.validate().unwrap_err().0, "r_min", "the bounds first");
    let tagged = QairParams { tagged_flows: vec!["ping".into()], ..QairParams::default() };
    assert_eq!(tagged.validate().unwrap_err().0, "tagged_flows", "only at the psdu release point");
    assert!(QairParams { release_point: crate::mac::txpath::gate::ReleasePoint::Psdu, ..tagged }.validate().is_ok());
    // Parameters at their defaults stay out of the resolved scenario (scenarios written before they
    // existed resolve as they did).
    let v = serde_json::to_value(QairParams::default()).unwrap();
    for k in ["n_star", "explicit_tags", "tagged_flows", "t_k_from", "increase", "decrease_hold", "decrease_floor", "token_unit", "r_0", "first_descent"] {
        assert!(v.get(k).is_none(), "{k} in {v}");
    }
    assert_eq!(Control::new(&QairParams { r_0: Some(100.0), ..QairParams::default() }, SimTime::ZERO).rate(), 100.0);
    assert_eq!(Control::new(&QairParams::default(), SimTime::ZERO).rate(), 8667.0, "R_0 = R_max");
    for bad in [1.0, -0.1, f64::NAN] {
        assert_eq!(QairParams { decrease_floor: bad, ..QairParams::default() }.validate().unwrap_err().0, "decrease_floor");
    }
}

/// The explicit tags (spec §5): DSCP CS5 and above (EF 46 included) marks a packet delay-sensitive at
/// QAir's gate, below CS5 it does not, and `explicit_tags = false` turns that tag off; the flow-table
/// tag marks the named flows' packets whatever their DSCP, with or without the DSCP tag.
#[test]
fn explicit_tags_are_dscp_cs5_and_above_or_a_tagged_flow() {
    use crate::mac::txpath::gate::ReleaseGate;
    let pkt = |flow: u32, dscp: u8| crate::packet::Packet { id: 0, flow, seq: 0, size: 1500, src: 0, dst: 1, hop: 0, dscp, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() };
    let on = super::gate::QairGate::new(&QairParams::default());
    assert!(on.explicit_tag(&pkt(0, 46)) && on.explicit_tag(&pkt(0, 40)) && on.explicit_tag(&pkt(0, 56)));
    assert!(!on.explicit_tag(&pkt(0, 34)) && !on.explicit_tag(&pkt(0, 0)));
    let off = super::gate::QairGate::new(&QairParams { explicit_tags: false, ..QairParams::default() });
    assert!(!off.explicit_tag(&pkt(0, 46)));
    let flows = super::gate::QairGate::new(&QairParams { explicit_tags: false, ..QairParams::default() }).with_tagged_flows(vec![7, 3]);
    assert!(flows.explicit_tag(&pkt(3, 0)) && flows.explicit_tag(&pkt(7, 0)));
    assert!(!flows.explicit_tag(&pkt(4, 0)) && !flows.explicit_tag(&pkt(4, 46)));
    let both = super::gate::QairGate::new(&QairParams::default()).with_tagged_flows(vec![3]);
    assert!(both.explicit_tag(&pkt(3, 0)) && both.explicit_tag(&pkt(4, 46)) && !both.explicit_tag(&pkt(4, 0)));
}
