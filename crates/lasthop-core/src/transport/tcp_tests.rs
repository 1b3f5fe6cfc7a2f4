//! Script tests: feed ACKs and timers at given times, assert what the sender and receiver do.

use super::*;
use crate::transport::cc::CubicParams;

const MSS: u64 = 1448;

fn ms(t: u64) -> SimTime {
    SimTime::from_ms(t)
}

fn sender(limit: Option<u64>) -> TcpSender {
    let p = TcpParams { cc: CcParams::Cubic(CubicParams::default()), ..TcpParams::default() };
    TcpSender::new(&p, SimTime::ZERO, Rng::derive(1, "tcp"), limit).unwrap()
}

fn drain(s: &mut TcpSender, now: SimTime) -> Vec<Segment> {
    std::iter::from_fn(|| s.poll_send(now)).take(1000).collect()
}

#[test]
fn initial_window_then_slow_start() {
    let mut s = sender(None);
    let first = drain(&mut s, ms(0));
    assert_eq!(first.len() as u64, s.cc().cwnd() / MSS, "the initial window goes out at once");
    assert_eq!(first[1], Segment { seq: MSS, len: MSS as u32 });
    let n = first.len() as u64;
    // Every segment acked one RTT later: slow start opens one MSS per MSS acked.
    for i in 1..=n {
        s.on_ack(ms(40), i * MSS, &[], ms(0));
    }
    let second = drain(&mut s, ms(40));
    assert_eq!(second.len() as u64, 2 * n, "cwnd doubled");
}

#[test]
fn sacked_data_above_a_hole_marks_it_lost_once() {
    let mut s = sender(None);
    let segs = drain(&mut s, ms(0));
    assert!(segs.len() >= 6);
    // Segment 1 (seq MSS) lost; segments 2.. arrive and are SACKed.
    s.on_ack(ms(40), MSS, &[(2 * MSS, 4 * MSS)], ms(0));
    assert!(drain(&mut s, ms(40)).iter().all(|x| x.seq != MSS), "two segments above: not yet lost");
    s.on_ack(ms(41), MSS, &[(2 * MSS, 5 * MSS)], ms(0));
    let out = drain(&mut s, ms(41));
    assert_eq!(out.first(), Some(&Segment { seq: MSS, len: MSS as u32 }), "{out:?}");
    assert_eq!(s.stats.fast_recoveries, 1);
    s.on_ack(ms(42), MSS, &[(2 * MSS, 6 * MSS)], ms(0));
    assert_eq!(s.stats.fast_recoveries, 1, "one congestion event per episode");
    assert_eq!(s.stats.retransmissions, 1, "the retransmission is not repeated");
}

#[test]
fn every_hole_of_a_burst_loss_is_repaired_in_one_round_trip() {
    let mut s = sender(None);
    let segs = drain(&mut s, ms(0));
    let n = segs.len() as u64;
    // Segments 0, 2 and 4 lost; the rest SACKed by the time the last ACK arrives.
    let sack = [(MSS, 2 * MSS), (3 * MSS, 4 * MSS), (5 * MSS, n * MSS)];
    s.on_ack(ms(40), 0, &sack, ms(0));
    let out: Vec<u64> = drain(&mut s, ms(40)).iter().map(|x| x.seq).collect();
    assert_eq!(&out[..3], &[0, 2 * MSS, 4 * MSS], "{out:?}");
}

#[test]
fn rto_backs_off_and_retransmits_from_the_first_hole() {
    let mut s = sender(Some(10 * MSS));
    drain(&mut s, ms(0));
    let t = s.next_wakeup(ms(0)).expect("RTO armed");
    assert_eq!(t, ms(1000), "initial RTO 1 s");
    s.on_timer(t);
    assert_eq!(s.stats.rtos, 1);
    let out = drain(&mut s, t);
    assert_eq!(out.first().map(|x| x.seq), Some(0));
    assert_eq!(s.next_wakeup(t), Some(ms(3000)), "backed off to 2 s");
}

#[test]
fn rtt_estimate_sets_the_rto_with_a_200_ms_floor() {
    let mut s = sender(None);
    drain(&mut s, ms(0));
    s.on_ack(ms(50), MSS, &[], ms(0));
    // SRTT 50, RTTVAR 25 → 150 ms, floored at 200 ms.
    assert_eq!(s.stats()["rto_ms"], serde_json::json!(200.0));
    assert_eq!(s.stats()["srtt_ms"], serde_json::json!(50.0));
}

#[test]
fn a_limited_transfer_completes() {
    let mut s = sender(Some(3 * MSS + 100));
    let segs = drain(&mut s, ms(0));
    assert_eq!(segs.iter().map(|x| x.len as u64).sum::<u64>(), 3 * MSS + 100);
    s.on_ack(ms(40), 3 * MSS + 100, &[], ms(0));
    assert!(s.done());
    assert_eq!(s.next_wakeup(ms(40)), None);
}

