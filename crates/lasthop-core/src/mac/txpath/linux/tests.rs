//! Unit tests of the Linux path: aggregation, software retries, rate-control hooks, AQL, and the
//! driver policy's priority path.

use super::*;
use crate::phy::airtime::AirtimeOptions;
use crate::phy::mcs::{Band, ChannelWidth, GuardInterval};
use crate::mac::txpath::gate::ReleasePoint;
use crate::mac::txpath::testkit::Io;
use crate::stats::PacketLog;

fn params(hw_depth_aggr: usize) -> LinuxParams {
    LinuxParams { hw_depth_aggr, ..LinuxParams::ath9k(true, true, Band::Ghz5, AirtimeOptions::STANDARD) }
}

fn pkt(id: u64) -> Packet {
    Packet { id, flow: 0, seq: id, size: 1500, src: 0, dst: 1, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

/// A packet arriving to an idle driver goes out alone; packets that queue meanwhile form A-MPDUs of
/// at most 32; a subframe missing from a BlockAck is retried first, in order; and the driver stops
/// at the BlockAck window without spinning.
#[test]
fn aggregation_retries_and_the_blockack_window() {
    let mut p = LinuxPath::new(LinuxParams { hw_depth_single: 1, hw_depth_aggr: 1, ..params(1) }, &mut Rng::derive(1, "fq"));
    p.add_link(0, TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), None);
    let mut log = PacketLog::new(true);
    let (mut dropped, mut releases) = (Vec::new(), Vec::new());
    let be = AccessCategory::Be as usize;
    let t = SimTime::from_us;
    for i in 0..100 {
        log.open(&pkt(i));
        let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
        p.enqueue(t(i), 0, be, pkt(i), &mut out);
    }
    let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
    let first = p.head(t(200), be, None, &mut out).unwrap();
    assert_eq!((first.mpdus.len(), first.aggregated), (1, false), "the first packet went alone");
    p.complete(t(300), first, TxStatus { success: true, received: &[true], attempts: 1 }, &mut out);
    let agg = p.head(t(400), be, None, &mut out).unwrap();
    assert!(agg.aggregated && agg.mpdus.len() > 1 && agg.mpdus.len() <= 32, "{}", agg.mpdus.len());
    let n = agg.mpdus.len();
    let mut received = vec![true; n];
    received[3] = false;
    p.complete(t(5000), agg, TxStatus { success: true, received: &received, attempts: 1 }, &mut out);
    let next = p.head(t(5100), be, None, &mut out).unwrap();
    let seqs: Vec<u64> = next.mpdus.iter().map(|m| m.seq).collect();
    assert_eq!(seqs[0], 4, "the missing subframe (seq 4) leads the next A-MPDU: {seqs:?}");
    assert!(seqs.windows(2).skip(1).all(|w| w[1] == w[0] + 1));
    assert!(dropped.is_empty());
    // Never complete `next`: the window (64 from seq 4) caps what the driver may form.
    let mut big = LinuxPath::new(LinuxParams { hw_depth_single: 100, hw_depth_aggr: 100, ..params(100) }, &mut Rng::derive(1, "fq"));
    big.add_link(0, TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), None);
    for i in 0..200 {
        log.open(&pkt(100 + i));
        let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
        big.enqueue(t(i), 0, be, pkt(100 + i), &mut out);
    }
    let queued: usize = big.hwq[be].iter().map(|x| x.mpdus.len()).sum();
    assert_eq!(queued, 64, "one BlockAck window");
}

