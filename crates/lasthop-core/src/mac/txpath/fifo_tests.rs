//! The ns-3-style FIFO path driven directly: the per-AC capacity over all receivers with MPDUs in
//! flight counted (ns-3 removes an MPDU from its `WifiMacQueue` only when it is acknowledged), and the
//! traffic-control layer above it, flow-controlled by the MAC queue.

use super::*;
use crate::phy::mcs::{ChannelWidth, GuardInterval};
use crate::scenario::QueueConfig;
use crate::stats::PacketLog;

const BE: usize = AccessCategory::Be as usize;

fn path(cap: u32, links: u32) -> FifoPath {
    let limits = AmpduLimits { max_bytes: 65_535, max_mpdus: 64, max_duration: SimDuration::from_us(5_484) };
    let p = FifoParams { qos: true, ampdu: true, limits, band: Band::Ghz5, airtime: crate::phy::airtime::AirtimeOptions::STANDARD, queue_packets: cap, retry_limit: 7, lifetime: SimDuration::from_ms(500), explicit_bar: false, sifs: SimDuration::from_us(16) };
    let mut path = FifoPath::new(p);
    let txv = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    for id in 0..links {
        path.add_link(id, txv, SimDuration::from_us(44), SimDuration::from_us(68));
    }
    path
}

fn pkt(id: u64, dst: u16) -> Packet {
    Packet { id, flow: dst as u32, seq: id, size: 1500, src: 0, dst, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

struct Io {
    log: PacketLog,
    dropped: Vec<Dropped>,
    releases: Vec<(u32, usize, u64)>,
}

impl Io {
    fn new() -> Self {
        Io { log: PacketLog::new(true), dropped: Vec::new(), releases: Vec::new() }
    }
    fn out(&mut self) -> PathOut<'_> {
        PathOut { log: &mut self.log, dropped: &mut self.dropped, releases: &mut self.releases }
    }
    fn enqueue(&mut self, p: &mut FifoPath, link: usize, id: u64) {
        let pk = pkt(id, link as u16);
        self.log.open(&pk);
        p.enqueue(SimTime::ZERO, link, BE, pk, &mut self.out());
    }
    fn dropped_ids(&self) -> Vec<u64> {
        self.dropped.iter().map(|d| d.0.id).collect()
    }
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
        io.enqueue(&mut p, link, id);
    }
    assert_eq!(io.dropped_ids(), vec![3]);
}

/// MPDUs handed to the hardware still occupy the queue until their BlockAck; then room frees.
#[test]
fn mpdus_in_flight_hold_their_place() {
    let (mut p, mut io) = (path(2, 1), Io::new());
    io.enqueue(&mut p, 0, 0);
    io.enqueue(&mut p, 0, 1);
    let psdu = p.head(SimTime::ZERO, BE, None, &mut io.out()).expect("a PSDU");
    assert_eq!(psdu.mpdus.len(), 2);
    io.enqueue(&mut p, 0, 2);
    assert_eq!(io.dropped_ids(), vec![2], "the queue is full while the A-MPDU is in flight");
    ack_all(&mut p, &mut io, psdu);
    io.enqueue(&mut p, 0, 3);
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
        io.enqueue(&mut p, link, id);
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
