//! Script tests of the `fq_codel` qdisc.

use super::*;
use crate::stats::DropReason;
use crate::time::SimDuration;
use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

fn pkt(id: u64, flow: u32, size: u32) -> Packet {
    Packet { id, flow, seq: id, size, src: 0, dst: 1, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

struct Rig {
    q: FqCodel,
    drops: Vec<Dropped>,
    next: u64,
}

impl Rig {
    fn new(params: FqCodelParams) -> Self {
        let q = FqCodel::new(params, &mut Rng::derive(3, "test/fq_codel"));
        // The flows used below hash to distinct slots under this seed.
        let idx: Vec<u32> = (1..=3).map(|f| q.flow_index(&pkt(0, f, 100))).collect();
        assert!(idx[0] != idx[1] && idx[1] != idx[2] && idx[0] != idx[2], "{idx:?}");
        Rig { q, drops: vec![], next: 0 }
    }
    fn put(&mut self, now: SimTime, flow: u32, n: usize, size: u32) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let id = self.next;
                self.next += 1;
                if let Err(d) = self.q.enqueue(now, pkt(id, flow, size)) {
                    self.drops.push(d);
                }
                id
            })
            .collect()
    }
    fn get(&mut self, now: SimTime) -> Option<Packet> {
        let p = self.q.dequeue(now, &mut self.drops);
        self.q.fq().check_invariants();
        p
    }
    fn codel_of(&self, flow: u32) -> u32 {
        let idx = self.q.flow_index(&pkt(0, flow, 100));
        self.q.flow_stats().iter().find(|f| f.flow.0 == idx).map_or(0, |f| f.codel_count)
    }
}

