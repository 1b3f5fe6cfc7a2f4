//! The Fortune Teller: zhuge.md §9 test vectors TV1–TV6 and the edge cases of §2.7.

use super::dequeue_window::{Backlog, DequeueWindow, RateDivisor};
use super::egress::{EgressObserver, EgressPacket, Stage};
use super::fortune_teller::*;
use super::testkit::*;
use super::{FeedbackPath, LinkKind};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

const FLOOR: u64 = 512_000;

fn window(divisor: RateDivisor) -> DequeueWindow {
    DequeueWindow::new(200, FLOOR, divisor)
}

/// Feeds ticks that each moved `bytes` (or, with 0, a busy or idle tick).
fn feed(w: &mut DequeueWindow, departed: &mut u64, bytes: u64, backlogged: bool, n: usize) {
    for _ in 0..n {
        *departed += bytes;
        w.tick(*departed, if backlogged { Backlog::Served } else { Backlog::Empty });
    }
}

#[test]
fn tv1_steady_dequeue() {
    for d in [RateDivisor::Window, RateDivisor::NonIdle] {
        let (mut w, mut dep) = (window(d), 0);
        feed(&mut w, &mut dep, 1500, true, 200);
        assert_eq!((w.rate_bps(), w.tx_delay_us()), (12_000_000, 1000), "{d:?}");
        let p = forecast(&FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Tcp), 0, 0, est(&w, 0));
        assert_eq!(p.tx, dms(1));
    }
}

#[test]
fn tv2_mixed_slots_in_any_order() {
    let mut rng = Rng::derive(9, "test/tv2");
    for round in 0..20 {
        // 0 = 3000 B, 1 = busy, 2 = idle; shuffled (the first round keeps the blocks in order).
        let mut kinds: Vec<u8> = [vec![0; 100], vec![1; 60], vec![2; 40]].concat();
        if round > 0 {
            for i in (1..kinds.len()).rev() {
                kinds.swap(i, rng.uniform_inclusive(i as u32) as usize);
            }
        }
        let (mut w, mut dep) = (window(RateDivisor::Window), 0);
        for k in kinds {
            match k {
                0 => feed(&mut w, &mut dep, 3000, true, 1),
                1 => feed(&mut w, &mut dep, 0, true, 1),
                _ => feed(&mut w, &mut dep, 0, false, 1),
            }
        }
        assert_eq!(w.occupancy(), (200, 300_000, 60, 40));
        assert_eq!((w.rate_bps(), w.tx_delay_us()), (15_000_000, 1600));
    }
}

#[test]
fn tv3_warm_up_underestimate_in_parity_only() {
    let (mut w, mut dep) = (window(RateDivisor::Window), 0);
    feed(&mut w, &mut dep, 1500, true, 10);
    assert_eq!((w.rate_bps(), w.tx_delay_us()), (600_000, 1000));
    let (mut w, mut dep) = (window(RateDivisor::NonIdle), 0);
    feed(&mut w, &mut dep, 1500, true, 10);
    assert_eq!((w.rate_bps(), w.tx_delay_us()), (12_000_000, 1000));
}

#[test]
fn tv4_stalled_link_and_staleness() {
    // (a) A backlog that never moves: the rate falls to the floor and tx to the whole window.
    let (mut w, mut dep) = (window(RateDivisor::Window), 0);
    feed(&mut w, &mut dep, 0, false, 50);
    feed(&mut w, &mut dep, 0, true, 150);
    assert_eq!((w.rate_bps(), w.tx_delay_us()), (FLOOR, 200_000));
    // (b) After TV1, an idle link keeps the estimates, through the whole drain of the window.
    let (mut w, mut dep) = (window(RateDivisor::Window), 0);
    feed(&mut w, &mut dep, 1500, true, 200);
    for _ in 0..250 {
        feed(&mut w, &mut dep, 0, false, 1);
        assert_eq!((w.rate_bps(), w.tx_delay_us()), (12_000_000, 1000));
    }
    assert_eq!(w.occupancy(), (200, 0, 0, 200));
}

fn est(w: &DequeueWindow, head_ms: u64) -> Estimate {
    Estimate { rate_bps: w.rate_bps(), tx_delay_us: w.tx_delay_us(), head_wait: dms(head_ms) }
}

fn at_rate(rate_bps: u64, tx_delay_us: u64, head_ms: u64) -> Estimate {
    Estimate { rate_bps, tx_delay_us, head_wait: dms(head_ms) }
}

