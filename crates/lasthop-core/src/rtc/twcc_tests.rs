use super::*;
use crate::rng::Rng;

fn us(x: u64) -> SimTime {
    SimTime::from_us(x)
}

fn round_trip(msg: &TwccFeedback) -> TwccFeedback {
    let bytes = msg.encode();
    assert_eq!(bytes.len() % 4, 0);
    let back = TwccFeedback::parse(&bytes, &mut SeqUnwrapper { last: Some(msg.base_seq) }).unwrap();
    assert_eq!(&back, msg);
    back
}

fn statuses(msg: &TwccFeedback) -> Vec<(u64, Option<u64>)> {
    msg.packets().iter().map(|p| (p.seq, p.arrival.map(|t| t.as_ns() / 1_000))).collect()
}

#[test]
fn hand_computed_wire_bytes() {
    // Seq 5 at 65 ms, seq 6 lost, seq 7 at 64.5 ms (reordered in time).
    // Reference = floor(65 / 64) = 1; deltas +4 ticks (small) and −2 ticks (large); one two-bit vector
    // chunk 11|01 00 10 00 00 00 00 = 0xD200; 25 bytes + 3 padding (last byte = 3, P bit set).
    let mut count = 0;
    let msgs = build_feedback(&[(5, us(65_000)), (7, us(64_500))], None, &mut count);
    assert_eq!(msgs.len(), 1);
    assert_eq!(count, 1);
    let bytes = msgs[0].encode();
    let expected = [
        0xAF, 0xCD, 0x00, 0x06, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x05, 0x00, 0x03, 0x00, 0x00, 0x01, 0x00, 0xD2,
        0x00, 0x04, 0xFF, 0xFE, 0x00, 0x00, 0x03,
    ];
    assert_eq!(bytes, expected);
    assert_eq!(statuses(&round_trip(&msgs[0])), vec![(5, Some(65_000)), (6, None), (7, Some(64_500))]);
}

#[test]
fn quantisation_is_250_us_and_does_not_accumulate() {
    // 400 packets 1.1 ms apart (4.4 ticks): rounding each delta from the true previous arrival would
    // drift by 0.1 ms per packet; from the quantised one every error stays within 125 µs.
    let received: Vec<(u64, SimTime)> = (0..400).map(|k| (k, us(3_000_100 + k * 1_100))).collect();
    let msgs = build_feedback(&received, None, &mut 0);
    assert_eq!(msgs.len(), 1);
    let back = round_trip(&msgs[0]);
    for (p, &(seq, t)) in back.packets().iter().zip(&received) {
        assert_eq!(p.seq, seq);
        let err = p.arrival.unwrap().as_ns() as i64 - t.as_ns() as i64;
        assert!(err.abs() <= 125_000, "seq {seq}: error {err} ns");
        assert_eq!(p.arrival.unwrap().as_ns() % 250_000, 0);
    }
}

#[test]
fn losses_and_reordering_round_trip() {
    // Arrival order 0, 1, 3, 2, 6 (2 overtaken by 3; 4 and 5 lost), given out of order.
    let received = [(3, us(10_500)), (0, us(10_000)), (6, us(90_000)), (1, us(10_250)), (2, us(11_000))];
    let msgs = build_feedback(&received, None, &mut 7);
    assert_eq!(msgs[0].feedback_count, 7);
    let got = statuses(&round_trip(&msgs[0]));
    assert_eq!(
        got,
        vec![
            (0, Some(10_000)),
            (1, Some(10_250)),
            (2, Some(11_000)),
            (3, Some(10_500)),
            (4, None),
            (5, None),
            (6, Some(90_000)),
        ]
    );
    // The 2→3 delta is negative and the 3→6 delta (79.5 ms) too big for a byte: two large symbols.
    assert_eq!(msgs[0].deltas()[3], Some(-2));
    assert_eq!(msgs[0].deltas()[6], Some(318));
}

#[test]
fn duplicates_keep_the_earliest_arrival_and_base_filters() {
    let received = [(4, us(2_000)), (4, us(1_000)), (2, us(500)), (5, us(3_000))];
    let msgs = build_feedback(&received, Some(3), &mut 0);
    assert_eq!(statuses(&msgs[0]), vec![(3, None), (4, Some(1_000)), (5, Some(3_000))]);
    assert!(build_feedback(&[(2, us(1))], Some(3), &mut 0).is_empty());
}

