//! Script tests of mac80211's FQ: enqueues on chosen tins and table indices at chosen times,
//! asserted dequeue order, drops and list membership.

use super::*;
use crate::time::SimDuration;
use crate::rng::Rng;
use proptest::prelude::{prop_assert, prop_assert_eq, prop_oneof, proptest, Strategy};
use std::collections::BTreeMap;

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

fn pkt(id: u64, flow: u32, size: u32) -> Packet {
    Packet { id, flow, seq: id, size, src: 0, dst: 1, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

fn fq(params: FqParams) -> Fq {
    Fq::new(params, &mut Rng::derive(1, "test/fq"))
}

/// One mac80211 tin; packets are placed by `enqueue_at` with the table index = their `flow`.
struct Rig {
    fq: Fq,
    t: TinId,
    drops: Vec<Dropped>,
    next: u64,
}

impl Rig {
    fn new(params: FqParams) -> Self {
        let mut fq = fq(params);
        let t = fq.add_tin(CodelParams::mac80211());
        Rig { fq, t, drops: vec![], next: 0 }
    }
    /// Enqueues `n` packets of `size` bytes on flow (= index) `flow` at `now`; returns their ids.
    fn put(&mut self, now: SimTime, flow: u32, n: usize, size: u32) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let id = self.next;
                self.next += 1;
                self.fq.enqueue_at(now, self.t, flow, pkt(id, flow, size), &mut self.drops);
                id
            })
            .collect()
    }
    fn get(&mut self, now: SimTime) -> Option<Packet> {
        let p = self.fq.dequeue(now, self.t, &mut self.drops);
        self.fq.check_invariants();
        p
    }
    fn get_flow(&mut self, now: SimTime) -> Option<u32> {
        self.get(now).map(|p| p.flow)
    }
    fn info(&self, flow: u32) -> Option<FlowInfo> {
        self.fq.flow_stats().into_iter().find(|f| f.flow == FlowId(flow))
    }
}