#[test]
fn receiver_delays_acks_and_acks_out_of_order_data_at_once() {
    let mut r = TcpReceiver::new(&TcpParams::default());
    assert_eq!(r.on_segment(ms(0), 0, 1448, ms(0)), None, "first in-order segment: delayed");
    assert_eq!(r.next_wakeup(), Some(ms(40)));
    assert_eq!(r.on_segment(ms(1), 1448, 1448, ms(0)), Some(Ack { ack: 2896, ts_echo: ms(0) }), "every second");
    // Segment 3 lost; 4 arrives: duplicate ACK at once.
    assert_eq!(r.on_segment(ms(2), 4344, 1448, ms(1)), Some(Ack { ack: 2896, ts_echo: ms(1) }));
    // The hole is filled: ACK everything at once.
    assert_eq!(r.on_segment(ms(3), 2896, 1448, ms(2)), Some(Ack { ack: 5792, ts_echo: ms(2) }));
    assert_eq!(r.delivered_bytes, 5792);
    // A lone segment is ACKed when the delayed-ACK timer fires.
    assert_eq!(r.on_segment(ms(10), 5792, 1448, ms(9)), None);
    assert_eq!(r.on_timer(ms(49)), None);
    assert_eq!(r.on_timer(ms(50)), Some(Ack { ack: 7240, ts_echo: ms(9) }));
}

#[test]
fn sack_blocks_merge_and_report_the_latest_three_newest_first() {
    let mut r = TcpReceiver::new(&TcpParams::default());
    // rcv_nxt stays 0 (segment 0 lost); 1448-byte segments k = 1..10 arrive with holes at 4 and 7.
    //   seq/1448  0  1  2  3  4  5  6  7  8  9 10 11 12
    //   held      .  x  x  x  .  x  x  .  x  x  .  x  .
    let seg = |k: u64| k * 1448;
    for k in [1, 2, 3, 5, 6, 8, 9] {
        r.on_segment(ms(k), seg(k), 1448, ms(0));
    }
    // Adjacent segments are one block each; the block of the latest arrival comes first.
    assert_eq!(r.sack_blocks(), vec![(seg(8), seg(10)), (seg(5), seg(7)), (seg(1), seg(4))]);
    r.on_segment(ms(20), seg(11), 1448, ms(0));
    // Four blocks held, three reported: the oldest-reported one drops out.
    assert_eq!(r.sack_blocks(), vec![(seg(11), seg(12)), (seg(8), seg(10)), (seg(5), seg(7))]);
    // Filling hole 7 joins [5,7) and [8,10) into one block, reported first.
    r.on_segment(ms(21), seg(7), 1448, ms(0));
    assert_eq!(r.sack_blocks(), vec![(seg(5), seg(10)), (seg(11), seg(12)), (seg(1), seg(4))]);
    // The lost segment arrives: everything up to the next hole (10) is delivered in order.
    r.on_segment(ms(22), seg(0), 1448, ms(0));
    r.on_segment(ms(23), seg(4), 1448, ms(0));
    assert_eq!(r.delivered_bytes, seg(10));
    assert_eq!(r.sack_blocks(), vec![(seg(11), seg(12))]);
}

#[test]
fn a_max_pacing_rate_spaces_the_segments_by_their_wire_time() {
    // 11.6 Mbit/s: one 1448-byte segment plus 52 bytes of headers every 1500·8 / 11.6e6 s ≈ 1.0345 ms.
    let p = TcpParams { max_pacing_rate_mbps: Some(11.6), ..TcpParams::default() };
    let mut s = TcpSender::new(&p, SimTime::ZERO, Rng::derive(1, "tcp"), None).unwrap();
    let gap = BitRate::from_bps(11_600_000).tx_time(1500);
    assert_eq!(drain(&mut s, ms(0)).len(), 1, "one segment, then the pacer holds the window's rest");
    assert_eq!(s.next_wakeup(ms(0)), Some(SimTime::ZERO + gap));
    assert!(s.poll_send(SimTime::ZERO + gap - SimDuration::from_ns(1)).is_none());
    let mut t = SimTime::ZERO + gap;
    for i in 1..5u64 {
        assert_eq!(s.poll_send(t), Some(Segment { seq: i * MSS, len: MSS as u32 }), "segment {i} at {t}");
        t = s.next_wakeup(t).expect("paced");
        assert_eq!(t, SimTime::ZERO + gap * (i + 1));
    }
    // Without the cap, Cubic (no pacing by default) sends the initial window at once.
    assert!(drain(&mut sender(None), ms(0)).len() > 5);
}
