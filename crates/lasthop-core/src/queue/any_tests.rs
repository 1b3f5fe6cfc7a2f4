//! The new disciplines through [`AnyQueue`]: construction from params, drop reasons, wakeups.

use super::*;

fn pkt(id: u64, flow: u32, size: u32) -> Packet {
    Packet { id, flow, seq: id, size, src: 0, dst: 1, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

fn rng() -> Rng {
    Rng::derive(11, "link0/queue")
}

/// A standing queue (one packet in per 0.5 ms, one out per ms) for `ms` milliseconds; returns the
/// drops by reason (AQM, limit) after checking the counters: every accepted packet was sent, dropped
/// later or is still queued.
fn stand(q: &mut AnyQueue, ms: u64) -> (usize, usize) {
    let (mut drops, mut next_us, mut id, mut refused) = (vec![], 0, 0, 0);
    for tick in 1..=ms {
        while next_us <= tick * 1000 {
            if let Err(d) = q.enqueue(SimTime::from_us(next_us), pkt(id, (id % 3) as u32, 1000)) {
                drops.push(d);
                refused += 1;
            }
            q.drain_drops(&mut drops);
            id += 1;
            next_us += 500;
        }
        q.dequeue(SimTime::from_ms(tick), &mut drops);
    }
    let s = q.stats();
    assert_eq!(s.dropped as usize, drops.len());
    assert_eq!(s.enqueued + refused, id);
    assert_eq!(s.enqueued, s.dequeued + (drops.len() as u64 - refused) + q.len_packets() as u64);
    let aqm = drops.iter().filter(|d| d.1 == DropReason::Aqm).count();
    (aqm, drops.len() - aqm)
}

#[test]
fn codel_through_any_queue_drops_for_aqm() {
    let mut q = AnyQueue::from_params(&QueueParams::Codel(CodelQdiscParams::default()), rng());
    let (aqm, full) = stand(&mut q, 1000);
    assert!(aqm > 5 && full == 0, "{aqm} {full}");
    assert!(matches!(q.aqm_stats(), AqmStats::Codel(s) if s.drop_count as usize == aqm));
    assert_eq!(q.next_wakeup(), None);
}

#[test]
fn fq_codel_through_any_queue() {
    let p = FqCodelParams { limit: 100, ..Default::default() };
    let mut q = AnyQueue::from_params(&QueueParams::FqCodel(p), rng());
    let mut drops = vec![];
    for i in 0..150 {
        assert!(q.enqueue(SimTime::ZERO, pkt(i, 1, 1000)).is_ok());
    }
    q.drain_drops(&mut drops);
    assert!(!drops.is_empty() && drops.iter().all(|d| d.1 == DropReason::QueueFull));
    assert!(q.len_packets() <= 100);
    assert_eq!(q.stats().dropped as usize, drops.len());
    let AqmStats::FqCodel(s) = q.aqm_stats() else { panic!() };
    assert_eq!(s.drop_overlimit as usize, drops.len());
}

#[test]
fn fq_codel_cuts_not_drained_come_out_of_dequeue() {
    let p = FqCodelParams { limit: 4, ..Default::default() };
    let mut q = AnyQueue::fq_codel(p, &mut rng());
    for i in 0..5 {
        q.enqueue(SimTime::ZERO, pkt(i, 1, 1000)).unwrap();
    }
    let mut drops = vec![];
    assert!(q.dequeue(SimTime::ZERO, &mut drops).is_some());
    assert_eq!(drops.len(), 3, "5000 B in one flow: cut until 2500 B are gone");
}

#[test]
fn pie_through_any_queue_has_wakeups_and_drops_early() {
    let mut q = AnyQueue::from_params(&QueueParams::Pie(PieParams::default()), rng());
    assert_eq!(q.next_wakeup(), None);
    q.enqueue(SimTime::ZERO, pkt(0, 0, 100)).unwrap();
    assert_eq!(q.next_wakeup(), Some(SimTime::from_ms(500)));
    q.advance_to(SimTime::from_ms(500));
    assert_eq!(q.next_wakeup(), Some(SimTime::from_ms(515)));
    let mut q = AnyQueue::pie(PieParams::default(), rng());
    let (aqm, full) = stand(&mut q, 3000);
    assert!(aqm > 100 && full == 0, "{aqm} {full}");
    let AqmStats::Pie(s) = q.aqm_stats() else { panic!() };
    assert_eq!(s.early_drops as usize, aqm);
}

#[test]
fn params_round_trip_with_type_tags() {
    let all = [
        QueueParams::Codel(CodelQdiscParams::default()),
        QueueParams::FqCodel(FqCodelParams::default()),
        QueueParams::Pie(PieParams::default()),
    ];
    for p in all {
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<QueueParams>(&json).unwrap(), p, "{json}");
        assert!(p.validate().is_ok());
    }
    let p: QueueParams = serde_json::from_str(r#"{"type": "pie", "target_us": 20000}"#).unwrap();
    assert_eq!(p, QueueParams::Pie(PieParams { target_us: 20_000, ..Default::default() }));
    assert!(serde_json::from_str::<QueueParams>(r#"{"type": "pie", "taget_us": 1}"#).is_err());
    let schema = serde_json::to_string(&schemars::schema_for!(QueueParams)).unwrap();
    assert!(schema.contains("fq_codel") && schema.contains("interval_us"));
}

#[test]
fn fifo_is_unchanged() {
    let mut q = AnyQueue::Fifo(Fifo::new(Some(1), None));
    assert!(q.enqueue(SimTime::ZERO, pkt(0, 0, 100)).is_ok());
    assert_eq!(q.enqueue(SimTime::ZERO, pkt(1, 0, 100)).unwrap_err().1, DropReason::QueueFull);
    let mut drops = vec![];
    q.drain_drops(&mut drops);
    assert_eq!(q.dequeue(SimTime::ZERO, &mut drops).unwrap().id, 0);
    assert!(drops.is_empty());
    assert_eq!((q.next_wakeup(), q.aqm_stats()), (None, AqmStats::Fifo));
}