/// A subframe missing from a BlockAck waits in its TXQ's retry queue while the airtime scheduler
/// serves another station; a driver policy sees it there as its flow's oldest packet (LAST-PQ's
/// `urgent_retries`).
#[test]
fn a_policy_sees_the_subframes_awaiting_a_retry() {
    let mut p = LinuxPath::new(LinuxParams { hw_depth_single: 1, hw_depth_aggr: 1, ..params(1) }, &mut Rng::derive(1, "fq"));
    let txv = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    p.add_link(0, txv, None);
    p.add_link(1, txv, None);
    let mut log = PacketLog::new(true);
    let (mut dropped, mut releases) = (Vec::new(), Vec::new());
    let be = AccessCategory::Be as usize;
    let t = SimTime::from_us;
    for i in 0..80 {
        let pk = Packet { flow: (i % 2) as u32, dst: 1 + (i % 2) as u16, ..pkt(i) };
        log.open(&pk);
        let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
        p.enqueue(t(i), (i % 2) as usize, be, pk, &mut out);
    }
    let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
    let view = |p: &LinuxPath, flow: u32, li: usize| {
        View { fq: &p.fq, dedicated: &p.dedicated, afs: &p.afs, links: &p.links, gate_hold: SimDuration::ZERO }.flow_retry_head(flow, li, be)
    };
    // Lose one subframe of each PSDU until the freed slot goes to the other station (while it goes to
    // the same one, the retry leaves at once).
    for k in 0..6 {
        let psdu = p.head(t(1000 * (k + 1)), be, None, &mut out).unwrap();
        let li = p.links.iter().position(|l| l.id == psdu.link).unwrap();
        let mut received = vec![true; psdu.mpdus.len()];
        let aggregate = psdu.mpdus.len() > 2; // the first packet went out alone
        let mid = received.len() / 2;
        let lost = psdu.mpdus[mid].pkt;
        received[mid] = !aggregate;
        p.complete(t(1000 * (k + 1) + 500), psdu, TxStatus { success: true, received: &received, attempts: 1 }, &mut out);
        if !aggregate {
            continue;
        }
        if p.hwq[be].front().expect("refilled").link != p.links[li].id {
            assert_eq!(view(&p, lost.flow, li), Some(lost.enqueued), "waits for a retry while the other station is served");
            assert_eq!(view(&p, lost.flow, 1 - li), None, "not in the other station's TXQ");
            return;
        }
    }
    panic!("the scheduler never served the other station after a loss");
}

/// The rate controller's hooks (LLRA): it sees the channel-access delay of the last PSDU (head of
/// the hardware queue → first attempt) before the next PSDU is formed, and its software-retry
/// deadline turns a failed subframe that is too old into a `deadline` drop instead of a retry.
#[test]
fn rate_control_hooks_see_access_delay_and_drop_late_retries() {
    use crate::ratectl::{LinkRates, LlraParams, RateControlParams};
    use crate::phy::mcs::PhyStandard;
    let link = LinkRates::new(PhyStandard::Ht, ChannelWidth::Mhz20, &[GuardInterval::Ns800], 1, Band::Ghz5);
    let rc = RateControlParams::Llra(LlraParams { delay_budget_ms: 5.0, ..LlraParams::default() }).build(&link, Rng::derive(1, "rc"), SimTime::ZERO).unwrap();
    let mut p = LinuxPath::new(LinuxParams { hw_depth_single: 1, hw_depth_aggr: 1, ..params(1) }, &mut Rng::derive(1, "fq"));
    p.add_link(0, TxVector::ht(0, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), Some(rc));
    let mut log = PacketLog::new(true);
    let (mut dropped, mut releases) = (Vec::new(), Vec::new());
    let be = AccessCategory::Be as usize;
    let t = SimTime::from_us;
    let t_acc = |p: &LinuxPath| p.links[0].rc.as_ref().unwrap().stats()["t_acc_us"].as_f64().unwrap();
    for i in 0..20 {
        log.open(&pkt(i));
        let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
        p.enqueue(t(0), 0, be, pkt(i), &mut out);
    }
    let before = t_acc(&p);
    let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
    // LLRA's first PSDU is a probe, which ath9k does not count in the AC's A-MPDU depth: a second,
    // one-subframe PSDU of the BlockAck session was formed at once and fills the depth of 1.
    let first = p.head(t(1000), be, None, &mut out).unwrap();
    assert!(first.probe && p.hwq[be].len() == 1 && !p.hwq[be][0].probe);
    p.complete(t(1500), first, TxStatus { success: true, received: &[true], attempts: 1 }, &mut out);
    assert_eq!(t_acc(&p), before, "nothing formed: the depth is full");
    let second = p.head(t(1600), be, None, &mut out).unwrap();
    p.complete(t(1700), second, TxStatus { success: true, received: &[true], attempts: 1 }, &mut out);
    // The next PSDU was formed at 1700 µs: LLRA has averaged in the second PSDU's 100-µs access delay.
    assert!((t_acc(&p) - (0.875 * before + 0.125 * 100.0)).abs() < 1e-6, "{} {}", before, t_acc(&p));
    let agg = p.head(t(1800), be, None, &mut out).unwrap();
    assert!(agg.aggregated);
    let n = agg.mpdus.len();
    let mut received = vec![true; n];
    received[0] = false;
    // 6 ms after their enqueue: past D = 5 ms.
    p.complete(t(6000), agg, TxStatus { success: true, received: &received, attempts: 1 }, &mut out);
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].1, DropReason::Deadline);
    assert_eq!(p.stats.retry_deadline_drops, 1);
    assert_eq!(p.stats.sw_retries, 0);
}