#[test]
fn tv5_prediction_p2p() {
    let p = FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Tcp);
    let q = 30_000 + 1_500;
    let f = forecast(&p, q, 0, at_rate(12_000_000, 1000, 0));
    assert_eq!((f.q_long, f.q_short, f.tx, f.total), (dms(21), dms(0), dms(1), dms(22)));
    assert_eq!(forecast(&p, q, 0, at_rate(FLOOR, 1000, 0)).total, dms(493));
    // The design profile keeps the sub-ms part: 252 000 bits at 512 kbit/s = 492.1875 ms.
    let d = FortuneTellerParams::design(LinkKind::P2p);
    assert_eq!(forecast(&d, q, 0, at_rate(FLOOR, 1000, 0)).total, SimDuration::from_ns(493_187_500));
    // A head wait is ignored on point-to-point links only through the params: p2p never measures it.
    assert_eq!(p.head_wait, HeadWait::Off);
}

#[test]
fn tv5_prediction_p2p_from_events() {
    for params in [FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Tcp), FortuneTellerParams::design(LinkKind::P2p)] {
        let mut ft = FortuneTeller::new(params, SimTime::ZERO);
        let mut link = SteadyLink::new(1500);
        link.run(&mut ft, 0, 202);
        for i in 0..20 {
            ft.on_enqueue(us(201_600), pkt(i, 1500), Stage::Qdisc);
        }
        assert_eq!(ft.backlog(), (30_000, 1_500));
        let f = ft.predict(ms(202), 0);
        assert_eq!((f.q_bytes, f.q_long, f.tx, f.total), (31_500, dms(21), dms(1), dms(22)));
    }
}

#[test]
fn tv6_wifi_ampdu_allowance() {
    // TV6 adds the head's wait to `tx` (§2.4); the design profile's `remaining` rule is tested below.
    let design = FortuneTellerParams { head_wait: HeadWait::Exact, ..FortuneTellerParams::design(LinkKind::Wifi) };
    for p in [FortuneTellerParams::parity(LinkKind::Wifi, FeedbackPath::Tcp), design] {
        let e = at_rate(12_000_000, 1000, 3);
        // (a) 6000 B fit in the 7500-B allowance and the queue grew from 4000: no queueing delay.
        assert_eq!(forecast(&p, 6_000, 4_000, e).total, dms(4));
        // (b) The queue is draining (8000 before): it is charged, 4 ms.
        let b = forecast(&p, 6_000, 8_000, e);
        assert_eq!((b.q_long, b.total), (dms(4), dms(8)));
        // (c) Beyond the allowance, whatever came before.
        for last in [0, 9_000, 20_000] {
            assert_eq!(forecast(&p, 9_000, last, e).total, dms(10));
        }
        // Exactly at the allowance still fits.
        assert_eq!(forecast(&p, 7_500, 0, e).q_long, SimDuration::ZERO);
    }
}

#[test]
fn wifi_allowance_does_not_overflow_above_859_mbps() {
    // The code computes 5·rate in u32 and wraps above ≈859 Mbit/s (§2.7); 1 Gbit/s allows 625 000 B.
    let p = FortuneTellerParams::design(LinkKind::Wifi);
    let f = forecast(&p, 600_000, 0, at_rate(1_000_000_000, 1000, 0));
    assert_eq!(f.q_long, SimDuration::ZERO);
    assert_eq!(forecast(&p, 700_000, 0, at_rate(1_000_000_000, 1000, 0)).q_long, dms(5) + dus(600));
}

#[test]
fn queue_trend_is_tracked_per_profile() {
    let e = |ft: &mut FortuneTeller, t| ft.predict(t, 0);
    // Parity on the RTP path never updates the previous queue: it stays 0.
    let mut rtp = FortuneTeller::new(FortuneTellerParams::parity(LinkKind::Wifi, FeedbackPath::Rtp), SimTime::ZERO);
    rtp.on_enqueue(ms(0), pkt(1, 1500), Stage::Qdisc);
    e(&mut rtp, ms(1));
    assert_eq!(rtp.last_q_bytes(), 0);
    let mut tcp = FortuneTeller::new(FortuneTellerParams::parity(LinkKind::Wifi, FeedbackPath::Tcp), SimTime::ZERO);
    tcp.on_enqueue(ms(0), pkt(1, 1500), Stage::Qdisc);
    e(&mut tcp, ms(1));
    assert_eq!(tcp.last_q_bytes(), 1500);
}