#[test]
fn defaults_match_mac80211() {
    let p = FqParams::default();
    assert_eq!((p.flows, p.quantum, p.limit, p.memory_limit), (4096, 300, 8192, 16 << 20));
    assert_eq!(FqParams::mac80211_no_vht().memory_limit, 4 << 20);
    assert!(FqParams { flows: 0, ..p }.validate().is_err());
    assert!(FqParams { quantum: 0, ..p }.validate().is_err());
    assert!(p.validate().is_ok());
    assert_eq!(serde_json::from_str::<FqParams>(r#"{"limit": 100}"#).unwrap(), FqParams { limit: 100, ..p });
}

#[test]
fn a_sparse_flow_jumps_ahead_of_a_backlogged_one() {
    let mut r = Rig::new(FqParams::default());
    r.put(ms(0), 1, 10, 1500);
    assert_eq!(r.get_flow(ms(0)), Some(1));
    assert_eq!(r.get_flow(ms(0)), Some(1), "flow 1 cycles to the old list and goes on alone");
    assert_eq!(r.info(1).unwrap().list, Some(FlowList::Old));
    let sparse = r.put(ms(1), 2, 1, 100)[0];
    assert_eq!(r.info(2).unwrap().list, Some(FlowList::New));
    assert_eq!(r.get(ms(1)).unwrap().id, sparse, "the new flow is served first");
    assert_eq!(r.get_flow(ms(1)), Some(1));
}

#[test]
fn drr_deficits_follow_the_quantum() {
    let mut r = Rig::new(FqParams::default());
    r.put(ms(0), 1, 3, 1500);
    r.get(ms(0));
    assert_eq!(r.info(1).unwrap().deficit, 300 - 1500);
    // The next dequeue tops the deficit up 5 times (−1200 → 300) before flow 1 may send again.
    r.get(ms(0));
    assert_eq!(r.info(1).unwrap().deficit, 300 - 1500);
}

#[test]
fn backlogged_flows_share_bytes_within_one_quantum() {
    let mut r = Rig::new(FqParams::default());
    r.put(ms(0), 1, 200, 1500);
    r.put(ms(0), 2, 1000, 300);
    let mut bytes: BTreeMap<u32, i64> = BTreeMap::new();
    for _ in 0..600 {
        let p = r.get(ms(0)).unwrap();
        *bytes.entry(p.flow).or_default() += p.size as i64;
        let diff = (bytes.get(&1).unwrap_or(&0) - bytes.get(&2).unwrap_or(&0)).abs();
        assert!(diff <= 1500 + 300, "{bytes:?}");
    }
    assert!(bytes[&1] > 100_000 && bytes[&2] > 100_000, "{bytes:?}");
}

#[test]
fn an_emptied_new_flow_moves_to_old_only_if_old_is_non_empty() {
    let mut r = Rig::new(FqParams::default());
    // Alone: a flow that empties leaves the lists and its tin.
    r.put(ms(0), 3, 1, 100);
    assert_eq!(r.get_flow(ms(0)), Some(3));
    assert_eq!(r.get(ms(0)), None);
    assert_eq!(r.info(3), None);
    assert_eq!(r.fq.tin_list_lens(r.t), (0, 0));
    // With a backlogged flow on the old list, the emptied new flow goes to the old list instead.
    r.put(ms(0), 1, 20, 100);
    for _ in 0..4 {
        assert_eq!(r.get_flow(ms(0)), Some(1));
    }
    assert_eq!(r.info(1).unwrap().list, Some(FlowList::Old));
    r.put(ms(0), 2, 1, 100);
    assert_eq!(r.get_flow(ms(0)), Some(2));
    assert_eq!(r.get_flow(ms(0)), Some(1));
    let b = r.info(2).unwrap();
    assert_eq!((b.list, b.packets, b.tin), (Some(FlowList::Old), 0, r.t));
    // A packet for it now waits its turn on the old list: no second jump ahead.
    r.put(ms(0), 2, 1, 100);
    assert_eq!(r.info(2).unwrap().list, Some(FlowList::Old));
    assert_eq!(r.get_flow(ms(0)), Some(1), "flow 1 still has deficit");
    assert_eq!(r.get_flow(ms(0)), Some(2));
}

#[test]
fn an_empty_old_flow_leaves_the_lists_when_it_reaches_the_head() {
    let mut r = Rig::new(FqParams::default());
    r.put(ms(0), 1, 4, 1500);
    r.get(ms(0));
    r.get(ms(0));
    r.put(ms(0), 2, 1, 100);
    r.get(ms(0)); // flow 2's packet
    while r.get(ms(0)).is_some() {}
    assert_eq!(r.fq.flow_stats(), vec![]);
    assert!(r.fq.tin_is_empty(r.t));
}

#[test]
fn overlimit_cuts_half_the_fattest_flow_from_its_head() {
    let mut r = Rig::new(FqParams { limit: 10, ..Default::default() });
    let a = r.put(ms(0), 1, 8, 1000);
    r.put(ms(0), 2, 2, 1000);
    assert!(r.drops.is_empty());
    r.put(ms(0), 2, 1, 1000);
    let cut: Vec<u64> = r.drops.iter().map(|d| d.0.id).collect();
    assert_eq!(cut, a[..4].to_vec(), "min(32, 8/2) oldest packets of the fattest flow");
    assert!(r.drops.iter().all(|d| d.1 == DropReason::QueueFull));
    assert_eq!(r.fq.backlog_packets(), 7);
    let s = r.fq.stats();
    assert_eq!((s.overlimit, s.overlimit_drops, s.overmemory), (1, 4, 0));
    assert_eq!(r.fq.tin_stats(r.t).overlimit_drops, 4);
    r.fq.check_invariants();
}

#[test]
fn over_memory_cuts_repeat_until_under_the_limit() {
    let mut r = Rig::new(FqParams { memory_limit: 10_000, skb_overhead: 0, ..Default::default() });
    r.put(ms(0), 1, 4, 1000);
    let b = r.put(ms(0), 2, 4, 1000);
    r.put(ms(0), 2, 1, 5000);
    // 13000 B: flow 2 (9000 B, 5 packets) loses 2; 11000 B: flow 2 (7000 B, 3) loses 1; 10000 B.
    let cut: Vec<u64> = r.drops.iter().map(|d| d.0.id).collect();
    assert_eq!(cut, b[..3].to_vec());
    assert_eq!(r.fq.stats().memory_usage, 10_000);
    assert_eq!((r.fq.stats().overmemory, r.fq.stats().overmemory_drops), (2, 3));
}

#[test]
fn the_arriving_packet_itself_can_be_the_cut() {
    let mut r = Rig::new(FqParams { memory_limit: 10_000, skb_overhead: 0, ..Default::default() });
    r.put(ms(0), 1, 4, 1000);
    r.put(ms(0), 2, 4, 1000);
    let big = r.put(ms(0), 3, 1, 9000)[0];
    assert_eq!(r.drops.iter().map(|d| d.0.id).collect::<Vec<_>>(), vec![big]);
    // Its flow stays on the new list, empty, until a dequeue retires it.
    assert_eq!(r.info(3).unwrap().packets, 0);
    r.fq.check_invariants();
}

#[test]
fn skb_overhead_counts_against_memory() {
    let mut r = Rig::new(FqParams { memory_limit: 10_000, skb_overhead: 1000, ..Default::default() });
    r.put(ms(0), 1, 5, 1000);
    assert_eq!(r.fq.stats().memory_usage, 10_000);
    assert!(r.drops.is_empty());
    r.put(ms(0), 2, 1, 1);
    assert_eq!(r.drops.len(), 2, "flow 1 loses min(32, 5/2) packets");
}

#[test]
fn a_flow_owned_by_another_tin_sends_the_packet_to_the_default_flow() {
    let mut fq = fq(FqParams::default());
    let (t0, t1) = (fq.add_tin(CodelParams::mac80211()), fq.add_tin(CodelParams::mac80211()));
    let mut drops = vec![];
    fq.enqueue_at(ms(0), t0, 7, pkt(0, 7, 500), &mut drops);
    assert_eq!(fq.flow_for(t1, 7), FlowId(4096 + 1));
    fq.enqueue_at(ms(0), t1, 7, pkt(1, 7, 500), &mut drops);
    fq.enqueue_at(ms(0), t1, 7, pkt(2, 7, 500), &mut drops);
    assert_eq!((fq.stats().collisions, fq.tin_stats(t1).collisions, fq.tin_stats(t0).collisions), (2, 2, 0));
    let flows = fq.flow_stats();
    assert_eq!(flows.len(), 2);
    assert!(flows[1].default_flow && flows[1].tin == t1 && flows[1].packets == 2);
    assert_eq!((fq.tin_backlog_packets(t0), fq.tin_backlog_packets(t1)), (1, 2));
    assert_eq!(fq.tin_backlog_bytes(t1), 1000);
    assert_eq!(fq.dequeue(ms(0), t1, &mut drops).unwrap().id, 1);
    assert_eq!(fq.dequeue(ms(0), t0, &mut drops).unwrap().id, 0);
    fq.check_invariants();
    // Once tin 0 lets go of flow 7 (empty at dequeue), tin 1 gets the hashed flow.
    assert_eq!(fq.dequeue(ms(0), t0, &mut drops), None);
    assert_eq!(fq.flow_for(t1, 7), FlowId(7));
    fq.enqueue_at(ms(0), t1, 7, pkt(3, 7, 500), &mut drops);
    assert_eq!(fq.stats().collisions, 2);
    assert_eq!(fq.tin_stats(t1).flows, 2, "the default flow, then flow 7");
    fq.check_invariants();
}

#[test]
fn default_flows_are_cut_when_fattest() {
    let mut fq = fq(FqParams { limit: 6, ..Default::default() });
    let (t0, t1) = (fq.add_tin(CodelParams::mac80211()), fq.add_tin(CodelParams::mac80211()));
    let mut drops = vec![];
    fq.enqueue_at(ms(0), t0, 7, pkt(0, 7, 100), &mut drops);
    for id in 1..=6 {
        fq.enqueue_at(ms(0), t1, 7, pkt(id, 7, 100), &mut drops);
    }
    assert_eq!(drops.iter().map(|d| d.0.id).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(fq.tin_stats(t1).overlimit, 1);
    fq.check_invariants();
}

#[test]
fn the_flow_hash_is_seeded_and_spreads_flows() {
    let a = fq(FqParams::default());
    let b = Fq::new(FqParams::default(), &mut Rng::derive(2, "test/fq"));
    let idx = |f: &Fq, flow: u32| f.flow_index(&pkt(0, flow, 100));
    assert_eq!(idx(&a, 5), idx(&a, 5));
    assert_eq!(a.flow_index(&pkt(9, 5, 1500)), idx(&a, 5), "only the flow identity counts");
    assert!((0..64).any(|f| idx(&a, f) != idx(&b, f)), "another seed, another perturbation");
    let distinct: BTreeSet<u32> = (0..8192).map(|f| idx(&a, f)).collect();
    // 8192 balls in 4096 bins: 4096 (1 − e⁻²) ≈ 3542 bins expected.
    assert!((3400..3700).contains(&distinct.len()), "{}", distinct.len());
    assert!(distinct.iter().all(|&i| i < 4096));
    assert_eq!(reciprocal_scale(u32::MAX, 4096), 4095);
}

#[test]
fn enqueue_hashes_into_the_table() {
    let mut fq = fq(FqParams::default());
    let t = fq.add_tin(CodelParams::mac80211());
    let mut drops = vec![];
    fq.enqueue(ms(0), t, pkt(0, 42, 100), &mut drops);
    let f = fq.flow_stats()[0];
    assert_eq!(f.flow, FlowId(fq.flow_index(&pkt(0, 42, 100))));
    assert_eq!(fq.dequeue(ms(3), t, &mut drops).unwrap().enqueued, ms(0));
}

/// Flow 1 receives a packet every 0.5 ms and is served one per ms, so the n-th dequeue sees a sojourn
/// of (n + 1)/2 ms: it reaches 20 ms at the 39-ms dequeue and CoDel (20 ms / 100 ms) drops first at
/// 140 ms. With `sparse`, flow 2 sends one 200-B packet every 50 ms.
fn standing_flow(codel: CodelParams, sparse: bool) -> (Rig, Vec<u64>, Option<SimTime>) {
    let mut r = Rig::new(FqParams::default());
    r.fq.set_tin_codel(r.t, codel);
    let (mut first_drop, mut sparse_ids, mut next_us) = (None, vec![], 0);
    for tick in 1..=1_000u64 {
        while next_us <= tick * 1000 {
            r.put(SimTime::from_us(next_us), 1, 1, 1000);
            next_us += 500;
        }
        if sparse && tick % 50 == 0 {
            sparse_ids.extend(r.put(ms(tick), 2, 1, 200));
        }
        let before = r.drops.len();
        let p = r.get(ms(tick)).unwrap();
        if p.flow == 2 {
            assert_eq!(p.enqueued, ms(tick), "the sparse flow waits for nobody");
        }
        if r.drops.len() > before && first_drop.is_none() {
            first_drop = Some(ms(tick));
        }
    }
    (r, sparse_ids, first_drop)
}

#[test]
fn codel_drops_a_standing_flow_and_spares_a_sparse_one() {
    let (r, sparse_ids, _) = standing_flow(CodelParams::mac80211(), true);
    assert!(r.drops.len() > 10);
    assert!(r.drops.iter().all(|d| d.1 == DropReason::Aqm && d.0.flow == 1));
    assert!(r.drops.iter().all(|d| !sparse_ids.contains(&d.0.id)));
    assert_eq!(r.fq.tin_stats(r.t).codel.drop_count as usize, r.drops.len());
    assert_eq!(r.fq.codel_stats(), r.fq.tin_stats(r.t).codel);
    let (r, _, first) = standing_flow(CodelParams::mac80211(), false);
    assert_eq!(first, Some(ms(140)));
    assert!(r.info(1).unwrap().codel_dropping);
}

#[test]
fn the_slow_station_override_delays_codel() {
    // Sojourn reaches 50 ms at the 99-ms dequeue; first drop strictly after 99 + 300 ms.
    let (_, _, first) = standing_flow(CodelParams::mac80211_slow_station(), false);
    assert_eq!(first, Some(ms(400)));
}

#[test]
fn a_dedicated_flow_never_collides_and_its_priority_dequeue_keeps_its_place() {
    let mut r = Rig::new(FqParams { flows: 4, ..Default::default() });
    let d = r.fq.add_dedicated_flow();
    let other = r.fq.add_tin(CodelParams::mac80211());
    // Index 1 is owned by the other tin: hashed packets of r.t would collide into the default flow.
    r.fq.enqueue_at(ms(0), other, 1, pkt(90, 1, 100), &mut r.drops);
    r.put(ms(0), 2, 3, 1000);
    for i in 0..3 {
        r.fq.enqueue_dedicated(ms(1), r.t, d, pkt(50 + i, 7, 500), &mut r.drops);
    }
    r.fq.check_invariants();
    assert_eq!(r.fq.tin_stats(r.t).collisions, 0);
    assert_eq!(r.fq.flow_head(d), (3, Some(ms(1)), 300));
    // The priority path takes the dedicated flow's head and charges its deficit.
    assert_eq!(r.fq.dequeue_dedicated(ms(2), r.t, d, &mut r.drops).map(|p| p.id), Some(50));
    assert_eq!(r.fq.flow_head(d), (2, Some(ms(1)), -200));
    r.fq.check_invariants();
    // Not another tin's: nothing.
    assert!(r.fq.dequeue_dedicated(ms(2), other, d, &mut r.drops).is_none());
    // The normal DRR still serves flow 2 (new list, first) and then the dedicated flow in its turn.
    assert_eq!(r.get_flow(ms(2)), Some(2));
    let order: Vec<u32> = std::iter::from_fn(|| r.get_flow(ms(2))).collect();
    assert_eq!(order.iter().filter(|&&f| f == 7).count(), 2);
    assert_eq!(order.iter().filter(|&&f| f == 2).count(), 2);
    assert_eq!(r.fq.flow_head(d).0, 0);
}

#[derive(Clone, Debug)]
enum Op {
    Enq { tin: u8, idx: u8, size: u32 },
    Deq { tin: u8 },
    /// Into the tin's dedicated flow, and straight out of it (LAST-PQ's priority path).
    EnqDedicated { tin: u8, size: u32 },
    DeqDedicated { tin: u8 },
    Wait { ms: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..3, 0u8..6, 40u32..1500).prop_map(|(tin, idx, size)| Op::Enq { tin, idx, size }),
        4 => (0u8..3).prop_map(|tin| Op::Deq { tin }),
        2 => (0u8..3, 40u32..1500).prop_map(|(tin, size)| Op::EnqDedicated { tin, size }),
        1 => (0u8..3).prop_map(|tin| Op::DeqDedicated { tin }),
        1 => (0u8..60).prop_map(|ms| Op::Wait { ms }),
    ]
}

proptest! {
    /// Counters always equal the contents; every packet is delivered once, dropped once (QueueFull
    /// at enqueue, Aqm at dequeue) or still queued; none is lost or duplicated.
    #[test]
    fn counters_match_contents_and_no_packet_is_lost(ops in proptest::collection::vec(op(), 1..500)) {
        let mut fq = fq(FqParams { flows: 16, limit: 25, memory_limit: 24_000, skb_overhead: 200, ..Default::default() });
        let tins: Vec<TinId> = (0..3).map(|_| fq.add_tin(CodelParams { target_us: 5_000, ..CodelParams::mac80211() })).collect();
        let dedicated: Vec<FlowId> = (0..3).map(|_| fq.add_dedicated_flow()).collect();
        let (mut now, mut id) = (SimTime::ZERO, 0u64);
        let (mut delivered, mut dropped, mut drops) = (vec![], vec![], vec![]);
        for o in ops {
            match o {
                Op::Enq { tin, idx, size } => {
                    fq.enqueue_at(now, tins[tin as usize], idx as u32, pkt(id, idx as u32, size), &mut drops);
                    id += 1;
                    prop_assert!(drops.iter().all(|d| d.1 == DropReason::QueueFull));
                }
                Op::Deq { tin } => {
                    delivered.extend(fq.dequeue(now, tins[tin as usize], &mut drops).map(|p| p.id));
                    prop_assert!(drops.iter().all(|d| d.1 == DropReason::Aqm));
                }
                Op::EnqDedicated { tin, size } => {
                    fq.enqueue_dedicated(now, tins[tin as usize], dedicated[tin as usize], pkt(id, 100 + tin as u32, size), &mut drops);
                    id += 1;
                    prop_assert!(drops.iter().all(|d| d.1 == DropReason::QueueFull));
                }
                Op::DeqDedicated { tin } => {
                    delivered.extend(fq.dequeue_dedicated(now, tins[tin as usize], dedicated[tin as usize], &mut drops).map(|p| p.id));
                    prop_assert!(drops.iter().all(|d| d.1 == DropReason::Aqm));
                }
                Op::Wait { ms } => now += SimDuration::from_ms(ms as u64),
            }
            dropped.extend(drops.drain(..).map(|d| d.0.id));
            fq.check_invariants();
            prop_assert!(fq.backlog_packets() <= 25 && fq.stats().memory_usage <= 24_000);
        }
        for &t in &tins {
            while let Some(p) = fq.dequeue(now, t, &mut drops) {
                delivered.push(p.id);
            }
            prop_assert!(fq.tin_is_empty(t));
        }
        dropped.extend(drops.drain(..).map(|d| d.0.id));
        let mut all: Vec<u64> = delivered.iter().chain(&dropped).copied().collect();
        all.sort_unstable();
        prop_assert_eq!(all, (0..id).collect::<Vec<_>>());
        prop_assert_eq!(fq.backlog_bytes(), 0);
        prop_assert_eq!(fq.flow_stats(), vec![]);
    }
}