#[test]
fn a_delta_beyond_8_seconds_starts_a_new_message() {
    let received = [(10, us(0)), (11, us(1_000)), (13, us(9_000_000)), (14, us(9_000_500))];
    let mut count = 254;
    let msgs = build_feedback(&received, None, &mut count);
    assert_eq!(msgs.len(), 2);
    assert_eq!((msgs[0].feedback_count, msgs[1].feedback_count, count), (254, 255, 0));
    assert_eq!(statuses(&msgs[0]), vec![(10, Some(0)), (11, Some(1_000))]);
    // The second message starts right after the first one's last packet, so 12 is reported lost there.
    assert_eq!(statuses(&round_trip(&msgs[1])), vec![(12, None), (13, Some(9_000_000)), (14, Some(9_000_500))]);
    assert_eq!(msgs[1].reference_time, 140);
}

#[test]
fn long_loss_runs_and_leading_losses() {
    // 20 000 lost between two received packets: run-length chunks of at most 8191.
    let received = [(0, us(1_000)), (20_001, us(2_000))];
    let msgs = build_feedback(&received, None, &mut 0);
    assert_eq!(msgs.len(), 1);
    let back = round_trip(&msgs[0]);
    assert_eq!(back.status_count(), 20_002);
    assert_eq!(back.received_count(), 2);
    // A one-bit vector (1 + 13 lost), runs of 8191 + 8191 + 3605 lost, a run of one received: 5 chunks,
    // 20 + 10 + 2 delta bytes = 32.
    assert_eq!(msgs[0].encoded_len(), 32);
    // A base far below the first received packet is cut to 0x7FFE leading losses.
    let msgs = build_feedback(&[(100_000, us(5))], Some(10), &mut 0);
    assert_eq!(msgs[0].base_seq, 100_000 - 0x7FFE);
    assert_eq!(msgs[0].status_count(), 0x7FFF);
}

#[test]
fn random_patterns_round_trip() {
    let mut rng = Rng::derive(11, "twcc/patterns");
    for _ in 0..300 {
        let n = 1 + rng.uniform_inclusive(200) as u64;
        let mut t = 1_000_000 + rng.uniform_inclusive(1_000_000) as u64;
        let mut received = vec![];
        for seq in 0..n {
            // Mostly small gaps, some long (large symbols), some negative (reordering), some losses.
            let gap = match rng.uniform_inclusive(9) {
                0 => 70_000 + rng.uniform_inclusive(500_000) as u64,
                1 => 0,
                _ => rng.uniform_inclusive(5_000) as u64,
            };
            t += gap;
            let jitter = rng.uniform_inclusive(2_000) as u64;
            if rng.bernoulli(0.8) || seq == n - 1 {
                received.push((1_000 + seq, us(t.saturating_sub(jitter))));
            }
        }
        for msg in build_feedback(&received, Some(1_000), &mut 0) {
            let back = round_trip(&msg);
            for p in back.packets().iter().filter(|p| p.arrival.is_some()) {
                let truth = received.iter().find(|r| r.0 == p.seq).unwrap().1;
                let err = p.arrival.unwrap().as_ns() as i64 - truth.as_ns() as i64;
                assert!(err.abs() <= 125_000);
            }
        }
    }
}

#[test]
fn parse_rejects_malformed_buffers() {
    let msg = build_feedback(&[(1, us(100)), (2, us(300_000))], None, &mut 0).remove(0);
    let good = msg.encode();
    let mut u = SeqUnwrapper::new();
    assert_eq!(TwccFeedback::parse(&good[..19], &mut u), Err(TwccError::TooShort));
    let mut bad = good.clone();
    bad[1] = 206;
    assert_eq!(TwccFeedback::parse(&bad, &mut u), Err(TwccError::NotTransportCc { pt: 206, fmt: 15 }));
    let mut bad = good.clone();
    bad[0] &= 0x3F;
    assert_eq!(TwccFeedback::parse(&bad, &mut u), Err(TwccError::BadVersion));
    assert_eq!(TwccFeedback::parse(&good[..good.len() - 4], &mut u), Err(TwccError::Truncated));
    // A run-length chunk of the reserved symbol 3.
    let mut bad = good.clone();
    bad[20] = 0x60;
    bad[21] = 0x02;
    assert_eq!(TwccFeedback::parse(&bad, &mut u), Err(TwccError::ReservedSymbol));
    // Trailing bytes after the message are ignored.
    let mut longer = good.clone();
    longer.extend_from_slice(&[1, 2, 3, 4]);
    assert_eq!(TwccFeedback::parse(&longer, &mut SeqUnwrapper::new()).unwrap(), msg);
}

