//! Script tests of CoDel: packets with chosen enqueue times, dequeues at chosen instants, asserted
//! drops and state.

use super::*;

const MS: u64 = 1_000_000;

fn pkt(id: u64, size: u32, enq: SimTime) -> Packet {
    Packet { id, flow: 0, seq: id, size, src: 0, dst: 1, hop: 0, dscp: 0, sent: enq, enqueued: enq, hdr: Default::default() }
}

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

/// A hand-filled FIFO: the test decides every packet's enqueue time.
#[derive(Default)]
struct Script {
    q: VecDeque<Packet>,
    ecn: bool,
    next_id: u64,
}

impl Script {
    /// Appends `n` packets of 1000 B enqueued at `at`.
    fn push(&mut self, n: usize, at: SimTime) {
        for _ in 0..n {
            self.q.push_back(pkt(self.next_id, 1000, at));
            self.next_id += 1;
        }
    }
}

impl CodelSource for Script {
    fn pop(&mut self) -> Option<Packet> {
        self.q.pop_front()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.iter().map(|p| p.size as u64).sum()
    }
    fn ecn_capable(&self, _p: &Packet) -> bool {
        self.ecn
    }
}

/// 5 ms / 100 ms, ECN off, no minimum backlog.
fn p5() -> CodelParams {
    CodelParams { target_us: 5_000, interval_us: 100_000, ecn: false, mtu: 0 }
}

struct Rig {
    v: CodelVars,
    s: CodelStats,
    src: Script,
    drops: Vec<Dropped>,
    params: CodelParams,
}

impl Rig {
    fn new(params: CodelParams) -> Self {
        Rig { v: CodelVars::new(), s: CodelStats::default(), src: Script::default(), drops: vec![], params }
    }
    /// Dequeues at `t`; returns the delivered packet id and the ids dropped by this call.
    fn deq(&mut self, t: SimTime) -> (Option<u64>, Vec<u64>) {
        let before = self.drops.len();
        let out = self.v.dequeue(t, &self.params, &mut self.s, &mut self.src, &mut self.drops);
        (out.map(|(p, _)| p.id), self.drops[before..].iter().map(|d| d.0.id).collect())
    }
}

#[test]
fn control_law_is_interval_over_sqrt_count() {
    let i = SimDuration::from_ms(100);
    assert_eq!(control_law(ms(0), i, 1), ms(100));
    assert_eq!(control_law(ms(0), i, 2), SimTime::from_ns(70_710_678));
    assert_eq!(control_law(ms(0), i, 3), SimTime::from_ns(57_735_026));
    assert_eq!(control_law(ms(10), i, 4), ms(60));
    assert_eq!(control_law(ms(0), i, 0), ms(100), "count 0 acts as 1");
}

#[test]
fn presets_match_their_sources() {
    let m = CodelParams::mac80211();
    assert_eq!((m.target(), m.interval(), m.ecn, m.mtu), (SimDuration::from_ms(20), SimDuration::from_ms(100), true, 0));
    let s = CodelParams::mac80211_slow_station();
    assert_eq!((s.target(), s.interval(), s.ecn), (SimDuration::from_ms(50), SimDuration::from_ms(300), false));
    let q = CodelParams::default();
    assert_eq!((q.target(), q.interval(), q.ecn, q.mtu), (SimDuration::from_ms(5), SimDuration::from_ms(100), false, 1514));
    assert!(CodelParams { interval_us: 0, ..q }.validate().is_err());
    let json = serde_json::to_string(&m).unwrap();
    assert_eq!(serde_json::from_str::<CodelParams>(&json).unwrap(), m);
    assert_eq!(serde_json::from_str::<CodelParams>("{}").unwrap(), CodelParams::qdisc_default());
}

/// A standing queue: packets arrive every 0.5 ms and leave one per ms, so sojourn grows without
/// bound. The dequeue at 9 ms is the first with sojourn ≥ 5 ms, so the first drop comes at the first
/// dequeue strictly after 109 ms (110 ms); drop k ≥ 2 comes at the first dequeue at or after
/// 110 + Σ_{j<k} 100/√j ms.
#[test]
fn standing_queue_drop_schedule() {
    let mut q = Codel::new(CodelQdiscParams { limit: 100_000, codel: p5() });
    let mut drops = vec![];
    let mut drop_times = vec![];
    let (mut id, mut next_arrival_us) = (0, 0);
    for tick in 1..=2_000u64 {
        while next_arrival_us <= tick * 1000 {
            q.enqueue(SimTime::from_us(next_arrival_us), pkt(id, 1000, SimTime::ZERO)).unwrap();
            id += 1;
            next_arrival_us += 500;
        }
        let before = drops.len();
        assert!(q.dequeue(ms(tick), &mut drops).is_some());
        for _ in before..drops.len() {
            drop_times.push(tick);
        }
        if tick == 9 {
            assert_eq!(q.vars().first_above_time(), Some(ms(109)));
        }
    }
    let mut expected = vec![110u64];
    let mut d = 110.0f64;
    for k in 1..drop_times.len() {
        d += 100.0 / (k as f64).sqrt();
        expected.push((d - 1e-9).ceil() as u64);
    }
    assert!(drop_times.len() > 60, "{drop_times:?}");
    assert_eq!(drop_times, expected);
    assert_eq!(q.vars().count() as usize, drop_times.len());
    assert_eq!(q.codel_stats().drop_count as usize, drop_times.len());
    assert!(drops.iter().all(|d| d.1 == DropReason::Aqm));
    assert_eq!(q.stats.dropped as usize, drop_times.len());
    assert_eq!(q.stats.enqueued, q.stats.dequeued + q.stats.dropped + q.len_packets() as u64);
}

