//! The ns-3-style FIFO path driven directly: the per-AC capacity over all receivers with MPDUs in
//! flight counted (ns-3 removes an MPDU from its `WifiMacQueue` only when it is acknowledged), and the
//! traffic-control layer above it, flow-controlled by the MAC queue.

use super::*;
use crate::phy::mcs::{ChannelWidth, GuardInterval};
use crate::scenario::QueueConfig;
use crate::mac::txpath::testkit::Io;

const BE: usize = AccessCategory::Be as usize;

fn path(cap: u32, links: u32) -> FifoPath {
    let limits = AmpduLimits { max_bytes: 65_535, max_mpdus: 64, max_duration: SimDuration::from_us(5_484) };
    let p = FifoParams { qos: true, ampdu: true, limits, band: Band::Ghz5, airtime: crate::phy::airtime::AirtimeOptions::STANDARD, queue_packets: cap, retry_limit: 7, lifetime: SimDuration::from_ms(500), explicit_bar: false, sifs: SimDuration::from_us(16) };
    let mut path = FifoPath::new(p);
    let txv = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    for id in 0..links {
        path.add_link(id, txv, None, SimDuration::from_us(44), SimDuration::from_us(68));
    }
    path
}

fn pkt(id: u64, dst: u16) -> Packet {
    Packet { id, flow: dst as u32, seq: id, size: 1500, src: 0, dst, hop: dst, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

/// Packet `id` to the receiver of local link `link`, in AC_BE at time zero.
fn put(io: &mut Io, p: &mut FifoPath, link: usize, id: u64) {
    io.enqueue(p, SimTime::ZERO, link, BE, pkt(id, link as u16));
}

fn ack_all(p: &mut FifoPath, io: &mut Io, psdu: Psdu) {
    let received = vec![true; psdu.mpdus.len()];
    p.complete(SimTime::from_ms(1), psdu, TxStatus { success: true, received: &received, attempts: 1 }, &mut io.out());
}

/// ns-3's `WifiMacQueue` MaxSize bounds the AC's queue over all receivers, not each receiver's.
#[test]
fn capacity_is_per_ac_over_receivers() {
    let (mut p, mut io) = (path(3, 2), Io::new());
    for (id, link) in [(0, 0), (1, 0), (2, 1), (3, 1)] {
        put(&mut io, &mut p, link, id);
    }
    assert_eq!(io.dropped_ids(), vec![3]);
}

/// MPDUs handed to the hardware still occupy the queue until their BlockAck; then room frees.
#[test]
fn mpdus_in_flight_hold_their_place() {
    let (mut p, mut io) = (path(2, 1), Io::new());
    put(&mut io, &mut p, 0, 0);
    put(&mut io, &mut p, 0, 1);
    let psdu = p.head(SimTime::ZERO, BE, None, &mut io.out()).expect("a PSDU");
    assert_eq!(psdu.mpdus.len(), 2);
    put(&mut io, &mut p, 0, 2);
    assert_eq!(io.dropped_ids(), vec![2], "the queue is full while the A-MPDU is in flight");
    ack_all(&mut p, &mut io, psdu);
    put(&mut io, &mut p, 0, 3);
    assert_eq!(io.dropped_ids(), vec![2]);
    assert!(p.pending(BE));
}

/// With a qdisc above, a full MAC queue stops the device queue: the backlog waits in the qdisc, not
/// dropped, and moves down when the BlockAck frees room, each packet to its own receiver.
#[test]
fn qdisc_holds_the_backlog_under_flow_control() {
    let (mut p, mut io) = (path(2, 2), Io::new());
    p.set_qdisc(|| AnyQueue::from_config(&QueueConfig::Fifo { packets: Some(100), bytes: None }, crate::rng::Rng::derive(1, "q")));
    for (id, link) in [(0, 0), (1, 0), (2, 1), (3, 1), (4, 0)] {
        put(&mut io, &mut p, link, id);
    }
    assert!(io.dropped.is_empty());
    let in_mac = |io: &Io, id: usize| io.log.stages[Stage::HwEnq as usize][id] != u64::MAX;
    assert_eq!((0..5).map(|i| in_mac(&io, i)).collect::<Vec<_>>(), vec![true, true, false, false, false]);
    let psdu = p.head(SimTime::ZERO, BE, None, &mut io.out()).expect("a PSDU");
    ack_all(&mut p, &mut io, psdu);
    assert_eq!((0..5).map(|i| in_mac(&io, i)).collect::<Vec<_>>(), vec![true, true, true, true, false]);
    let next = p.head(SimTime::from_ms(1), BE, None, &mut io.out()).expect("a PSDU");
    assert_eq!((next.link, next.mpdus.iter().map(|m| m.pkt.id).collect::<Vec<_>>()), (1, vec![2, 3]));
}

/// A qdisc that reorders (fq_codel serves its flows in turn) hands each packet to the link of the next
/// hop it was queued for, whatever the order it leaves in and whatever that hop's node id.
#[test]
fn packets_leave_a_reordering_qdisc_for_their_own_hop() {
    use crate::queue::fq_codel::FqCodelParams;
    use crate::queue::QueueParams;
    let (mut p, mut io) = (path(2, 2), Io::new());
    p.set_qdisc(|| AnyQueue::from_params(&QueueParams::FqCodel(FqCodelParams::default()), crate::rng::Rng::derive(1, "q")));
    // Link 0 leads to node 9, link 1 to node 4 (the packets' destinations lie beyond); flow = hop, so
    // fq_codel keeps them in two queues.
    let to = |id: u64, hop: u16| Packet { flow: hop as u32, dst: 100 + hop, hop, ..pkt(id, hop) };
    for (id, link, hop) in [(0, 0, 9), (1, 0, 9), (2, 0, 9), (3, 0, 9), (4, 1, 4), (5, 1, 4), (6, 0, 9), (7, 1, 4)] {
        io.enqueue(&mut p, SimTime::ZERO, link, BE, to(id, hop));
    }
    let mut sent: Vec<(usize, Vec<u64>)> = Vec::new();
    let mut now = SimTime::ZERO;
    while let Some(psdu) = p.head(now, BE, None, &mut io.out()) {
        sent.push((psdu.link as usize, psdu.mpdus.iter().map(|m| m.pkt.id).collect()));
        let received = vec![true; psdu.mpdus.len()];
        p.complete(now, psdu, TxStatus { success: true, received: &received, attempts: 1 }, &mut io.out());
        now += SimDuration::from_ms(1);
    }
    assert!(io.dropped.is_empty());
    let mut ids: Vec<u64> = sent.iter().flat_map(|(_, v)| v.clone()).collect();
    ids.sort();
    assert_eq!(ids, (0..8).collect::<Vec<_>>(), "every packet sent once: {sent:?}");
    for (link, psdu) in &sent {
        let want: &[u64] = if *link == 0 { &[0, 1, 2, 3, 6] } else { &[4, 5, 7] };
        assert!(psdu.iter().all(|id| want.contains(id)), "link {link} sent {psdu:?}: {sent:?}");
    }
    // fq_codel took turns: the packets did not leave in the order they came.
    let order: Vec<u64> = sent.iter().flat_map(|(_, v)| v.clone()).collect();
    assert_ne!(order, (0..8).collect::<Vec<_>>());
}

/// With an adaptive controller, each attempt is sent at the rate it picks (one rate, one try: retries
/// are new channel accesses, as ns-3 asks `GetDataTxVector` per transmission) and its outcome reported
/// back: on a link where every rate above HT MCS 3 fails, Minstrel-HT settles on MCS 3.
#[test]
fn an_adaptive_controller_picks_each_attempts_rate_and_learns_from_it() {
    use crate::ratectl::{LinkRates, MinstrelHtParams, RateControlParams};
    let (mut p, mut io) = (path(1000, 0), Io::new());
    let rates = LinkRates::new(crate::phy::mcs::PhyStandard::Ht, ChannelWidth::Mhz20, &[GuardInterval::Ns800], 1, Band::Ghz5);
    let rc = RateControlParams::MinstrelHt(MinstrelHtParams::default()).build(&rates, crate::rng::Rng::derive(1, "rc"), SimTime::ZERO).expect("builds");
    let txv = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    p.add_link(0, txv, Some(rc), SimDuration::from_us(44), SimDuration::from_us(68));
    let mut used = Vec::new();
    for id in 0..4000 {
        let now = SimTime::from_us(500 * id);
        io.enqueue(&mut p, now, 0, BE, pkt(id, 0));
        let psdu = p.head(now, BE, None, &mut io.out()).expect("a PSDU");
        let (txv, tries) = psdu.chain.series[0].expect("a rate");
        assert_eq!((tries, psdu.chain.series[1]), (1, None), "one rate per attempt");
        assert!(!(psdu.probe && psdu.aggregated), "a probe goes alone");
        let ok = txv.mcs <= 3;
        used.push(txv.mcs);
        let received = vec![ok; psdu.mpdus.len()];
        p.complete(now, psdu, TxStatus { success: ok, received: &received, attempts: 1 }, &mut io.out());
    }
    let last = &used[used.len() - 1000..];
    let at3 = last.iter().filter(|&&m| m == 3).count();
    assert!(at3 > 800, "MCS 3 in {at3} of the last 1000 attempts");
    assert!(p.stats()["rate_control"][0].is_object(), "its statistics are reported");
}

/// A gate that lets one PSDU through per millisecond and records what it is told.
#[derive(Debug, Default)]
struct OnePerMs {
    next: SimTime,
    asked: u32,
    releases: Vec<(SimTime, u32, u32)>,
    events: Vec<super::super::gate::TxEvent>,
}

impl ReleaseGate for std::sync::Arc<std::sync::Mutex<OnePerMs>> {
    fn may_release(&mut self, now: SimTime) -> Result<(), SimTime> {
        let mut g = self.lock().unwrap();
        g.asked += 1;
        if now >= g.next {
            Ok(())
        } else {
            Err(g.next)
        }
    }
    fn on_release(&mut self, now: SimTime, _link: u32, _ac: usize, bytes: u32, mpdus: u32) {
        let mut g = self.lock().unwrap();
        g.next = now + SimDuration::from_ms(1);
        g.releases.push((now, bytes, mpdus));
    }
    fn on_tx_event(&mut self, _now: SimTime, ev: &super::super::gate::TxEvent) {
        self.lock().unwrap().events.push(*ev);
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}

/// The release gate on the ns-3 path, by hand: an AC contends only under a release; the gate is told
/// the PSDU the link would send then (one MPDU: the first arrival; the PSDU formed at access carries
/// the three queued by then); a failed attempt keeps the release (the retry is
/// the hardware's), and its end reports both attempts from the release; the next release waits for the
/// gate, which names when the path is woken.
#[test]
fn a_release_gate_decides_when_an_ac_contends() {
    use super::super::gate::TxEvent;
    let (mut p, mut io) = (path(100, 1), Io::new());
    let gate = std::sync::Arc::new(std::sync::Mutex::new(OnePerMs::default()));
    p.set_release_gate(Box::new(gate.clone())).unwrap();
    for id in 0..3 {
        put(&mut io, &mut p, 0, id);
    }
    assert!(p.pending(BE), "released at once");
    // Released when the first packet arrived: the gate is told the PSDU of one MPDU it would have been.
    let one = crate::phy::ampdu_len::ampdu_len_with(0, crate::mac::mpdu_len(1500, true));
    assert_eq!(gate.lock().unwrap().releases, vec![(SimTime::ZERO, one, 1)]);
    let t = SimTime::from_us;
    let first = p.head(t(100), BE, None, &mut io.out()).unwrap();
    assert_eq!(first.mpdus.len(), 3);
    p.complete(t(400), first, TxStatus { success: false, received: &[false; 3], attempts: 1 }, &mut io.out());
    assert!(p.pending(BE), "a failed attempt keeps its release");
    assert_eq!(gate.lock().unwrap().releases.len(), 1);
    let retry = p.head(t(500), BE, None, &mut io.out()).unwrap();
    p.complete(t(800), retry, TxStatus { success: true, received: &[true, true, false], attempts: 1 }, &mut io.out());
    {
        let g = gate.lock().unwrap();
        assert!(matches!(g.events[..], [TxEvent::AttemptStart { access_delay: a, .. }, TxEvent::AttemptStart { access_delay: b, .. }, TxEvent::Complete { success: true, attempts: 2, head_to_done, .. }] if a == SimDuration::from_us(100) && b == SimDuration::from_us(100) && head_to_done == SimDuration::from_us(800)), "{:?}", g.events);
    }
    // One MPDU is left, but the gate's next PSDU is not due before 1 ms: not even a TXOP continuation
    // (which asks without `pending`) gets it.
    assert!(!p.pending(BE));
    assert!(p.head(t(816), BE, Some(SimDuration::from_ms(2)), &mut io.out()).is_none());
    assert_eq!(p.next_wakeup(), Some(SimTime::from_ms(1)));
    p.on_wakeup(SimTime::from_ms(1));
    assert!(p.pending(BE));
    assert_eq!(gate.lock().unwrap().releases.last().map(|r| (r.0, r.2)), Some((SimTime::from_ms(1), 1)));
}