/// With AQL a station stops feeding the driver once its estimated airtime in flight passes the
/// high limit (here: 12 ms ≈ 17 MPDUs of 1538 B at 13 Mbit/s), far below the BlockAck window.
#[test]
fn aql_limits_airtime_below_mac80211() {
    let mut p = LinuxPath::new(LinuxParams { hw_depth_single: 100, hw_depth_aggr: 100, aql: Some(AqlParams::default()), ..params(100) }, &mut Rng::derive(1, "fq"));
    p.add_link(0, TxVector::ht(1, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), None);
    let mut log = PacketLog::new(true);
    let (mut dropped, mut releases) = (Vec::new(), Vec::new());
    let be = AccessCategory::Be as usize;
    for i in 0..200 {
        log.open(&pkt(i));
        let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
        p.enqueue(SimTime::from_us(i), 0, be, pkt(i), &mut out);
    }
    let queued: usize = p.hwq[be].iter().map(|x| x.mpdus.len()).sum();
    // 1538 B at 13 Mbit/s = 947 µs each: below 5 ms always allowed, then up to the 12 ms high limit.
    assert_eq!(queued, 13, "{queued}");
    assert!(p.links[0].txqs[be].pending_us >= 12_000);
    assert_eq!(p.fq.tin_backlog_packets(p.links[0].txqs[be].tin), 200 - 13);
}

/// ath9k's hardware-queue depth (`ath_tx_sched_aggr`): an AC with a BlockAck session holds 2 PSDUs,
/// one-subframe PSDUs included (both are `BUF_AMPDU`), so packets arriving one by one do not become a
/// row of single frames; VO (no BlockAck session) holds 8 frames.
#[test]
fn hardware_depth_counts_one_subframe_psdus_of_a_blockack_session() {
    let mut p = LinuxPath::new(params(2), &mut Rng::derive(1, "fq"));
    p.add_link(0, TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), None);
    let mut log = PacketLog::new(true);
    let (mut dropped, mut releases) = (Vec::new(), Vec::new());
    let (be, vo) = (AccessCategory::Be as usize, AccessCategory::Vo as usize);
    for i in 0..20 {
        log.open(&pkt(i));
        let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
        p.enqueue(SimTime::from_us(i * 12), 0, be, pkt(i), &mut out);
    }
    let shapes: Vec<usize> = p.hwq[be].iter().map(|x| x.mpdus.len()).collect();
    assert_eq!(shapes, vec![1, 1], "two one-subframe PSDUs fill the depth; the rest waits in the TXQ");
    for i in 20..40 {
        log.open(&pkt(i));
        let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
        p.enqueue(SimTime::from_us(i * 12), 0, vo, pkt(i), &mut out);
    }
    assert_eq!(p.hwq[vo].len(), 8, "VO: eight single frames");
    assert!(p.hwq[vo].iter().all(|x| x.mpdus.len() == 1));
}

/// A gate that opens at fixed instants, one PSDU each, and holds formed PSDUs (`psdu` release point).
#[derive(Debug)]
struct Turnstile {
    opens: Vec<SimTime>,
    released: Vec<(SimTime, usize)>,
}