#[test]
fn above_target_for_less_than_an_interval_never_drops() {
    let mut r = Rig::new(p5());
    r.src.push(10, ms(0));
    assert_eq!(r.deq(ms(10)), (Some(0), Vec::<u64>::new()));
    assert_eq!(r.v.first_above_time(), Some(ms(110)));
    assert_eq!(r.deq(ms(110)), (Some(1), Vec::<u64>::new()), "strictly after first_above_time");
    assert_eq!(r.deq(ms(111)), (Some(3), vec![2]));
    assert!(r.v.dropping());
    assert_eq!((r.v.count(), r.v.lastcount(), r.v.drop_next()), (1, 1, ms(211)));
}

#[test]
fn dropping_ends_at_the_first_packet_below_target() {
    let mut r = Rig::new(p5());
    r.src.push(4, ms(0));
    r.deq(ms(100));
    assert_eq!(r.deq(ms(201)), (Some(2), vec![1]));
    assert!(r.v.dropping());
    // Before drop_next (301 ms) a young head packet simply ends the state.
    r.src.q.clear();
    r.src.push(1, ms(250));
    r.src.push(1, ms(0));
    assert_eq!(r.deq(ms(252)), (Some(4), Vec::<u64>::new()));
    assert!(!r.v.dropping());
    assert_eq!(r.v.first_above_time(), None);
}

#[test]
fn a_due_drop_followed_by_a_young_packet_ends_the_state() {
    let mut r = Rig::new(p5());
    r.src.push(5, ms(0));
    r.src.push(1, ms(299));
    r.deq(ms(100));
    assert_eq!(r.deq(ms(201)), (Some(2), vec![1]));
    assert_eq!(r.deq(ms(250)), (Some(3), Vec::<u64>::new()), "not yet due");
    assert_eq!(r.deq(ms(301)), (Some(5), vec![4]), "due: drop 4, then 5 is young");
    assert!(!r.v.dropping());
    assert_eq!(r.v.count(), 2);
}

#[test]
fn several_due_drops_in_one_dequeue() {
    let mut r = Rig::new(p5());
    r.src.push(20, ms(0));
    r.deq(ms(100));
    r.deq(ms(201)); // enters: drop_next 301
    // At 400 ms: drop at 301 (count 2, next 371.7), at 371.7 (count 3, next 429.4) → two drops.
    let (out, dropped) = r.deq(ms(400));
    assert_eq!(dropped.len(), 2);
    assert_eq!(out, Some(dropped[1] + 1));
    assert_eq!(r.v.count(), 3);
    assert_eq!(r.v.drop_next(), control_law(control_law(ms(301), SimDuration::from_ms(100), 2), SimDuration::from_ms(100), 3));
}

/// Drives `r` in the dropping state with 1-ms dequeues until `count` reaches `n`; returns the time.
fn drop_until_count(r: &mut Rig, mut t: u64, n: u32) -> u64 {
    while r.v.count() < n {
        t += 1;
        r.deq(ms(t));
        assert!(r.v.dropping());
    }
    t
}

/// Makes the head young so the next dequeue at `t` leaves the dropping state.
fn calm(r: &mut Rig, t: u64) {
    r.src.q.clear();
    r.src.push(3, ms(t));
    r.deq(ms(t));
    assert!(!r.v.dropping());
}

/// Refills with old packets and dequeues at `t` and `t + 101`; returns with the state re-entered.
fn reenter(r: &mut Rig, t: u64) {
    r.src.q.clear();
    r.src.push(1000, ms(0));
    r.deq(ms(t));
    r.deq(ms(t + 101));
    assert!(r.v.dropping());
}