#[test]
fn before_the_first_tick_nothing_is_known() {
    let mut ft = FortuneTeller::new(FortuneTellerParams::default(), ms(1000));
    assert!(!ft.ticked(us(1_000_999)));
    let f = ft.predict(us(1_000_999), 0);
    assert_eq!((f.tx, ft.estimate(us(1_000_999)).rate_bps), (SimDuration::ZERO, FLOOR));
    assert!(ft.ticked(ms(1001)));
}

#[test]
fn floor_rate_bounds_the_queueing_term() {
    // §2.7: with the floor, 1500 B cost at most 23.4 ms (23 in whole ms).
    let p = FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Tcp);
    assert_eq!(forecast(&p, 1500, 0, at_rate(FLOOR, 0, 0)).total, dms(23));
}

#[test]
fn a_stall_with_a_backlog_shows_in_the_prediction() {
    let mut ft = FortuneTeller::new(FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Tcp), SimTime::ZERO);
    let mut link = SteadyLink::new(1500);
    link.run(&mut ft, 0, 202);
    let before = ft.predict(ms(202), 0);
    assert_eq!(before.total, dms(1) + dms(1)); // one packet queued: 1 ms + tx 1 ms
    // The link stops with its packet still queued: after a full window of busy ticks the rate is
    // at the floor and tx is the whole window (200 ms).
    let stalled = ft.predict(ms(402), 0);
    assert_eq!(ft.estimate(ms(402)).rate_bps, FLOOR);
    assert_eq!(stalled.tx, dms(200));
    assert_eq!(stalled.total, dms(23) + dms(200));
    // An idle link instead keeps the last estimates however long it stays idle.
    let mut idle = FortuneTeller::new(FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Tcp), SimTime::ZERO);
    let mut link = SteadyLink::new(1500);
    link.run(&mut idle, 0, 202);
    idle.on_dequeue(us(202_500), link.head().unwrap());
    let e = idle.estimate(SimTime::from_secs(3600));
    assert_eq!((e.rate_bps, e.tx_delay_us), (12_000_000, 1000));
}

#[test]
fn sampled_packet_already_in_the_driver_queue() {
    // TV7 variant: more bytes arrived behind the sample than the qdisc holds, so the sample is in Q_v;
    // Q_v holds exactly one packet, the flow's: nothing is ahead of it and D = tx = 1 ms.
    let mut ft = FortuneTeller::new(FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Rtp), SimTime::ZERO);
    let mut link = SteadyLink::new(1500);
    link.monitored = true;
    link.run(&mut ft, 0, 202);
    for i in 0..10 {
        ft.on_enqueue(us(201_700), pkt(i, 2000), Stage::Qdisc);
    }
    assert_eq!(ft.backlog(), (20_000, 1_500));
    let f = ft.predict(ms(202), 25_000);
    assert_eq!((f.q_bytes, f.total), (0, dms(1)));
    // Not the flow's packet: the walk finds no monitored packet and the whole Q_v is drained.
    let mut ft = FortuneTeller::new(FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Rtp), SimTime::ZERO);
    let mut link = SteadyLink::new(1500);
    link.run(&mut ft, 0, 202);
    ft.on_enqueue(us(201_700), EgressPacket { id: 7, bytes: 500, monitored: true }, Stage::Driver);
    assert_eq!(ft.predict(ms(202), 25_000).q_bytes, 1500);
}

#[test]
fn drops_from_the_driver_queue_count_as_departures_qdisc_drops_do_not() {
    let mut ft = FortuneTeller::new(FortuneTellerParams::design(LinkKind::P2p), SimTime::ZERO);
    ft.on_enqueue(us(100), pkt(1, 1000), Stage::Qdisc);
    ft.on_enqueue(us(200), pkt(2, 1000), Stage::Driver);
    ft.on_enqueue(us(200), pkt(3, 500), Stage::Driver);
    ft.on_drop(us(300), 1);
    ft.on_drop(us(400), 3); // behind the head
    assert_eq!(ft.backlog(), (0, 1000));
    // Tick 1 saw 500 B leave Q_v: 4 Mbit/s over one non-idle tick.
    assert_eq!(ft.estimate(ms(1)).rate_bps, 4_000_000);
    ft.on_drop(us(1_400), 2);
    assert_eq!(ft.backlog(), (0, 0));
    assert_eq!(ft.estimate(ms(2)).rate_bps, 6_000_000);
}