impl ReleaseGate for Turnstile {
    fn may_release(&mut self, now: SimTime) -> Result<(), SimTime> {
        match self.opens.first() {
            Some(&t) if t <= now => Ok(()),
            Some(&t) => Err(t),
            None => Err(now + SimDuration::from_secs(1)),
        }
    }
    fn on_release(&mut self, now: SimTime, _link: u32, ac: usize, _bytes: u32, _mpdus: u32) {
        self.opens.remove(0);
        self.released.push((now, ac));
    }
    fn release_point(&self) -> ReleasePoint {
        ReleasePoint::Psdu
    }
    fn explicit_tag(&self, pkt: &crate::packet::Packet) -> bool {
        pkt.dscp >= 40
    }
    fn expected_hold(&self, _now: SimTime, held: usize) -> SimDuration {
        SimDuration::from_us(held as u64)
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!(self.released.len())
    }
}

/// At the `psdu` release point the driver forms PSDUs while the gate is shut; they wait in the gate,
/// count toward their AC's hardware-queue depth (so BE stops at two aggregates), reach the hardware
/// queue only when the gate opens, and leave highest AC first: a VO frame formed after two BE
/// aggregates goes out first.
#[test]
fn the_psdu_release_point_holds_formed_psdus_and_releases_by_priority() {
    let mut p = LinuxPath::new(params(2), &mut Rng::derive(1, "fq"));
    p.add_link(0, TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), None);
    let t = SimTime::from_us;
    p.set_release_gate(Box::new(Turnstile { opens: vec![t(1000), t(2000), t(3000)], released: Vec::new() }));
    let mut io = Io::new();
    let (vo, be) = (AccessCategory::Vo as usize, AccessCategory::Be as usize);
    for i in 0..100 {
        io.enqueue(&mut p, t(i), 0, be, pkt(i));
    }
    io.enqueue(&mut p, t(200), 0, vo, pkt(100));
    assert!(!p.pending(be) && !p.pending(vo), "nothing reaches the hardware while the gate is shut");
    assert_eq!(p.held.len(), 3, "two BE PSDUs (the aggregate depth) and the VO frame wait in the gate");
    assert_eq!(p.hw_count[be], (2, 2));
    assert_eq!(p.next_wakeup(), Some(t(1000)));
    p.on_wakeup(t(1000), &mut io.out());
    assert!(p.pending(vo) && !p.pending(be), "VO leaves first");
    p.on_wakeup(t(2000), &mut io.out());
    let first_be = p.head(t(2000), be, None, &mut io.out()).unwrap();
    assert_eq!(first_be.mpdus[0].seq, 0, "then BE, in formation order");
    assert_eq!(p.held.len(), 1);
    // A VO frame formed while the gate is shut waits ahead of the held BE aggregate; when the BE PSDU
    // completes at 3 ms the gate lets one through — the VO frame — and the path asks to be woken at
    // once, since the medium was attending to BE only.
    io.enqueue(&mut p, t(2500), 0, vo, pkt(101));
    let _vo = p.head(t(2500), vo, None, &mut io.out()).unwrap();
    assert_eq!((p.held.len(), p.held.ahead_of(vo), p.held.ahead_of(be)), (2, 1, 2));
    let received = vec![true; first_be.mpdus.len()];
    p.complete(t(3000), first_be, TxStatus { success: true, received: &received, attempts: 1 }, &mut io.out());
    assert!(p.pending(vo) && !p.pending(be));
    assert_eq!(p.next_wakeup(), Some(t(3000)));
    let gate = p.gate.as_ref().unwrap();
    assert_eq!(gate.stats(), serde_json::json!(3));
}

/// A policy that serves TXQ 1 on the priority path from `from` on, and prioritizes flow 7.
#[derive(Debug)]
struct PrioritizeTxq1 {
    from: SimTime,
}

