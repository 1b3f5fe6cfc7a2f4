//! The out-of-band Feedback Updater: zhuge.md §9 TV8 (delta store and tokens) and TV9 (ACK release
//! order), the recording rule and warm-up of §3.2, and the order/cap invariants of §3.4.

use super::ack_delayer::*;
use super::egress::{EgressObserver, Stage};
use super::fortune_teller::{FortuneTeller, FortuneTellerParams, Prediction, Resolution};
use super::hold::Hold;
use super::testkit::*;
use super::{FeedbackPath, LinkKind};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

const MS: i64 = 1_000_000;

fn store() -> DeltaStore {
    DeltaStore::new(&AckDelayerParams::default())
}

/// TV8's picker: always the first delta.
fn first(_: usize) -> usize {
    0
}

fn sample(s: &mut DeltaStore, t: SimTime, min: i64) -> i64 {
    s.sample(t, min, &mut first)
}

#[test]
fn tv8a_empty_store_returns_the_minimum() {
    let mut s = store();
    assert_eq!(sample(&mut s, ms(0), -3 * MS), -3 * MS);
    assert_eq!(sample(&mut s, ms(0), 0), 0);
}

#[test]
fn tv8b_one_increase() {
    let mut s = store();
    s.add(ms(0), 4 * MS);
    assert_eq!(sample(&mut s, ms(1), 0), 4 * MS);
    // The draw is not consumed.
    assert_eq!(sample(&mut s, ms(2), 0), 4 * MS);
}

#[test]
fn tv8c_a_token_is_paid_back_once() {
    let mut s = store();
    s.add(ms(0), 4 * MS);
    s.add(ms(0), -3 * MS);
    assert_eq!(s.tokens(), vec![dms(3)]);
    assert_eq!(sample(&mut s, ms(1), 0), MS);
    assert_eq!(s.counts().spent, 1);
    assert_eq!(sample(&mut s, ms(2), 0), 4 * MS);
}

#[test]
fn tv8d_a_large_token_absorbs_several_samples() {
    let mut s = store();
    s.add(ms(0), 2 * MS);
    s.add(ms(0), -5 * MS);
    let mut got = vec![];
    let mut owed = vec![];
    for t in 1..=3 {
        got.push(sample(&mut s, ms(t), 0));
        owed.push(s.tokens());
    }
    assert_eq!(got, vec![0, 0, MS]);
    assert_eq!(owed, vec![vec![dms(3)], vec![dms(1)], vec![]]);
    assert_eq!(s.counts().spent, 1);
}

#[test]
fn tv8e_an_exactly_equal_token_stays_with_value_zero() {
    let mut s = store();
    s.add(ms(0), 2 * MS);
    s.add(ms(0), -2 * MS);
    assert_eq!(sample(&mut s, ms(1), 0), 0);
    assert_eq!(s.tokens(), vec![SimDuration::ZERO]);
    assert_eq!(sample(&mut s, ms(2), 0), 2 * MS);
    assert!(s.tokens().is_empty());
}

#[test]
fn tv8f_entries_expire_strictly_after_40_ms() {
    let mut s = store();
    s.add(ms(0), 4 * MS);
    assert_eq!(sample(&mut s, ms(40), 0), 4 * MS);
    assert_eq!(sample(&mut s, us(40_001), -7 * MS), -7 * MS);
    assert_eq!(s.counts().prev_window, 1);
    // It leaves the previous window once older than 80 ms.
    assert_eq!(sample(&mut s, ms(80), 0), 0);
    assert_eq!(s.counts().prev_window, 1);
    sample(&mut s, us(80_001), 0);
    assert_eq!(s.counts().prev_window, 0);
}

#[test]
fn tv8g_values_are_capped_at_10_ms() {
    let mut s = store();
    s.add(ms(0), 25 * MS);
    assert_eq!(sample(&mut s, ms(1), 0), 10 * MS);
    s.add(ms(1), -25 * MS);
    assert_eq!(s.tokens(), vec![dms(10)]);
}

