//! The ABC router: TV10 (marking probability) and the marker on a live egress.

use super::abc::*;
use super::egress::{EgressObserver, Stage};
use super::testkit::*;
use crate::packet::Ecn;
use crate::rng::Rng;
use crate::time::SimTime;

fn p(mu: f64, cr: f64, x: f64) -> f64 {
    accel_probability(&AbcRouterParams::default(), mu, cr, x)
}

#[test]
fn tv10_marking_probability() {
    // (a) x = 50 ms: tr = 9.8 − (10/133)·40 Mbit/s.
    let a = p(10e6, 8e6, 50.0);
    assert!((a - 0.5 * (9.8e6 - 10e6 / 133.0 * 40.0) / 8e6).abs() < 1e-12);
    assert!((a - 0.4245).abs() < 5e-5, "{a}");
    // (b) At or below the 10-ms threshold only η counts.
    for x in [0.0, 5.0, 10.0] {
        assert!((p(10e6, 8e6, x) - 0.6125).abs() < 1e-12);
    }
    // (c) x = 10 + 0.98·133 ms: the target rate is zero; beyond it negative (always brake).
    assert!(p(10e6, 8e6, 10.0 + 0.98 * 133.0).abs() < 1e-9);
    assert!(p(10e6, 8e6, 200.0) < 0.0);
    // A flow using a fraction of the link is told to accelerate for sure.
    assert!(p(10e6, 1e6, 0.0) > 1.0);
}

fn marker(seed: u64) -> AbcMarker {
    AbcMarker::new(AbcRouterParams::default(), SimTime::ZERO, Rng::derive(seed, "ap/0/abc/mark"))
}

#[test]
fn estimates_over_a_40_tick_window() {
    let mut m = marker(1);
    // Before the first tick both rates sit at the floor.
    assert_eq!(m.rates(us(999)), (512_000, 512_000));
    let mut link = SteadyLink::new(1500);
    link.run(&mut m, 0, 42);
    assert_eq!(m.rates(ms(42)), (12_000_000, 12_000_000));
    // The link goes idle: after half a window mu still sees 12 Mbit/s but cr halves.
    m.on_dequeue(us(42_500), link.head().unwrap());
    assert_eq!(m.rates(ms(63)), (12_000_000, 6_000_000));
}

#[test]
fn marks_follow_the_probability() {
    // A busy link and a short queue: p = 0.5·0.98·mu/cr = 0.49 (mu = cr).
    let mut m = marker(2);
    let mut link = SteadyLink::new(1500);
    link.run(&mut m, 0, 42);
    assert!((m.probability(ms(42)) - 0.49).abs() < 1e-12);
    let n = 20_000;
    let accel = (0..n).filter(|_| m.mark(ms(42)) == Ecn::Ect1).count();
    assert!((9_400..10_200).contains(&accel), "{accel} of {n}");
    assert_eq!(m.stats().accelerate + m.stats().brake, n as u64);
    // A standing queue of 150 ms at 12 Mbit/s (225 000 B) puts the target below zero: always brake.
    for i in 0..150 {
        m.on_enqueue(us(42_600), super::testkit::pkt(i, 1500), Stage::Qdisc);
    }
    assert!(m.probability(ms(42)) < 0.0);
    assert!((0..1000).all(|_| m.mark(ms(42)) == Ecn::Ect0));
}

#[test]
fn a_nearly_idle_link_always_accelerates() {
    // One packet every 10 ms: mu = 12 Mbit/s (busy ticks only), cr = 1.2 Mbit/s, so p ≈ 4.9.
    let mut m = marker(3);
    let mut link = SteadyLink::new(1500);
    for k in 0..8 {
        link.step(&mut m, us(k * 10_000 + 500));
        link.depart(&mut m, us(k * 10_000 + 900));
    }
    let pr = m.probability(ms(80));
    assert!(pr > 1.0, "{pr}");
    assert!((0..1000).all(|_| m.mark(ms(80)) == Ecn::Ect1));
}

#[test]
fn params_validate() {
    assert!(AbcRouterParams::default().validate().is_ok());
    let bad = AbcRouterParams { delta_ms: 0.0, ..Default::default() };
    assert_eq!(bad.validate().unwrap_err().field, "delta_ms");
}