impl DriverPolicy for PrioritizeTxq1 {
    fn dedicated(&self, flow: u32) -> bool {
        flow == 7
    }
    fn priority_txq(&mut self, now: SimTime, _ac: usize, _view: &dyn crate::mac::txpath::driver::DriverView) -> Option<usize> {
        (now >= self.from).then_some(1)
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Spec §17.6: with a gate that holds formed PSDUs, one formed on the driver policy's priority path
/// (LAST-PQ's) with a packet of a prioritized flow is released first, as an explicitly tagged one is,
/// even after a normal PSDU of its AC formed earlier; untagged, they would leave in formation order.
/// Formed on the priority path with no prioritized packet (a retry, a top-up), it is not tagged.
#[test]
fn a_psdu_formed_on_the_priority_path_leaves_the_gate_first() {
    let mut p = LinuxPath::new(params(2), &mut Rng::derive(1, "fq"));
    let txv = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    p.add_link(0, txv, None);
    p.add_link(1, txv, None);
    let t = SimTime::from_us;
    p.set_release_gate(Box::new(Turnstile { opens: vec![t(1000), t(2000)], released: Vec::new() }));
    p.set_driver_policy(Box::new(PrioritizeTxq1 { from: t(100) }));
    let mut io = Io::new();
    let be = AccessCategory::Be as usize;
    io.enqueue(&mut p, t(0), 0, be, pkt(0));
    io.enqueue(&mut p, t(200), 1, be, Packet { flow: 7, ..pkt(1) });
    assert_eq!(p.held.len(), 2, "both PSDUs wait in the shut gate, station 0's formed first");
    assert_eq!(p.held.tagged_len(), 1);
    p.on_wakeup(t(1000), &mut io.out());
    let first = p.head(t(1000), be, None, &mut io.out()).unwrap();
    assert_eq!(first.link, 1, "the priority path's PSDU leaves first");
    // The same on the priority path without a prioritized packet: in formation order.
    let mut q = LinuxPath::new(params(2), &mut Rng::derive(1, "fq"));
    q.add_link(0, txv, None);
    q.add_link(1, txv, None);
    q.set_release_gate(Box::new(Turnstile { opens: vec![t(1000)], released: Vec::new() }));
    q.set_driver_policy(Box::new(PrioritizeTxq1 { from: t(100) }));
    io.enqueue(&mut q, t(0), 0, be, pkt(2));
    io.enqueue(&mut q, t(200), 1, be, pkt(3));
    assert_eq!(q.held.tagged_len(), 0);
}

/// The hardware's time limit on the stock path (Law's Limit_h, generic): the head PSDU of an AC carries
/// the deadline from the moment it became the head; one that expires before its first attempt leaves
/// unsent (no attempt, no `hw_head` stamp, nothing told to the rate controller), and the driver retries
/// its subframes in software; a single frame (VO: no BlockAck session) is dropped as `deadline`, unless
/// its rate chain had run out.
#[test]
fn hw_time_limit_returns_the_head_psdu_and_the_driver_retries_or_drops() {
    use crate::mac::txpath::TransmitPath;
    use crate::ratectl::{LinkRates, RateControlParams};
    use crate::phy::mcs::PhyStandard;
    let limit = SimDuration::from_us(2000);
    let mut p = LinuxPath::new(LinuxParams { hw_time_limit: Some(limit), ..params(1) }, &mut Rng::derive(1, "fq"));
    let link = LinkRates::new(PhyStandard::Ht, ChannelWidth::Mhz20, &[GuardInterval::Ns800], 1, Band::Ghz5);
    let rc = RateControlParams::Fixed(Default::default()).build(&link, Rng::derive(1, "rc"), SimTime::ZERO).unwrap();
    p.add_link(0, TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), Some(rc));
    let reports = |p: &LinuxPath| p.links[0].rc.as_ref().unwrap().stats()["psdus"].as_u64().unwrap();
    assert!(TransmitPath::shares_hardware(&p), "the medium enforces the deadlines");
    let mut io = Io::new();
    let (be, vo) = (AccessCategory::Be as usize, AccessCategory::Vo as usize);
    let t = SimTime::from_us;
    for i in 0..10 {
        io.enqueue(&mut p, t(100), 0, be, pkt(i));
    }
    // The first packet went alone at 100 µs and heads BE's queue: its deadline is 2100 µs.
    assert_eq!(TransmitPath::hw_deadline(&p, be), Some(t(2100)));
    let first = p.head(t(500), be, None, &mut io.out()).unwrap();
    assert_eq!(first.hw_deadline, Some(t(2100)), "the PSDU the medium takes carries it");
    assert_eq!(TransmitPath::hw_deadline(&p, be), None, "nothing waits behind it yet (depth 1)");
    p.complete(t(800), first, TxStatus { success: true, received: &[true], attempts: 1 }, &mut io.out());
    assert_eq!(reports(&p), 1);
    // The A-MPDU of the other nine became the head at 800 µs; it expires at 2800 µs unsent.
    assert_eq!(TransmitPath::hw_deadline(&p, be), Some(t(2800)));
    let agg = TransmitPath::expire_head(&mut p, t(2800), be, &mut io.out()).unwrap();
    assert_eq!((agg.mpdus.len(), agg.hw_deadline), (9, Some(t(2800))));
    assert_eq!(io.log.stages[Stage::HwHead as usize][agg.mpdus[0].pkt.id as usize], crate::stats::NO_TIME, "never on the air");
    let none = vec![false; agg.mpdus.len()];
    p.complete(t(2800), agg, TxStatus { success: false, received: &none, attempts: 0 }, &mut io.out());
    assert!(io.dropped.is_empty(), "subframes are retried, not dropped");
    assert_eq!(reports(&p), 1, "no attempt, nothing for the rate controller");
    assert_eq!(p.stats.sw_retries, 9);
    let again = p.head(t(3000), be, None, &mut io.out()).unwrap();
    assert_eq!(again.mpdus.iter().map(|m| m.pkt.id).collect::<Vec<_>>(), (1..10).collect::<Vec<_>>(), "retried first, in order");
    assert_eq!(again.hw_deadline, Some(t(4800)), "a fresh limit from its new time at the head");
    // VO forms single frames (no BlockAck session); one that times out is dropped.
    io.enqueue(&mut p, t(5000), 0, vo, pkt(50));
    let single = TransmitPath::expire_head(&mut p, t(7000), vo, &mut io.out()).unwrap();
    assert!(!single.aggregated);
    p.complete(t(7000), single, TxStatus { success: false, received: &[false], attempts: 0 }, &mut io.out());
    assert_eq!(io.dropped.iter().map(|d| (d.0.id, d.1)).collect::<Vec<_>>(), vec![(50, DropReason::Deadline)]);
    assert_eq!(p.stats.single_frame_drops, 1);
    // A single frame whose rate chain ran out (all 7 tries) at or after its deadline failed in the
    // ordinary way: a retry-limit drop, as the medium counts it (an XRETRY).
    io.enqueue(&mut p, t(8000), 0, vo, pkt(51));
    let late = p.head(t(8100), vo, None, &mut io.out()).unwrap();
    p.complete(t(11_000), late, TxStatus { success: false, received: &[false], attempts: 7 }, &mut io.out());
    assert_eq!(io.dropped.last().map(|d| (d.0.id, d.1)), Some((51, DropReason::RetryLimit)));
}

/// With the driver's latency t_irq, whether the time limit returned a PSDU is judged when the hardware
/// finished, not when the driver handles it: a single frame that ran out of tries just before its
/// deadline, handled after it, is a retry-limit drop.
#[test]
fn hw_time_limit_is_judged_at_the_hardwares_completion() {
    let mut p = LinuxPath::new(LinuxParams { hw_time_limit: Some(SimDuration::from_us(2000)), t_irq: SimDuration::from_us(300), ..params(1) }, &mut Rng::derive(1, "fq"));
    p.add_link(0, TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), None);
    let mut io = Io::new();
    let vo = AccessCategory::Vo as usize;
    let t = SimTime::from_us;
    io.enqueue(&mut p, t(0), 0, vo, pkt(1));
    let f = p.head(t(100), vo, None, &mut io.out()).unwrap();
    assert_eq!(f.hw_deadline, Some(t(2000)));
    p.complete(t(1900), f, TxStatus { success: false, received: &[false], attempts: 10 }, &mut io.out());
    assert!(io.dropped.is_empty(), "the driver has not handled it yet");
    p.on_wakeup(t(2200), &mut io.out());
    assert_eq!(io.dropped.iter().map(|d| (d.0.id, d.1)).collect::<Vec<_>>(), vec![(1, DropReason::RetryLimit)]);
}