#[test]
fn tv8h_fewer_packets_than_before_shrink_the_sample() {
    let mut s = store();
    for _ in 0..4 {
        s.add(ms(0), 4 * MS);
    }
    s.add(ms(45), 4 * MS);
    assert_eq!(s.counts(), StoreCounts { deltas: 1, tokens: 0, spent: 0, prev_window: 4 });
    assert_eq!(sample(&mut s, ms(45), 0), MS);
}

#[test]
fn shrinking_keeps_sub_ms_in_design_and_truncates_in_parity() {
    for (res, want) in [(Resolution::Ns, 3 * MS / 2), (Resolution::WholeMs, MS)] {
        let mut s = DeltaStore::new(&AckDelayerParams { resolution: res, ..Default::default() });
        s.add(ms(0), 3 * MS);
        s.add(ms(0), 3 * MS);
        s.add(ms(45), 3 * MS);
        assert_eq!(sample(&mut s, ms(45), 0), want, "{res:?}");
    }
}

/// TV9's sampler: `max(scripted, min)`.
fn scripted(v: i64) -> impl FnOnce(i64) -> i64 {
    move |min| v.max(min)
}

/// A scheduler whose previous ACK was released long ago (TV9's premise).
fn primed() -> ReleaseScheduler {
    let mut s = ReleaseScheduler::new(dms(10));
    s.on_ack(SimTime::ZERO, |_| unreachable!());
    s
}

const T0: u64 = 1_000_000; // µs: every TV9 time is offset by 1 s

#[test]
fn tv9a_bursts_accumulate_and_are_capped() {
    let mut s = primed();
    let got: Vec<SimTime> = [(0, 5), (1, 2), (2, 4), (20, 1)]
        .into_iter()
        .map(|(t, v)| s.on_ack(us(T0 + t * 1000), scripted(v * MS)))
        .collect();
    assert_eq!(got, [5, 8, 12, 21].map(|t| us(T0 + t * 1000)));
}

#[test]
fn tv9b_zero_deltas_keep_the_spacing() {
    let mut s = primed();
    let got: Vec<SimTime> =
        [(0, 3), (500, 0), (1000, 0)].into_iter().map(|(t, v)| s.on_ack(us(T0 + t), scripted(v * MS))).collect();
    assert_eq!(got, [3000, 3500, 4000].map(|t| us(T0 + t)));
}

#[test]
fn tv9c_the_first_ack_passes_at_once() {
    let mut s = ReleaseScheduler::new(dms(10));
    assert_eq!(s.on_ack(ms(7), |_| panic!("the first ACK draws nothing")), ms(7));
    // It initialised the state: the next one is a new burst from its own arrival.
    assert_eq!(s.on_ack(ms(8), scripted(2 * MS)), ms(10));
}

#[test]
fn the_minimum_offered_keeps_an_ack_behind_the_held_one() {
    let mut s = primed();
    assert_eq!(s.on_ack(ms(100), scripted(6 * MS)), ms(106));
    // Arriving 1 ms later with a held predecessor: the extra delay may shrink by at most the arrival
    // spacing; the minimum offered is exactly "release together with the previous ACK".
    let mut offered = 0;
    assert_eq!(
        s.on_ack(ms(101), |min| {
            offered = min;
            min
        }),
        ms(106)
    );
    assert_eq!(offered, -MS);
}