#[test]
fn count_reuse_rule() {
    let mut r = Rig::new(p5());
    r.src.push(1000, ms(0));
    r.deq(ms(10));
    r.deq(ms(111));
    assert_eq!((r.v.count(), r.v.lastcount()), (1, 1));
    let t = drop_until_count(&mut r, 111, 5);
    calm(&mut r, t + 1);
    // Re-entry within 16 intervals of drop_next: count = 5 − 1 = 4, so the next drop is 50 ms out.
    let t = t + 500;
    reenter(&mut r, t);
    assert_eq!((r.v.count(), r.v.lastcount()), (4, 4));
    assert_eq!(r.v.drop_next(), ms(t + 101 + 50));
    // An episode of 3 more drops (count 7), then re-entry more than 16 intervals later: count = 1.
    let t = drop_until_count(&mut r, t + 101, 7);
    calm(&mut r, t + 1);
    let late = r.v.drop_next().as_ns() / MS + 1_601;
    reenter(&mut r, late);
    assert_eq!((r.v.count(), r.v.drop_next()), (1, ms(late + 101 + 100)));
    // One extra drop only (delta = 1): count restarts at 1 even when re-entering at once.
    let t = drop_until_count(&mut r, late + 101, 2);
    calm(&mut r, t + 1);
    reenter(&mut r, t + 2);
    assert_eq!(r.v.count(), 1);
}

#[test]
fn ecn_capable_packets_are_marked_not_dropped() {
    let mut r = Rig::new(CodelParams { ecn: true, ..p5() });
    r.src.ecn = true;
    r.src.push(1000, ms(0));
    r.deq(ms(10));
    let (id, dropped) = r.deq(ms(111));
    assert_eq!((id, dropped), (Some(1), Vec::<u64>::new()), "the marked packet itself is delivered");
    assert!(r.v.dropping());
    let mut marks = 1;
    for t in 112..600 {
        let before = r.s.ecn_mark;
        let out = r.v.dequeue(ms(t), &r.params, &mut r.s, &mut r.src, &mut r.drops).unwrap();
        assert_eq!(out.1 == Verdict::MarkCe, r.s.ecn_mark > before);
        marks += (r.s.ecn_mark - before) as u32;
    }
    assert!(r.drops.is_empty());
    assert_eq!(r.s.drop_count, 0);
    assert_eq!(r.v.count(), marks);
    assert!(marks >= 4, "{marks}");
    // ECN off: the same packets are dropped.
    let mut r = Rig::new(p5());
    r.src.ecn = true;
    r.src.push(10, ms(0));
    r.deq(ms(10));
    assert_eq!(r.deq(ms(111)), (Some(2), vec![1]));
}

#[test]
fn minimum_backlog_exempts_small_queues() {
    // qdisc default: no drop while ≤ 1514 B remain after the dequeued packet.
    let mut r = Rig::new(CodelParams { mtu: 1514, ..p5() });
    for t in (10..1000).step_by(10) {
        r.src.push(2, ms(0)); // one leaves, one 1000-B packet remains
        assert_eq!(r.deq(ms(t)).1, Vec::<u64>::new());
        r.src.q.pop_front();
    }
    assert_eq!(r.v.first_above_time(), None);
    // mac80211 (mtu 0): the last packet of a queue is still exempt (backlog 0 ≤ 0) ...
    let mut r = Rig::new(p5());
    for t in (10..1000).step_by(10) {
        r.src.push(1, ms(0));
        assert_eq!(r.deq(ms(t)).1, Vec::<u64>::new());
    }
    // ... but one more queued byte is enough to drop.
    r.src.push(2, ms(0));
    r.deq(ms(1000));
    r.src.push(2, ms(0));
    assert_eq!(r.deq(ms(1101)).1.len(), 1);
}

#[test]
fn an_empty_queue_leaves_the_dropping_state() {
    let mut r = Rig::new(p5());
    r.src.push(3, ms(0));
    r.deq(ms(10));
    assert_eq!(r.deq(ms(111)), (Some(2), vec![1]));
    assert!(r.v.dropping());
    assert_eq!(r.deq(ms(112)), (None, Vec::<u64>::new()));
    assert!(!r.v.dropping());
}

#[test]
fn qdisc_tail_drops_at_its_limit() {
    let mut q = Codel::new(CodelQdiscParams { limit: 2, ..Default::default() });
    assert!(q.enqueue(ms(1), pkt(0, 100, ms(0))).is_ok());
    assert!(q.enqueue(ms(1), pkt(1, 100, ms(0))).is_ok());
    assert_eq!(q.enqueue(ms(1), pkt(2, 100, ms(0))).unwrap_err().1, DropReason::QueueFull);
    assert_eq!((q.len_packets(), q.len_bytes()), (2, 200));
    let mut d = vec![];
    let p = q.dequeue(ms(3), &mut d).unwrap();
    assert_eq!((p.id, p.enqueued), (0, ms(1)), "enqueue stamps the packet");
    assert_eq!(q.stats, QueueStats { enqueued: 2, dequeued: 1, dropped: 1, max_packets: 2, max_bytes: 200 });
    assert!(CodelQdiscParams { limit: 0, ..Default::default() }.validate().is_err());
}