#[test]
fn head_timer_parity_quirk() {
    let p = FortuneTellerParams::parity(LinkKind::Wifi, FeedbackPath::Tcp);
    let mut ft = FortuneTeller::new(p, SimTime::ZERO);
    ft.on_enqueue(us(500), pkt(1, 1500), Stage::Driver);
    // Ticks 1..=4 see the same head: 0, 1, 2, 3 ms.
    assert_eq!(ft.estimate(ms(4)).head_wait, dms(3));
    // An arrival of the monitored flow overwrites the remembered head: the next tick resets it.
    ft.on_enqueue(us(4_500), EgressPacket { id: 2, bytes: 100, monitored: true }, Stage::Qdisc);
    assert_eq!(ft.estimate(ms(5)).head_wait, dms(0));
    assert_eq!(ft.estimate(ms(7)).head_wait, dms(2));
    // Other traffic does not.
    ft.on_enqueue(us(7_500), pkt(3, 100), Stage::Qdisc);
    assert_eq!(ft.estimate(ms(8)).head_wait, dms(3));
    // A long quiet stretch is replayed without running every tick: +1 ms per tick.
    assert_eq!(ft.estimate(ms(10_008)).head_wait, dms(10_003));
    // An empty driver queue zeroes it.
    ft.on_dequeue(us(10_008_500), 1);
    assert_eq!(ft.estimate(ms(10_009)).head_wait, dms(0));
}

#[test]
fn remaining_head_wait_charges_what_is_left_of_the_expected_access_wait() {
    let p = FortuneTellerParams::design(LinkKind::Wifi);
    assert_eq!(p.head_wait, HeadWait::Remaining);
    // tx = 10 ms expected between services; q = 0.
    let at = |head_ms: u64| forecast(&p, 0, 0, Estimate { rate_bps: 12_000_000, tx_delay_us: 10_000, head_wait: dms(head_ms) });
    //   t (ms)   0         4                 10
    //   head     |== waits ==|================|→ leaves in the next A-MPDU
    //   new pkt            ↑ arrives at 4: leaves with the head, 6 ms later (not 4 + 10)
    assert_eq!((at(0).total, at(4).total, at(10).total), (dms(10), dms(6), dms(0)));
    let late = at(25);
    assert_eq!((late.q_short, late.tx, late.total), (dms(0), dms(0), dms(0)));
    // Exact, for contrast: the elapsed wait plus a full tx.
    let exact = FortuneTellerParams { head_wait: HeadWait::Exact, ..p };
    assert_eq!(forecast(&exact, 0, 0, Estimate { rate_bps: 12_000_000, tx_delay_us: 10_000, head_wait: dms(4) }).total, dms(14));
}

#[test]
fn access_wait_is_left_out_of_the_rate_on_80211() {
    // A station's queue gets 3000 B at t = 0 and waits 9 ticks for its turn; all of it leaves in the
    // 10th tick (one A-MPDU). Repeated every 20 ms: 10 waiting, 1 moving, 9 idle ticks.
    //   tick   1 ……… 9 10  11 …… 20
    //   slot   W ……… W  B   I …… I        (W waiting, B 3000 bytes, I idle)
    let run = |p: FortuneTellerParams| {
        let mut ft = FortuneTeller::new(p, SimTime::ZERO);
        for k in 0..10u64 {
            let t0 = ms(20 * k);
            ft.on_enqueue(t0 + dus(100), pkt(2 * k, 1500), Stage::Driver);
            ft.on_enqueue(t0 + dus(200), pkt(2 * k + 1, 1500), Stage::Driver);
            ft.on_dequeue(t0 + dus(9_500), 2 * k);
            ft.on_dequeue(t0 + dus(9_500), 2 * k + 1);
        }
        ft.estimate(ms(200))
    };
    let with = run(FortuneTellerParams::design(LinkKind::Wifi));
    let without = run(FortuneTellerParams { exclude_access_wait: false, ..FortuneTellerParams::design(LinkKind::Wifi) });
    // Served rate: 3000 B per moving tick = 24 Mbit/s; over all non-idle ticks (10 per burst) 2.4.
    assert_eq!(with.rate_bps, 24_000_000);
    assert_eq!(without.rate_bps, 2_400_000);
    // The expected wait for service is the same either way: one departure tick per 10 non-idle.
    assert_eq!((with.tx_delay_us, without.tx_delay_us), (10_000, 10_000));
}

#[test]
fn a_packet_left_behind_by_a_departure_counts_as_served() {
    use super::dequeue_window::Backlog;
    let mut e = super::egress::Egress::default();
    assert_eq!(e.backlog(), Backlog::Empty);
    e.enqueue(us(0), pkt(1, 1500), Stage::Driver);
    e.enqueue(us(10), pkt(2, 1500), Stage::Driver);
    assert_eq!(e.backlog(), Backlog::AwaitingAccess);
    e.dequeue(us(500), 1); // packet 2 was there and stayed: the queue is being served in turns
    assert_eq!(e.backlog(), Backlog::Served);
    e.dequeue(us(900), 2);
    e.enqueue(us(950), pkt(3, 1500), Stage::Driver); // came after the last departure: a new wait
    assert_eq!(e.backlog(), Backlog::AwaitingAccess);
}