/// Release times never decrease, are never before the arrival and never add more than the cap, for
/// any arrivals and any store contents.
#[test]
fn releases_keep_order_and_the_cap() {
    for seed in 0..40 {
        let mut rng = Rng::derive(seed, "test/ack_order");
        let mut d = AckDelayer::new(&AckDelayerParams { warmup_ms: 0, ..Default::default() }, SimTime::ZERO, Rng::derive(seed, "d"));
        let (mut t, mut last) = (ms(1), SimTime::ZERO);
        let mut hold = Hold::new();
        for i in 0..2000u64 {
            t += SimDuration::from_us(rng.uniform_inclusive(3000) as u64);
            if rng.bernoulli(0.5) {
                let total_ms = rng.uniform_inclusive(60) as u64;
                let total = SimDuration::from_us(total_ms * 1000 + rng.uniform_inclusive(999) as u64);
                let p = Prediction { total, q_bytes: 1 + total_ms, q_long: total, q_short: SimDuration::ZERO, tx: SimDuration::ZERO };
                d.record_prediction(t, &p);
            }
            let at = d.on_uplink_ack(t);
            assert!(at >= t && at >= last && at <= t + dms(10), "seed {seed}: {at} after {last} for {t}");
            last = at;
            hold.push(at, i);
        }
        let mut released = vec![];
        while let Some(i) = hold.poll(SimTime::MAX) {
            released.push(i);
        }
        assert_eq!(released, (0..2000).collect::<Vec<_>>(), "each ACK exactly once, in order");
        assert!(d.stats().acks_delayed > 0, "seed {seed}: the store never delayed anything");
    }
}

fn pred(total_ms: u64, q_bytes: u64) -> Prediction {
    Prediction { total: dms(total_ms), q_bytes, q_long: dms(total_ms), q_short: SimDuration::ZERO, tx: SimDuration::ZERO }
}

#[test]
fn recording_rule_and_warm_up() {
    let mut d = AckDelayer::new(&AckDelayerParams::default(), SimTime::ZERO, Rng::derive(1, "ap/0/zhuge/delta_sampler"));
    // Up to and including t = 3 s nothing is recorded, and ACKs pass without delay.
    d.record_prediction(ms(3000), &pred(30, 9000));
    assert_eq!(d.store().counts().deltas, 0);
    assert!(!d.recording(ms(3000)) && d.recording(us(3_000_001)));
    assert_eq!(d.on_uplink_ack(ms(2000)), ms(2000));
    assert_eq!(d.on_uplink_ack(ms(2001)), ms(2001));
    // The first recorded delta is the first prediction itself (capped): 12 ms → 10.
    d.record_prediction(ms(3001), &pred(12, 3000));
    assert_eq!(d.store().counts().deltas, 1);
    // A decrease becomes a token.
    d.record_prediction(ms(3002), &pred(9, 2000));
    assert_eq!(d.store().tokens(), vec![dms(3)]);
    // Empty queue now, non-empty before: recorded (a decrease of 8 ms).
    d.record_prediction(ms(3003), &pred(1, 0));
    assert_eq!(d.store().tokens(), vec![dms(3), dms(8)]);
    // Empty queue now and before: skipped, but the totals move on.
    d.record_prediction(ms(3004), &pred(1, 0));
    assert_eq!(d.stats().skipped_idle, 1);
    d.record_prediction(ms(3005), &pred(2, 1500));
    assert_eq!(d.store().counts().deltas, 2);
    assert_eq!(d.stats().predictions, 5);
}

#[test]
fn downlink_segments_are_predicted_only_after_the_warm_up() {
    let mut ft = FortuneTeller::new(FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Tcp), SimTime::ZERO);
    let mut d = AckDelayer::new(&AckDelayerParams::default(), SimTime::ZERO, Rng::derive(1, "d"));
    assert!(d.on_downlink_data(ms(100), &mut ft).is_none());
    assert_eq!(ft.stats().predictions, 0);
    let mut link = SteadyLink::new(1500);
    link.run(&mut ft, 2800, 210);
    ft.on_enqueue(us(3_009_700), pkt(1, 15_000), Stage::Qdisc);
    let p = d.on_downlink_data(ms(3010), &mut ft).expect("after 3 s");
    // 16 500 B at 12 Mbit/s = 11 ms, plus 1 ms.
    assert_eq!(p.total, dms(12));
    assert_eq!(d.store().counts().deltas, 1);
    // A first ACK passes; the next one, 1 ms later, is a new burst and draws the only delta (10 ms cap).
    assert_eq!(d.on_uplink_ack(ms(3011)), ms(3011));
    assert_eq!(d.on_uplink_ack(ms(3012)), ms(3022));
}
