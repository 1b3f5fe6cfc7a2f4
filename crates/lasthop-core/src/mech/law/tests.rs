//! Script tests of Law's controller: scripted reports in, state and decisions out. No engine.

use super::*;
use crate::phy::{ChannelWidth, GuardInterval, TxVector};
use crate::time::{SimDuration, SimTime};

fn rates() -> Vec<TxVector> {
    // Given out of order on purpose: the controller sorts by data rate.
    (0..8u8).rev().map(|m| TxVector::ht(m, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap()).collect()
}

fn ctl_at(rate: u8) -> LawControl {
    LawControl::new(&LawParams { initial_rate_index: rate, ..LawParams::default() }, rates()).unwrap()
}

fn t(ms: u64) -> SimTime {
    SimTime::from_ms(ms)
}

/// One single-MPDU software transmission at `rate`, first or retransmission.
fn report(rate: usize, tx_us: u64, ok: bool, sw_tx: u32, probe: Option<ProbeTag>) -> SwTxReport {
    SwTxReport { rate, tx_time: SimDuration::from_us(tx_us), mpdus: 1, acked: ok as u32, sw_tx, probe }
}

/// `n` first-time successes at the current rate, each delivered.
fn successes(c: &mut LawControl, now: SimTime, n: u32, tx_us: u64) {
    for _ in 0..n {
        let p = c.plan_first();
        c.on_report(now, &report(p.rate, tx_us, true, 1, p.probe));
        c.on_delivered();
    }
}

#[test]
fn rates_are_sorted_and_the_start_is_the_slowest_by_default() {
    let c = LawControl::new(&LawParams::default(), rates()).unwrap();
    assert_eq!(c.rates()[0].mcs, 0);
    assert_eq!(c.rates()[7].mcs, 7);
    assert_eq!((c.rate(), c.state()), (0, State::Stable));
    assert!(LawControl::new(&LawParams::default(), Vec::new()).is_err());
    assert!(LawControl::new(&LawParams { limit_h_ms: 0.0, ..LawParams::default() }, rates()).is_err());
}

/// Eq. 1 by hand: Limit_q 40 ms. One delivered MPDU in 1 ms: T_n = 1 ms, S_n = 1 → Len_max = 40. One
/// failed in 3 ms: T_n = 0.75·1 + 0.25·3 = 1.5 ms, S_n = 0.75 → 40 · 0.75 / 1.5 = 20. An A-MPDU of 4
/// (3 acked) in 2 ms counts 0.5 ms and 0.75 per MPDU: T_n = 0.75·1.5 + 0.25·0.5 = 1.25 ms,
/// S_n = 0.75 → 24.
#[test]
fn len_max_follows_eq1() {
    let mut c = ctl_at(3);
    assert!(c.len_max().is_infinite(), "no samples yet");
    c.on_report(t(1), &report(3, 1000, true, 1, None));
    assert!((c.len_max() - 40.0).abs() < 1e-9, "{}", c.len_max());
    c.on_report(t(2), &report(3, 3000, false, 1, None));
    let (tn, sn) = c.global();
    assert!((tn.unwrap() - 1.5e6).abs() < 1e-6 && (sn.unwrap() - 0.75).abs() < 1e-12);
    assert!((c.len_max() - 20.0).abs() < 1e-9, "{}", c.len_max());
    c.on_report(t(3), &SwTxReport { rate: 3, tx_time: SimDuration::from_ms(2), mpdus: 4, acked: 3, sw_tx: 1, probe: None });
    assert!((c.len_max() - 24.0).abs() < 1e-9, "{}", c.len_max());
    let (ti, si) = c.rate_stats(3);
    assert!((ti.unwrap() - 1.25e6).abs() < 1e-6 && (si.unwrap() - 0.75).abs() < 1e-12);
    assert_eq!(c.rate_stats(2), (None, None), "only the rate used is updated");
}

/// Eq. 2 by hand with the index counted from 1: MCS3 → 4, so Thr_p = 5·4 = 20; after one failed probe
/// (N_prob = 1) 40; in Cleanup N_prob is ignored: 20 again.
#[test]
fn thr_p_follows_eq2() {
    let mut c = ctl_at(3);
    assert_eq!(c.thr_p(), 20);
    successes(&mut c, t(1), 20, 100); // T_3 = 100 µs
    assert_eq!(c.state(), State::Probing);
    // Both probe packets slower than T_3: condition 2 fails → N_prob = 1.
    for _ in 0..2 {
        let p = c.plan_first();
        c.on_report(t(2), &report(p.rate, 500, true, 1, p.probe));
        c.on_delivered();
    }
    assert_eq!((c.state(), c.rate(), c.counters().2), (State::Stable, 3, 1));
    assert_eq!(c.thr_p(), 40);
    c.on_deadline_drop(t(3), None);
    assert_eq!((c.state(), c.thr_p()), (State::Cleanup, 20));
}

/// Algorithm 1: more packets in the driver than Len_max at enqueue → Cleanup with Rate_prev = Rate; a
/// push with fewer than Len_max → Stable, Rate = Rate_prev. Equal to Len_max changes nothing.
#[test]
fn queue_length_enters_and_leaves_cleanup() {
    let mut c = ctl_at(5);
    c.on_report(t(1), &report(5, 1000, true, 1, None)); // Len_max = 40
    c.on_enqueue(t(2), 40);
    assert_eq!(c.state(), State::Stable, "40 is not above Len_max");
    c.on_enqueue(t(2), 41);
    assert_eq!((c.state(), c.rate_prev()), (State::Cleanup, 5));
    assert_eq!(c.plan_first().hw_tries, 2, "two hardware transmissions per software one");
    c.on_push(t(3), 40);
    assert_eq!(c.state(), State::Cleanup, "40 is not below Len_max");
    c.on_hw_return(t(4), 39);
    assert_eq!((c.state(), c.rate()), (State::Stable, 5));
    assert_eq!(c.plan_first().hw_tries, 16);
    assert_eq!(c.stats().cleanups, 1);
}

/// Algorithm 1, line 4: a packet over Limit_q enters Cleanup even with a short queue; Rate_prev is set
/// on every trigger (literally), so a step made in Cleanup survives a second trigger.
#[test]
fn deadline_drop_enters_cleanup_and_rate_prev_tracks_every_trigger() {
    let mut c = ctl_at(6);
    c.on_report(t(1), &report(6, 200, true, 1, None));
    c.on_deadline_drop(t(2), None);
    assert_eq!((c.state(), c.rate_prev()), (State::Cleanup, 6));
    // Two transmission losses in a row: one index down.
    c.lost(t(3), Loss::TxFailed, None);
    assert_eq!(c.rate(), 6);
    c.lost(t(3), Loss::TxFailed, None);
    assert_eq!(c.rate(), 5);
    c.on_deadline_drop(t(4), None);
    assert_eq!(c.rate_prev(), 5);
    c.on_push(t(5), 0);
    assert_eq!((c.state(), c.rate()), (State::Stable, 5));
}

/// Cleanup rules: no software retransmission; two consecutive *transmission* losses turn the rate down
/// (Limit_q drops and a delivery in between do not count); N_suc reaching 5·index turns it up.
#[test]
fn cleanup_steps_the_rate_down_on_two_drops_and_up_on_thr_p() {
    let mut c = ctl_at(4);
    c.on_deadline_drop(t(1), None);
    assert!(!c.may_retransmit(1), "no software retransmission in Cleanup");
    c.lost(t(2), Loss::TxFailed, None);
    c.on_delivered();
    c.lost(t(2), Loss::TxFailed, None);
    assert_eq!(c.rate(), 4, "not consecutive");
    c.lost(t(2), Loss::Deadline, None);
    assert_eq!(c.rate(), 4, "a stale packet says nothing about the rate");
    c.lost(t(2), Loss::TxFailed, None);
    assert_eq!(c.rate(), 3);
    // Thr_p at MCS3 (index 4) in Cleanup = 20 consecutive successes.
    successes(&mut c, t(3), 19, 300);
    assert_eq!(c.rate(), 3);
    successes(&mut c, t(3), 1, 300);
    assert_eq!((c.rate(), c.state()), (4, State::Cleanup));
    assert_eq!(c.counters().0, 0, "a new rate resets N_suc");
}

/// §3.4 "handling loss pattern": after three consecutive losses the current packet gets one more
/// software retransmission — in Stable a second one, in Cleanup a first one. A delivery ends the run.
#[test]
fn three_consecutive_losses_grant_one_more_retransmission() {
    let mut c = ctl_at(4);
    assert!(c.may_retransmit(1));
    assert!(!c.may_retransmit(2), "one software retransmission by default");
    for _ in 0..2 {
        c.lost(t(1), Loss::TxFailed, None);
    }
    assert!(!c.may_retransmit(2), "two losses are not enough");
    c.lost(t(1), Loss::Deadline, None);
    assert!(c.may_retransmit(2), "three consecutive losses of any kind");
    assert!(!c.may_retransmit(3), "exactly one more");
    assert_eq!(c.stats().extra_retransmissions, 1);
    c.on_deadline_drop(t(2), None);
    assert_eq!(c.state(), State::Cleanup);
    assert!(c.may_retransmit(1), "Cleanup: 0 + 1");
    assert!(!c.may_retransmit(2));
    c.on_delivered();
    assert!(!c.may_retransmit(1), "the run is over");
}

/// Probing: after Thr_p successes two packets go out at the next rate and every other packet keeps the
/// current one; both delivered at their first attempt and faster than T_i → the new rate, counters
/// reset. The retransmission of a failed probe packet uses Rate_min below the probed rate.
#[test]
fn probe_success_adopts_the_higher_rate() {
    let mut c = ctl_at(2); // Thr_p = 15
    successes(&mut c, t(1), 14, 400);
    assert_eq!(c.state(), State::Stable);
    successes(&mut c, t(1), 1, 400);
    assert_eq!(c.state(), State::Probing);
    let a = c.plan_first();
    let b = c.plan_first();
    let other = c.plan_first();
    assert_eq!((a.rate, b.rate, other.rate), (3, 3, 2));
    assert!(a.probe.is_some() && b.probe.is_some() && other.probe.is_none());
    assert_ne!(a.probe, b.probe);
    c.on_report(t(2), &report(3, 300, true, 1, a.probe));
    c.on_delivered();
    assert_eq!(c.state(), State::Probing, "one of two settled");
    // The second probe packet fails once, is retransmitted below the probed rate, then delivered.
    c.on_report(t(2), &report(3, 350, false, 1, b.probe));
    assert!(c.may_retransmit(1));
    let r = c.plan_retransmission(3);
    assert_eq!(r.rate, 2, "Rate_min below MCS3 is the only measured rate, MCS2");
    c.on_report(t(2), &report(r.rate, 150, true, 2, b.probe));
    c.on_delivered();
    // avg = (300 + 350 + 150) / 2 = 400 µs, not below T_2 (400 µs; 337.5 after the retransmission's
    // own sample) → failed probe.
    assert_eq!((c.state(), c.rate(), c.counters().2), (State::Stable, 2, 1));

    let mut c = ctl_at(2);
    successes(&mut c, t(1), 15, 400);
    let (a, b) = (c.plan_first(), c.plan_first());
    c.on_report(t(2), &report(3, 300, true, 1, a.probe));
    c.on_report(t(2), &report(3, 320, true, 1, b.probe));
    assert_eq!((c.state(), c.rate()), (State::Stable, 3));
    assert_eq!(c.counters(), (0, 0, 0));
    assert_eq!(c.stats().probes_succeeded, 1);
}

/// Condition 1 of probing: a lost probe packet, or both probe packets needing a software
/// retransmission, fail the probe even when they were fast.
#[test]
fn probe_fails_on_a_loss_or_without_a_first_time_success() {
    // A lost probe packet.
    let mut c = ctl_at(2);
    successes(&mut c, t(1), 15, 400);
    let (a, b) = (c.plan_first(), c.plan_first());
    c.on_report(t(2), &report(3, 100, true, 1, a.probe));
    c.on_report(t(2), &report(3, 100, false, 1, b.probe));
    c.lost(t(2), Loss::TxFailed, b.probe);
    assert_eq!((c.state(), c.rate(), c.counters().2), (State::Stable, 2, 1));
    // Both delivered, fast, but only after a software retransmission each.
    let mut c = ctl_at(2);
    successes(&mut c, t(1), 15, 400);
    let (a, b) = (c.plan_first(), c.plan_first());
    for p in [a, b] {
        c.on_report(t(2), &report(3, 50, false, 1, p.probe));
        c.on_report(t(2), &report(2, 50, true, 2, p.probe));
    }
    assert_eq!((c.state(), c.rate(), c.counters().2), (State::Stable, 2, 1));
    // A Limit_q drop while probing abandons the probe and enters Cleanup.
    let mut c = ctl_at(2);
    successes(&mut c, t(1), 15, 400);
    let a = c.plan_first();
    c.on_deadline_drop(t(2), None);
    c.on_report(t(3), &report(3, 50, false, 1, a.probe));
    c.lost(t(3), Loss::TxFailed, a.probe);
    assert_eq!((c.state(), c.rate(), c.counters().2), (State::Cleanup, 2, 0), "a stale probe is not counted");
    assert_eq!(c.stats().probes_succeeded, 0);
}

/// Stable adaptation: a retransmission goes out at Rate_min among the slower measured rates (one index
/// down if none is measured); an isolated one leaves *Rate* alone (a first-time success resets N_ret),
/// two in a row (N_ret = 2) move *Rate* itself down to Rate_min below it.
#[test]
fn stable_reselects_retransmissions_and_steps_down_after_two() {
    let mut c = ctl_at(5);
    assert_eq!(c.plan_retransmission(5).rate, 4, "nothing measured below: one index down");
    assert_eq!(c.rate(), 5);
    c.on_report(t(1), &report(4, 700, true, 2, None)); // T_4 = 700 µs (the retransmission)
    c.on_report(t(1), &report(3, 500, true, 1, None)); // T_3 = 500 µs
    c.on_report(t(1), &report(5, 300, true, 1, None)); // a first-time success: N_ret = 0
    assert_eq!(c.counters().1, 0);
    c.on_report(t(2), &report(5, 3000, false, 1, None));
    assert_eq!(c.plan_retransmission(5).rate, 3, "Rate_min below MCS5 is MCS3 (500 < 700 µs)");
    assert_eq!(c.rate(), 5, "one retransmission is not enough");
    c.on_report(t(3), &report(5, 3000, false, 1, None));
    assert_eq!(c.plan_retransmission(5).rate, 3);
    assert_eq!((c.rate(), c.counters()), (3, (0, 0, 0)), "N_ret = 2: Rate follows Rate_min down");
    assert_eq!(c.plan_retransmission(0).rate, 0);
}

/// Condition 2 compares per-MPDU TX times: two A-MPDU probes of 8 MPDUs in 1.6 ms each (200 µs per
/// MPDU) beat T_i = 400 µs although each PSDU took 1.6 ms.
#[test]
fn probe_tx_time_is_per_mpdu() {
    let mut c = ctl_at(2);
    successes(&mut c, t(1), 15, 400);
    let (a, b) = (c.plan_first(), c.plan_first());
    for p in [a, b] {
        c.on_report(t(2), &SwTxReport { rate: 3, tx_time: SimDuration::from_us(1600), mpdus: 8, acked: 8, sw_tx: 1, probe: p.probe });
    }
    assert_eq!((c.state(), c.rate()), (State::Stable, 3));
}
