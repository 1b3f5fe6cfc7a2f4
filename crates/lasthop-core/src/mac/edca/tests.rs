//! Timeline tests: each draws the medium in µs and checks where the backoff ends.

use super::*;

const SLOT: SimDuration = SimDuration::from_us(9);
const SIFS: SimDuration = SimDuration::from_us(16);

fn us(t: u64) -> SimTime {
    SimTime::from_us(t)
}

fn be(qos: bool) -> Edcaf {
    let p = EdcaParams { aifsn: 3, cw_min: 15, cw_max: 1023, txop_limit: SimDuration::ZERO };
    let mut e = Edcaf::new(p, qos, 7, &mut Rng::derive(1, "t"));
    e.slots = 0;
    e
}

/// ```text
///  busy ████████ 0..100 µs
///  idle          |SIFS 16|AIFSN·slot 27| 5 slots = 45 |
///                100     116           143            188 → grant
/// ```
#[test]
fn uninterrupted_countdown_ends_after_aifs_plus_b_slots() {
    let mut e = be(true);
    e.slots = 5;
    e.access = Access::Requested;
    let grant = us(100) + SIFS;
    assert_eq!(e.backoff_end(grant, SLOT), us(188));
}

/// ```text
///  busy ████ 0..100        ████ 150..300 (another station)
///  BE        |16|27|9|9|9|··  frozen at 150: 143 + 7 µs → 0 full slots elapsed
///  EDCA counts the boundary at 143 → 1 consumed (b: 5 → 4); DCF consumes 0.
///  resume     300 |16|27| 4 slots → 379
/// ```
#[test]
fn freeze_and_resume_with_the_edca_extra_count() {
    for (qos, left, end) in [(true, 4, 379), (false, 5, 388)] {
        let mut e = be(qos);
        e.slots = 5;
        e.access = Access::Requested;
        e.freeze(us(150), us(116), SLOT);
        assert_eq!(e.backoff_slots(), left, "qos={qos}");
        assert_eq!(e.backoff_end(us(300) + SIFS, SLOT), us(end), "qos={qos}");
    }
}

/// ```text
///  busy ████ 0..100                     █ 170 (3 slots after AIFS end 143 = 170)
///  EDCA: floor(27/9)=3 (+1) = 4 consumed; DCF: 3 consumed
/// ```
#[test]
fn freeze_on_a_slot_boundary() {
    for (qos, left) in [(true, 6), (false, 7)] {
        let mut e = be(qos);
        e.slots = 10;
        e.freeze(us(170), us(116), SLOT);
        assert_eq!(e.backoff_slots(), left);
    }
}

/// A frame arriving long after the medium went idle, with no backoff pending, goes at the next slot
/// boundary of the grid (EDCA) or at once (DCF).
/// ```text
///  busy ████ 0..100 |16|27| grid 143, 152, 161, 170 ...
///  arrival at 165 µs → EDCA 170, DCF 165
/// ```
#[test]
fn arrival_to_idle_medium_with_zero_backoff() {
    for (qos, at) in [(true, 170), (false, 165)] {
        let mut e = be(qos);
        e.request(us(165), true, Some(us(116)), SLOT, &mut Rng::derive(1, "x"));
        assert_eq!(e.backoff_end(us(116), SLOT), us(at), "qos={qos}");
    }
}

#[test]
fn arrival_to_busy_medium_draws_a_backoff() {
    let mut rng = Rng::derive(3, "x");
    let mut seen_nonzero = false;
    for _ in 0..50 {
        let mut e = be(true);
        e.request(us(10), true, None, SLOT, &mut rng);
        assert!(e.backoff_slots() <= 15);
        seen_nonzero |= e.backoff_slots() > 0;
    }
    assert!(seen_nonzero);
}