#[test]
fn exact_head_wait_in_the_design_profile() {
    let params = FortuneTellerParams { head_wait: HeadWait::Exact, ..FortuneTellerParams::design(LinkKind::Wifi) };
    let mut ft = FortuneTeller::new(params, SimTime::ZERO);
    ft.on_enqueue(us(500), pkt(1, 1500), Stage::Driver);
    ft.on_enqueue(us(600), pkt(2, 1500), Stage::Driver);
    ft.on_enqueue(us(700), EgressPacket { id: 3, bytes: 100, monitored: true }, Stage::Qdisc);
    assert_eq!(ft.estimate(us(3_250)).head_wait, SimDuration::from_us(2_750));
    ft.on_dequeue(us(4_000), 1);
    assert_eq!(ft.estimate(us(4_100)).head_wait, dus(100));
    ft.on_dequeue(us(5_000), 2);
    assert_eq!(ft.estimate(us(6_000)).head_wait, SimDuration::ZERO);
}

/// Ticks replayed lazily give the same state as ticks run every millisecond, across long gaps.
#[test]
fn lazy_ticks_equal_ticks_run_every_millisecond() {
    let mut rng = Rng::derive(3, "test/lazy");
    for params in [
        FortuneTellerParams::parity(LinkKind::Wifi, FeedbackPath::Tcp),
        FortuneTellerParams::design(LinkKind::Wifi),
        FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Rtp),
    ] {
        let mut lazy = FortuneTeller::new(params.clone(), ms(2));
        let mut eager = FortuneTeller::new(params, ms(2));
        let mut t = ms(2);
        let mut eager_clock = ms(2);
        let (mut qdisc, mut driver): (Vec<u64>, std::collections::VecDeque<u64>) = (vec![], Default::default());
        for id in 0..3000u64 {
            // Mostly sub-ms gaps, sometimes a silence longer than the whole window.
            let gap = match rng.uniform_inclusive(20) {
                0 => rng.uniform_inclusive(900_000) as u64 * 1000,
                1..=4 => rng.uniform_inclusive(5_000) as u64 * 1000,
                _ => rng.uniform_inclusive(700) as u64 * 1000,
            };
            t += SimDuration::from_ns(gap);
            while eager_clock + dms(1) <= t {
                eager_clock += dms(1);
                eager.advance_to(eager_clock);
            }
            let op = rng.uniform_inclusive(3);
            for ft in [&mut lazy, &mut eager] {
                match op {
                    0 => ft.on_enqueue(t, EgressPacket { id, bytes: 200 + (id % 13) as u32 * 100, monitored: id % 3 == 0 }, Stage::Qdisc),
                    1 if !qdisc.is_empty() => ft.on_to_driver(t, qdisc[0]),
                    2 if !driver.is_empty() => ft.on_dequeue(t, driver[0]),
                    _ => {}
                }
            }
            match op {
                0 => qdisc.push(id),
                1 if !qdisc.is_empty() => driver.push_back(qdisc.remove(0)),
                2 if !driver.is_empty() => {
                    driver.pop_front();
                }
                _ => {}
            }
            let (a, b) = (lazy.predict(t, 0), eager.predict(t, 0));
            assert_eq!(a, b, "at {t}");
            assert_eq!(lazy.stats(), eager.stats(), "at {t}");
        }
    }
}

#[test]
fn overrides_replace_only_the_fields_given() {
    let base = FortuneTellerParams::design(LinkKind::Wifi);
    let o = FortuneTellerOverrides { window_frames: Some(3), head_wait: Some(HeadWait::Exact), ampdu_wait_ms: Some(0), ..Default::default() };
    let p = o.apply(base.clone());
    assert_eq!((p.window_frames, p.head_wait, p.ampdu_wait_ms), (3, HeadWait::Exact, None));
    assert_eq!(FortuneTellerParams { window_frames: 5, head_wait: HeadWait::Remaining, ampdu_wait_ms: Some(5), ..p }, base);
    assert_eq!(FortuneTellerOverrides::default().apply(base.clone()), base);
    let bad = FortuneTellerOverrides { min_rate_bps: Some(0), ..Default::default() };
    assert_eq!(bad.validate().unwrap_err().field, "min_rate_bps");
}