/// Explicit-tag priority release through the path: a BE frame marked EF (DSCP 46) for a second station,
/// formed while a BE frame of the first waits in the gate, leaves first; its PSDU counts as tagged
/// because one of its packets carries the tag.
#[test]
fn a_tagged_psdu_leaves_the_gate_first() {
    let mut p = LinuxPath::new(params(2), &mut Rng::derive(1, "fq"));
    for id in 0..2 {
        p.add_link(id, TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), None);
    }
    let t = SimTime::from_us;
    p.set_release_gate(Box::new(Turnstile { opens: vec![t(1000), t(2000), t(3000)], released: Vec::new() }));
    let mut io = Io::new();
    let be = AccessCategory::Be as usize;
    for i in 0..2 {
        io.enqueue(&mut p, t(i), 0, be, pkt(i));
    }
    io.enqueue(&mut p, t(200), 1, be, Packet { dscp: 46, dst: 2, ..pkt(100) });
    assert_eq!((p.held.len(), p.held.ahead_of(be)), (2, 2), "the BE depth is full: the tagged frame waits to be formed");
    p.on_wakeup(t(1000), &mut io.out());
    let first = p.head(t(1000), be, None, &mut io.out()).unwrap();
    assert_eq!(first.mpdus[0].pkt.id, 0, "the first frame leaves at 1 ms, before the tagged one was formed");
    let received = vec![true; first.mpdus.len()];
    p.complete(t(1500), first, TxStatus { success: true, received: &received, attempts: 1 }, &mut io.out());
    assert_eq!((p.held.len(), p.held.ahead_of(be)), (2, 2), "the tagged frame is formed into the freed depth and held");
    p.on_wakeup(t(2000), &mut io.out());
    let next = p.head(t(2000), be, None, &mut io.out()).unwrap();
    assert_eq!(next.mpdus.iter().map(|m| m.pkt.id).collect::<Vec<_>>(), vec![100], "the tagged frame overtakes the held aggregate");
}