#[test]
fn cw_doubles_up_to_cwmax_and_resets_at_the_retry_limit() {
    let mut rng = Rng::derive(1, "cw");
    let p = EdcaParams { aifsn: 3, cw_min: 15, cw_max: 1023, txop_limit: SimDuration::ZERO };
    let mut e = Edcaf::new(p, true, 7, &mut rng);
    let mut seq = vec![];
    for _ in 0..8 {
        e.end_txop(us(0), false, &mut rng);
        seq.push(e.cw());
    }
    assert_eq!(seq, vec![31, 63, 127, 255, 511, 1023, 15, 31]);
    e.end_txop(us(0), true, &mut rng);
    assert_eq!(e.cw(), 15);
    // A small CWmax caps the growth (hostapd VO: 3..7).
    let mut vo = Edcaf::new(EdcaParams { aifsn: 2, cw_min: 3, cw_max: 7, txop_limit: SimDuration::ZERO }, true, 7, &mut rng);
    vo.internal_collision(us(0), &mut rng);
    vo.internal_collision(us(0), &mut rng);
    assert_eq!(vo.cw(), 7);
}

/// The `ns3` profile's rule (802.11-2020 §10.23.2.2, ns-3 3.44 `Txop::UpdateFailedCw`, FrameRetryLimit
/// 7): QSRC stops at 7 with CW at CWmax, the 8th consecutive failure resets, the 9th doubles again.
/// ns-3's CW trace at N = 50 (A-MPDU: a data failure then BlockAckReq failures) shows the same sequence.
#[test]
fn ns3_qsrc_stops_at_the_frame_retry_limit_and_the_next_failure_resets() {
    let mut rng = Rng::derive(1, "cw");
    let p = EdcaParams { aifsn: 3, cw_min: 15, cw_max: 1023, txop_limit: SimDuration::ZERO };
    let mut e = Edcaf::new(p, true, 8, &mut rng);
    let seq: Vec<u32> = (0..10)
        .map(|_| {
            e.end_txop(us(0), false, &mut rng);
            e.cw()
        })
        .collect();
    assert_eq!(seq, vec![31, 63, 127, 255, 511, 1023, 1023, 15, 31, 63]);
    // A success in between starts the count again.
    e.end_txop(us(0), true, &mut rng);
    for _ in 0..7 {
        e.end_txop(us(0), false, &mut rng);
    }
    assert_eq!(e.cw(), 1023);
}

#[test]
fn post_backoff_counts_from_txop_end() {
    let mut rng = Rng::derive(9, "pb");
    let mut e = be(true);
    e.end_txop(us(500), true, &mut rng);
    let b = e.backoff_slots() as u64;
    // Idle from 500: grant 516, AIFS end 543.
    assert_eq!(e.backoff_end(us(516), SLOT), us(543 + 9 * b));
}

#[test]
fn up_and_ac_mapping_follow_linux() {
    assert_eq!(AccessCategory::from_user_priority(dscp_to_user_priority(46)), AccessCategory::Vo); // EF
    assert_eq!(AccessCategory::from_user_priority(dscp_to_user_priority(34)), AccessCategory::Vi); // AF41
    assert_eq!(AccessCategory::from_user_priority(dscp_to_user_priority(8)), AccessCategory::Bk); // CS1
    assert_eq!(AccessCategory::from_user_priority(dscp_to_user_priority(0)), AccessCategory::Be);
    assert_eq!(AccessCategory::from_user_priority(dscp_to_user_priority(18)), AccessCategory::Be); // AF21 → 3
    assert_eq!(AccessCategory::from_user_priority(dscp_to_user_priority(24)), AccessCategory::Vi); // CS3 → 4
}

/// A post-backoff that ran out during a long idle period does not delay a later frame: EDCA sends at the
/// next slot boundary, DCF at once.
/// ```text
///  busy ████ 0..100 |16|27| 3 slots post-backoff → 170; idle ...
///  arrival at 500 µs → EDCA: grid 143 + 9k ≥ 500 → 503; DCF: 500
/// ```
#[test]
fn expired_post_backoff_sends_at_the_next_boundary() {
    for (qos, at) in [(true, 503), (false, 500)] {
        let mut rng = Rng::derive(1, "x");
        let mut e = be(qos);
        e.slots = 3;
        e.b_start = us(100);
        e.request(us(500), true, Some(us(116)), SLOT, &mut rng);
        assert_eq!(e.backoff_slots(), 0);
        assert_eq!(e.backoff_end(us(116), SLOT), us(at), "qos={qos}");
    }
}