#[test]
fn unwrapper_follows_wraps_both_ways() {
    let mut u = SeqUnwrapper::new();
    let got: Vec<u64> = [65_534u16, 65_535, 0, 1, 65_530, 3].iter().map(|&w| u.unwrap(w)).collect();
    assert_eq!(got, vec![65_534, 65_535, 65_536, 65_537, 65_530, 65_539]);
    let mut u = SeqUnwrapper { last: Some(2) };
    assert_eq!(u.unwrap(65_535), 65_535);
}

#[test]
fn receiver_keeps_a_duplicates_first_arrival() {
    let mut rx = TwccReceiver::new(TwccParams::default());
    rx.on_packet(SimTime::from_ms(10), 0);
    rx.on_packet(SimTime::from_ms(11), 1);
    rx.on_packet(SimTime::from_ms(30), 1);
    let fb = rx.poll_feedback(SimTime::from_ms(110));
    assert_eq!(statuses(&fb[0]), vec![(0, Some(10_000)), (1, Some(11_000))]);
    assert_eq!(rx.stats().duplicates, 1);
}

#[test]
fn receiver_reports_losses_then_re_reports_after_reordering() {
    let mut rx = TwccReceiver::new(TwccParams::default());
    assert_eq!(rx.next_feedback(), None);
    for seq in (0..=10).filter(|&s| s != 4) {
        rx.on_packet(SimTime::from_ms(10 + seq), seq);
    }
    assert_eq!(rx.next_feedback(), Some(SimTime::from_ms(110)));
    assert!(rx.poll_feedback(SimTime::from_ms(109)).is_empty());
    let fb = rx.poll_feedback(SimTime::from_ms(110));
    assert_eq!(fb.len(), 1);
    let st = statuses(&fb[0]);
    assert_eq!(st.len(), 11);
    assert_eq!(st[4], (4, None));
    assert_eq!(st[10], (10, Some(20_000)));
    assert_eq!(rx.next_feedback(), None);
    // Seq 4 shows up late: the window moves back and the next message starts at 4.
    rx.on_packet(SimTime::from_ms(150), 4);
    assert_eq!(rx.next_feedback(), Some(SimTime::from_ms(210)));
    let fb = rx.poll_feedback(SimTime::from_ms(210));
    let st = statuses(&fb[0]);
    assert_eq!(st.first(), Some(&(4, Some(150_000))));
    assert_eq!(st.len(), 7);
    assert_eq!(fb[0].feedback_count, 1);
    // After an idle second the feedback clock keeps its 100 ms phase.
    rx.on_packet(SimTime::from_us(1_000_500), 11);
    assert_eq!(rx.next_feedback(), Some(SimTime::from_ms(1_010)));
    assert_eq!(rx.stats().feedback_messages, 2);
    assert_eq!(rx.stats().packets_received, 12);
}

#[test]
fn receiver_forgets_old_arrivals_once_reported() {
    let mut rx = TwccReceiver::new(TwccParams::default());
    for seq in 0..5 {
        rx.on_packet(SimTime::from_ms(10), seq);
    }
    rx.poll_feedback(SimTime::from_ms(110));
    rx.on_packet(SimTime::from_ms(600), 5);
    // 0..5 (older than 500 ms, all reported) are gone; a re-delivered 2 is reported with 3, 4 missing.
    rx.on_packet(SimTime::from_ms(601), 2);
    let fb = rx.poll_feedback(SimTime::from_ms(610));
    let st = statuses(&fb[0]);
    assert_eq!(st, vec![(2, Some(601_000)), (3, None), (4, None), (5, Some(600_000))]);
}

#[test]
fn interval_scales_to_five_percent_of_the_bitrate() {
    let mut rx = TwccReceiver::new(TwccParams { scale_to_bitrate: true, ..Default::default() });
    assert_eq!(rx.interval(), SimDuration::from_ms(100));
    rx.on_bitrate_changed(BitRate::from_mbps(1));
    assert_eq!(rx.interval(), SimDuration::from_ms(50));
    rx.on_bitrate_changed(BitRate::from_kbps(100));
    assert_eq!(rx.interval(), SimDuration::from_us(108_800));
    rx.on_bitrate_changed(BitRate::from_kbps(10));
    assert_eq!(rx.interval(), SimDuration::from_ms(250));
    let mut fixed = TwccReceiver::new(TwccParams::default());
    fixed.on_bitrate_changed(BitRate::from_mbps(1));
    assert_eq!(fixed.interval(), SimDuration::from_ms(100));
}

#[test]
fn params_parse() {
    let p: TwccParams = toml::from_str("interval_ms = 50").unwrap();
    assert_eq!((p.interval_ms, p.back_window_ms), (50, 500));
    assert!(toml::from_str::<TwccParams>("intervall_ms = 50").is_err());
}