#[test]
fn defaults_match_fq_codel_init() {
    let p = FqCodelParams::default();
    assert_eq!((p.flows, p.quantum, p.limit, p.memory_limit, p.drop_batch), (1024, 1514, 10240, 32 << 20, 64));
    assert_eq!(p.codel, CodelParams { target_us: 5_000, interval_us: 100_000, ecn: true, mtu: 1514 });
    assert!(p.validate().is_ok());
    assert!(FqCodelParams { quantum: 255, ..p }.validate().is_err());
    assert!(FqCodelParams { drop_batch: 0, ..p }.validate().is_err());
    assert!(FqCodelParams { flows: 70_000, ..p }.validate().is_err());
    let v: FqCodelParams = serde_json::from_str(r#"{"limit": 1000, "codel": {"target_us": 10000}}"#).unwrap();
    assert_eq!((v.limit, v.codel.target_us, v.codel.interval_us, v.quantum), (1000, 10_000, 100_000, 1514));
}

#[test]
fn drr_alternates_two_backlogged_flows_of_mtu_packets() {
    let mut r = Rig::new(FqCodelParams::default());
    r.put(ms(0), 1, 50, 1500);
    r.put(ms(0), 2, 50, 1500);
    let order: Vec<u32> = (0..12).map(|_| r.get(ms(0)).unwrap().flow).collect();
    // Quantum 1514: each flow first sends two packets (1514 → 14 → −1486), then one per round.
    assert_eq!(order, vec![1, 1, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2]);
    let s = r.q.fq_codel_stats();
    assert_eq!((s.new_flow_count, s.new_flows_len, s.old_flows_len), (2, 0, 2));
}

#[test]
fn a_sparse_flow_goes_first() {
    let mut r = Rig::new(FqCodelParams::default());
    r.put(ms(0), 1, 50, 1500);
    for _ in 0..3 {
        assert_eq!(r.get(ms(0)).unwrap().flow, 1);
    }
    let id = r.put(ms(0), 2, 1, 100)[0];
    assert_eq!(r.get(ms(0)).unwrap().id, id);
}

#[test]
fn overlimit_cuts_half_the_fattest_flows_bytes_and_raises_its_codel_count() {
    let mut r = Rig::new(FqCodelParams { limit: 20, ..Default::default() });
    let a = r.put(ms(0), 1, 15, 1000);
    r.put(ms(0), 2, 5, 1000);
    r.put(ms(0), 2, 1, 1000);
    assert!(r.drops.is_empty(), "the arriving packet was not cut");
    let mut cut = vec![];
    r.q.drain_drops(&mut cut);
    // 15000 B: packets go until ≥ 7500 B are gone, i.e. 8 of them.
    assert_eq!(cut.iter().map(|d| d.0.id).collect::<Vec<_>>(), a[..8].to_vec());
    assert!(cut.iter().all(|d| d.1 == DropReason::QueueFull));
    assert_eq!(r.codel_of(1), 8, "Linux adds the cut to the flow's CoDel count");
    assert_eq!(r.q.len_packets(), 13);
    let s = r.q.fq_codel_stats();
    assert_eq!((s.drop_overlimit, s.drop_overmemory), (8, 0));
    assert_eq!(r.q.stats.dropped, 8);
    let mut again = vec![];
    r.q.drain_drops(&mut again);
    assert!(again.is_empty());
}

#[test]
fn one_cut_per_enqueue_of_at_most_drop_batch_packets() {
    let mut r = Rig::new(FqCodelParams { memory_limit: 21_000, skb_overhead: 0, ..Default::default() });
    r.put(ms(0), 1, 200, 100);
    r.put(ms(0), 2, 1, 10_000);
    let mut cut = vec![];
    r.q.drain_drops(&mut cut);
    assert_eq!(cut.len(), 64);
    assert!(cut.iter().all(|d| d.0.flow == 1));
    assert_eq!(r.q.fq_codel_stats().memory_usage, 30_000 - 6_400, "still over the limit until the next enqueue");
    assert_eq!(r.q.fq_codel_stats().drop_overmemory, 64);
}

#[test]
fn the_arriving_packet_can_be_refused_and_earlier_cuts_come_out_at_dequeue() {
    let mut r = Rig::new(FqCodelParams { memory_limit: 10_000, skb_overhead: 0, ..Default::default() });
    r.put(ms(0), 1, 6, 1000);
    let big = r.put(ms(0), 2, 1, 9000)[0];
    assert_eq!(r.drops.iter().map(|d| (d.0.id, d.1)).collect::<Vec<_>>(), vec![(big, DropReason::QueueFull)]);
    assert_eq!(r.q.stats.enqueued, 6);
    // A cut of other packets: they are handed out by the next dequeue.
    r.put(ms(0), 3, 1, 4500);
    assert_eq!(r.drops.len(), 1);
    let p = r.get(ms(0)).unwrap();
    assert_eq!(r.drops.len(), 1 + 3, "flow 1 (6000 B) lost 3000 B, handed over with the dequeue");
    assert_eq!(p.flow, 1);
}

#[test]
fn codel_drops_a_standing_queue_after_an_interval() {
    let mut r = Rig::new(FqCodelParams::default());
    let (mut next_us, mut first) = (0, None);
    for tick in 1..=500u64 {
        while next_us <= tick * 1000 {
            r.put(SimTime::from_us(next_us), 1, 1, 1000);
            next_us += 500;
        }
        let before = r.drops.len();
        r.get(ms(tick)).unwrap();
        if r.drops.len() > before && first.is_none() {
            first = Some(tick);
        }
    }
    // Sojourn (n + 1)/2 ms reaches 5 ms at the 9-ms dequeue; first drop strictly after 109 ms.
    assert_eq!(first, Some(110));
    assert!(r.drops.iter().all(|d| d.1 == DropReason::Aqm));
    assert_eq!(r.q.fq_codel_stats().codel_drops as usize, r.drops.len());
    assert_eq!(r.q.stats.enqueued, r.q.stats.dequeued + r.q.stats.dropped + r.q.len_packets() as u64);
}

/// CoDel's minimum backlog is the whole qdisc's: a flow's only packet can be dropped while other
/// flows hold more than one MTU (mac80211 would exempt it: its flow backlog is then 0).
#[test]
fn codel_backlog_check_reads_the_whole_qdisc() {
    let mut r = Rig::new(FqCodelParams::default());
    let a1 = r.put(ms(0), 1, 1, 1000)[0];
    r.put(ms(100), 2, 3, 1500);
    assert_eq!(r.get(ms(100)).unwrap().id, a1, "sojourn 100 ms, 4500 B behind: first_above = 200 ms");
    let a2 = r.put(ms(150), 1, 1, 1000)[0];
    let p = r.get(ms(201)).unwrap();
    assert_eq!(p.flow, 2);
    assert_eq!(r.drops.iter().map(|d| (d.0.id, d.1)).collect::<Vec<_>>(), vec![(a2, DropReason::Aqm)]);
}

#[test]
fn ecn_capable_packets_are_marked() {
    let mut r = Rig::new(FqCodelParams::default());
    r.q.set_ecn_classifier(|_| true);
    let mut next_us = 0;
    for tick in 1..=500u64 {
        while next_us <= tick * 1000 {
            r.put(SimTime::from_us(next_us), 1, 1, 1000);
            next_us += 500;
        }
        r.get(ms(tick)).unwrap();
    }
    assert!(r.drops.is_empty());
    assert!(r.q.fq_codel_stats().ecn_mark > 5);
    assert_eq!(r.q.stats.dequeued, 500);
}

#[test]
fn the_same_seed_gives_the_same_slots() {
    let a = FqCodel::new(FqCodelParams::default(), &mut Rng::derive(9, "x"));
    let b = FqCodel::new(FqCodelParams::default(), &mut Rng::derive(9, "x"));
    assert!((0..100).all(|f| a.flow_index(&pkt(0, f, 1)) == b.flow_index(&pkt(0, f, 1))));
    assert!((0..100).all(|f| a.flow_index(&pkt(0, f, 1)) < 1024));
}

proptest! {
    /// Every packet offered is delivered once, dropped once or still queued, and the counters agree.
    #[test]
    fn no_packet_lost_or_duplicated(ops in proptest::collection::vec((0u8..10, 0u32..5, 40u32..1500), 1..500)) {
        let p = FqCodelParams { flows: 8, limit: 20, memory_limit: 20_000, drop_batch: 4, skb_overhead: 100, ..Default::default() };
        let mut q = FqCodel::new(p, &mut Rng::derive(4, "prop"));
        let (mut now, mut id) = (SimTime::ZERO, 0u64);
        let (mut delivered, mut drops) = (vec![], vec![]);
        for (op, flow, size) in ops {
            match op {
                0..=4 => {
                    if let Err(d) = q.enqueue(now, pkt(id, flow, size)) {
                        drops.push(d);
                    }
                    id += 1;
                }
                5..=8 => delivered.extend(q.dequeue(now, &mut drops).map(|p| p.id)),
                _ => now += SimDuration::from_ms(size as u64 / 25),
            }
            q.fq().check_invariants();
            prop_assert!(q.len_packets() <= 20);
        }
        while let Some(p) = q.dequeue(now, &mut drops) {
            delivered.push(p.id);
        }
        q.drain_drops(&mut drops);
        let s = q.stats;
        prop_assert_eq!(s.dequeued as usize, delivered.len());
        prop_assert_eq!(s.dropped as usize, drops.len());
        let mut all: Vec<u64> = delivered.iter().chain(drops.iter().map(|d| &d.0.id)).copied().collect();
        all.sort_unstable();
        prop_assert_eq!(all, (0..id).collect::<Vec<_>>());
    }
}
