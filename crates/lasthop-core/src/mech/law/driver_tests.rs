//! Law's stages of the Linux path driven directly (the medium's part played by hand): the two-PSDU hardware,
//! Limit_q at push and on return, one software retransmission at the front of the hardware queue.

use super::*;
use crate::mech::law::State;
use crate::phy::mcs::{ChannelWidth, GuardInterval};
use crate::mac::txpath::testkit::Io;
use crate::mac::txpath::linux::LinuxParams;
use crate::mac::txpath::TransmitPath;

fn rates() -> Vec<TxVector> {
    (0..8).map(|m| TxVector::ht(m, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap()).collect()
}

fn path(law: LawParams, ampdu: bool) -> LinuxPath {
    let p = LawDriverParams { qos: true, ampdu, band: Band::Ghz5, airtime: AirtimeOptions::STANDARD, law, max_ampdu_bytes: 65_535, baw: 64 };
    let linux = LinuxParams::ath9k(true, ampdu, Band::Ghz5, AirtimeOptions::STANDARD);
    let mut path = law_path(p, rates(), linux, &mut crate::rng::Rng::derive(1, "fq")).unwrap();
    path.add_link(0, rates()[0], None);
    path
}

/// Law's controller of the path's first link.
fn control(p: &LinuxPath) -> &LawControl {
    p.own_driver().and_then(|d| d.as_any().downcast_ref::<LawDriver>()).expect("Law's driver").control(0)
}

fn pkt(id: u64, flow: u32, dscp: u8) -> Packet {
    Packet { id, flow, seq: id, size: 1500, src: 0, dst: 1, hop: 0, dscp, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

const BE: usize = AccessCategory::Be as usize;
const VO: usize = AccessCategory::Vo as usize;

fn ok(p: &mut LinuxPath, io: &mut Io, now: SimTime, ac: usize) -> Psdu {
    let psdu = p.head(now, ac, None, &mut io.out()).expect("a PSDU");
    let received = vec![true; psdu.mpdus.len()];
    p.complete(now, psdu.clone(), TxStatus { success: true, received: &received, attempts: 1 }, &mut io.out());
    psdu
}

fn fail(p: &mut LinuxPath, io: &mut Io, now: SimTime, ac: usize) -> Psdu {
    let psdu = p.head(now, ac, None, &mut io.out()).expect("a PSDU");
    let received = vec![false; psdu.mpdus.len()];
    p.complete(now, psdu.clone(), TxStatus { success: false, received: &received, attempts: 2 }, &mut io.out());
    psdu
}

/// At most two PSDUs in hardware over all ACs; the higher AC is served first when a slot frees; each
/// AC's head starts its Limit_h clock when it becomes the head, not before.
#[test]
fn two_psdus_across_all_acs_with_priority_and_head_clocks() {
    let mut p = path(LawParams::default(), false);
    let mut io = Io::new();
    let t = SimTime::from_us;
    for i in 0..5 {
        io.enqueue(&mut p, t(i), 0, BE, pkt(i, 0, 0));
    }
    assert_eq!(p.in_hardware(), 2);
    assert!(p.pending(BE) && !p.pending(VO));
    assert_eq!(p.hw_deadline(BE), Some(t(0) + SimDuration::from_ms(3)), "the first PSDU is the head since t = 0");
    io.enqueue(&mut p, t(10), 0, VO, pkt(5, 1, 46)); // EF → VO: no room in hardware
    assert!(!p.pending(VO));
    let first = ok(&mut p, &mut io, t(100), BE);
    assert_eq!(first.mpdus[0].pkt.id, 0);
    assert!(p.pending(VO), "the freed slot goes to VO");
    assert_eq!(p.in_hardware(), 2);
    assert_eq!(p.hw_deadline(VO), Some(t(100) + SimDuration::from_ms(3)));
    assert_eq!(p.hw_deadline(BE), Some(t(100) + SimDuration::from_ms(3)), "BE's second PSDU became the head at 100 µs");
    assert_eq!(io.log.stages[Stage::HwHead as usize][1], t(100).as_ns());
}

/// Limit_q is checked when a packet is about to be pushed into hardware: a sojourn of exactly
/// Limit_q passes, one nanosecond more is dropped (reason `deadline`) and sends the controller to
/// Cleanup.
#[test]
fn limit_q_drops_at_the_exact_sojourn() {
    let mut p = path(LawParams { hw_psdus: 1, ..LawParams::default() }, false);
    let mut io = Io::new();
    let q = SimDuration::from_ms(40);
    io.enqueue(&mut p, SimTime::ZERO, 0, BE, pkt(0, 0, 0)); // straight to hardware
    io.enqueue(&mut p, SimTime::ZERO, 0, BE, pkt(1, 0, 0));
    io.enqueue(&mut p, SimTime::from_ns(1), 0, BE, pkt(2, 0, 0));
    ok(&mut p, &mut io, SimTime::ZERO + q, BE);
    assert!(io.dropped.is_empty(), "packet 1's sojourn is exactly Limit_q");
    assert_eq!(control(&p).state(), State::Stable);
    let second = ok(&mut p, &mut io, SimTime::ZERO + q + SimDuration::from_ns(2), BE);
    assert_eq!(second.mpdus[0].pkt.id, 1);
    assert_eq!(io.dropped.len(), 1);
    assert_eq!((io.dropped[0].0.id, io.dropped[0].1), (2, DropReason::Deadline), "Limit_q + 1 ns");
    assert_eq!(control(&p).state(), State::Cleanup);
    assert!(!p.pending(BE));
}

/// A failed PSDU goes straight back to the *front* of its hardware queue (ahead of the PSDU that
/// waited behind it) at a re-selected, slower rate with a fresh Limit_h; a second failure drops the
/// packet (one software retransmission), and the receiver's window is released past it.
#[test]
fn one_software_retransmission_at_the_front_then_drop() {
    let mut p = path(LawParams { initial_rate_index: 5, ..LawParams::default() }, false);
    let mut io = Io::new();
    let t = SimTime::from_us;
    io.enqueue(&mut p, t(0), 0, BE, pkt(0, 0, 0));
    io.enqueue(&mut p, t(0), 0, BE, pkt(1, 0, 0));
    let first = fail(&mut p, &mut io, t(500), BE);
    assert_eq!(first.chain.get(0).unwrap().0.mcs, 5);
    assert_eq!(first.chain.get(0).unwrap().1, 16, "Stable: 16 hardware tries, Limit_h bounds them");
    assert_eq!(p.in_hardware(), 2);
    assert_eq!(p.hw_deadline(BE), Some(t(500) + SimDuration::from_ms(3)));
    let again = p.head(t(600), BE, None, &mut io.out()).unwrap();
    assert_eq!(again.mpdus[0].pkt.id, 0, "the retransmission is ahead of packet 1");
    assert_eq!(again.chain.get(0).unwrap().0.mcs, 4, "re-selected one index down (nothing measured below)");
    let received = [false];
    p.complete(t(900), again, TxStatus { success: false, received: &received, attempts: 16 }, &mut io.out());
    assert_eq!(io.dropped.len(), 1);
    assert_eq!((io.dropped[0].0.id, io.dropped[0].1), (0, DropReason::RetryLimit));
    assert_eq!(io.releases, vec![(0, BE, 1)], "the window moves past seq 0");
    let next = ok(&mut p, &mut io, t(1000), BE);
    assert_eq!(next.mpdus[0].pkt.id, 1);
    assert_eq!(control(&p).stats().sw_retransmissions, 1);
}

/// A packet the hardware returns after Limit_q is dropped (reason `deadline`), not retransmitted.
#[test]
fn returned_over_limit_q_is_dropped() {
    let mut p = path(LawParams::default(), false);
    let mut io = Io::new();
    io.enqueue(&mut p, SimTime::ZERO, 0, BE, pkt(0, 0, 0));
    fail(&mut p, &mut io, SimTime::from_ms(41), BE);
    assert_eq!(io.dropped.len(), 1);
    assert_eq!(io.dropped[0].1, DropReason::Deadline);
    assert_eq!(control(&p).state(), State::Cleanup);
    assert_eq!(p.in_hardware(), 0);
}

/// A-MPDUs form from the driver queue up to Limit_h of airtime at the chosen rate; a retransmission
/// at a slower rate carries what fits and the rest waits at the head of the queue, ahead of new packets.
#[test]
fn aggregates_fit_limit_h_and_a_slower_retransmission_splits() {
    let mut p = path(LawParams { initial_rate_index: 7, hw_psdus: 1, ..LawParams::default() }, true);
    let mut io = Io::new();
    for i in 0..40 {
        io.enqueue(&mut p, SimTime::ZERO, 0, BE, pkt(i, 0, 0));
    }
    let first = p.head(SimTime::from_us(10), BE, None, &mut io.out()).unwrap();
    assert_eq!(first.mpdus.len(), 1, "the first packet found an idle hardware");
    p.complete(SimTime::from_us(300), first, TxStatus { success: true, received: &[true], attempts: 1 }, &mut io.out());
    let agg = p.head(SimTime::from_us(310), BE, None, &mut io.out()).unwrap();
    let mcs7 = agg.chain.get(0).unwrap().0;
    let d = ppdu_duration_with(&mcs7, agg.psdu_len, Band::Ghz5, AirtimeOptions::STANDARD);
    assert!(agg.aggregated && agg.mpdus.len() > 8 && agg.mpdus.len() < 32, "{}", agg.mpdus.len());
    assert!(d <= SimDuration::from_ms(3), "{d}");
    let n = agg.mpdus.len();
    let received = vec![false; n];
    p.complete(SimTime::from_ms(2), agg.clone(), TxStatus { success: false, received: &received, attempts: 3 }, &mut io.out());
    let retx = p.head(SimTime::from_ms(2), BE, None, &mut io.out()).unwrap();
    assert!(retx.mpdus.len() < n, "MCS6 cannot carry all {n} MPDUs within Limit_h");
    assert_eq!(retx.mpdus[0].seq, agg.mpdus[0].seq);
    let r = vec![true; retx.mpdus.len()];
    let k = retx.mpdus.len();
    p.complete(SimTime::from_ms(4), retx, TxStatus { success: true, received: &r, attempts: 1 }, &mut io.out());
    let rest = p.head(SimTime::from_ms(4), BE, None, &mut io.out()).unwrap();
    assert_eq!(rest.mpdus[0].seq, agg.mpdus[k].seq, "the left-over MPDUs lead the next PSDU");
    assert_eq!(p.stats()["driver"]["split_retransmissions"], 1);
}