/// The shaper (`tbf`) holds a BE packet; a VO packet arriving exactly when the BE packet may leave
/// releases it from inside the VO arrival, when the medium attends to VO only: the path then asks to
/// be woken at once (the wakeup requests access for every AC), as the gate does for held PSDUs.
#[test]
fn a_tbf_release_of_another_ac_on_an_arrival_wakes_the_node() {
    use crate::queue::tbf::TbfParams;
    let tbf = TbfParams { rate_mbps: 12.0, burst_bytes: 1514, limit_packets: 10 };
    let mut p = LinuxPath::new(LinuxParams { tbf: Some(tbf), ..params(2) }, &mut Rng::derive(1, "fq"));
    p.add_link(0, TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap(), None);
    let mut log = PacketLog::new(true);
    let (mut dropped, mut releases) = (Vec::new(), Vec::new());
    let (be, vo) = (AccessCategory::Be as usize, AccessCategory::Vo as usize);
    for i in 0..2 {
        log.open(&pkt(i));
    }
    let mut out = PathOut { log: &mut log, dropped: &mut dropped, releases: &mut releases };
    p.enqueue(SimTime::ZERO, 0, be, pkt(0), &mut out); // the full bucket lets it through
    p.enqueue(SimTime::ZERO, 0, be, pkt(1), &mut out); // 14 B of credit left: (1500 − 14) · 8 / 12e6 s later
    assert!(p.pending(be));
    let t1 = SimTime::from_ns(990_667);
    assert_eq!(p.next_wakeup(), Some(t1));
    let mut small = pkt(2);
    small.size = 100;
    out.log.open(&small);
    p.enqueue(t1, 0, vo, small, &mut out); // packet 1 leaves now, ahead of it, inside the VO arrival
    assert_eq!(p.next_wakeup(), Some(t1), "woken at once for the BE packet released");
    p.on_wakeup(t1, &mut out);
    // 800 bits less the 0.004 bit the rounded-up wait left over, at 12 Mbit/s.
    assert_eq!(p.next_wakeup(), Some(t1 + SimDuration::from_ns(66_667)), "then when the VO packet may leave");
}
