//! The in-band Feedback Updater: TWCC built from the forecasts (and its wire round trip), the parity
//! sampling of §4.1 with TV7, drops, wrap-around, and the client-feedback filter.

use super::egress::{EgressObserver, EgressPacket, Stage};
use super::fortune_teller::{FortuneTeller, FortuneTellerParams};
use super::testkit::*;
use super::twcc_rewriter::*;
use super::{FeedbackPath, LinkKind, Profile, UplinkVerdict};
use crate::rtc::twcc::{SeqUnwrapper, TwccFeedback};
use crate::time::{SimDuration, SimTime};

/// A Fortune Teller on a 12-Mbit/s steady link, warmed up until `until_ms`.
fn steady_ft(params: FortuneTellerParams, until_ms: u64) -> (FortuneTeller, SteadyLink) {
    let mut ft = FortuneTeller::new(params, SimTime::ZERO);
    let mut link = SteadyLink::new(1500);
    link.run(&mut ft, until_ms - 205, 205);
    (ft, link)
}

fn round_trip(m: &TwccFeedback, unwrapper: &mut SeqUnwrapper) -> TwccFeedback {
    TwccFeedback::parse(&m.encode(), unwrapper).expect("parses")
}

fn arrivals(m: &TwccFeedback) -> Vec<(u64, Option<SimTime>)> {
    m.packets().into_iter().map(|p| (p.seq, p.arrival)).collect()
}

fn close(a: SimTime, b: SimTime) -> bool {
    a.as_ns().abs_diff(b.as_ns()) <= 125_000
}

#[test]
fn feedback_is_built_from_recorded_forecasts_and_round_trips() {
    let mut rw = TwccRewriter::new(TwccRewriterParams { sender_ssrc: 7, media_ssrc: 9, ..Default::default() });
    let (mut ft, _) = steady_ft(FortuneTellerParams::design(LinkKind::P2p), 1000);
    // Forecasts of 20.3 ms, 5 ms, 31.9 ms for seqs 10, 11, 13; seq 12 dropped at the AP.
    let recs = [(10u64, us(1_000_100), 20_300u64), (11, us(1_000_200), 5_000), (13, us(1_000_400), 31_900)];
    for (seq, t, d) in recs {
        rw.record_prediction(t, seq, SimDuration::from_us(d));
    }
    rw.on_ap_drop(us(1_000_300), 12);
    assert_eq!(rw.next_wakeup(), Some(us(1_001_400)), "1 ms after the last arrival");
    assert!(rw.poll_feedback(us(1_001_399), &mut ft).is_empty());
    let msgs = rw.poll_feedback(us(1_001_400), &mut ft);
    assert_eq!(msgs.len(), 1);
    let m = &msgs[0];
    assert_eq!((m.base_seq, m.status_count(), m.received_count()), (10, 4, 3));
    assert_eq!((m.sender_ssrc, m.media_ssrc, m.feedback_count), (7, 9, 0));
    let got = arrivals(m);
    assert_eq!(got[2], (12, None));
    for ((seq, t, d), (s, a)) in recs.iter().zip(got.iter().filter(|(_, a)| a.is_some())) {
        assert_eq!(seq, s);
        assert!(close(a.unwrap(), *t + SimDuration::from_us(*d)), "seq {seq}: {a:?}");
    }
    // The forecast of seq 11 is earlier than seq 10's: a negative (two-byte) delta.
    assert!(m.deltas()[1].unwrap() < 0);
    assert_eq!(&round_trip(m, &mut SeqUnwrapper::new()), m);
    // Nothing more to report; the next message has the next feedback count and starts after 13.
    assert_eq!(rw.next_wakeup(), None);
    rw.record_prediction(ms(1010), 14, dms(2));
    let next = rw.poll_feedback(ms(1012), &mut ft);
    assert_eq!((next[0].base_seq, next[0].feedback_count), (14, 1));
}

#[test]
fn design_path_forecasts_every_packet_at_arrival() {
    let (mut ft, _) = steady_ft(FortuneTellerParams::design(LinkKind::P2p), 1000);
    let mut rw = TwccRewriter::new(TwccRewriterParams::preset(Profile::Design));
    // A frame of 5 packets arrives back to back; each sees the ones before it queued.
    for i in 0..5u64 {
        let t = us(1_000_100 + i);
        rw.on_downlink_rtp(t, RtpArrival { seq: 100 + i, bytes: 1500, repair: false }, &mut ft);
        ft.on_enqueue(t, EgressPacket { id: i, bytes: 1500, monitored: true }, Stage::Qdisc);
    }
    let m = rw.poll_feedback(us(1_001_104), &mut ft).remove(0);
    assert_eq!((m.base_seq, m.received_count()), (100, 5));
    for (i, p) in m.packets().iter().enumerate() {
        // 1500 B in Q_v plus i packets ahead, at 12 Mbit/s (1 ms each), plus tx 1 ms.
        let want = us(1_000_100 + i as u64) + dms(2 + i as u64);
        assert!(close(p.arrival.unwrap(), want), "{i}: {:?} vs {want}", p.arrival);
    }
}

#[test]
fn wrap_around_the_16_bit_sequence_space() {
    let (mut ft, _) = steady_ft(FortuneTellerParams::design(LinkKind::P2p), 1000);
    let mut rw = TwccRewriter::new(TwccRewriterParams::default());
    for (i, seq) in (65_533u64..65_539).enumerate() {
        rw.record_prediction(ms(1000 + i as u64), seq, dms(3));
    }
    let m = rw.poll_feedback(ms(1006), &mut ft).remove(0);
    assert_eq!((m.base_seq, m.status_count()), (65_533, 6));
    // A sender that has been unwrapping since seq 65 000 reads the same sequence numbers back.
    let mut unwrapper = SeqUnwrapper::new();
    unwrapper.unwrap(65_000);
    let back = round_trip(&m, &mut unwrapper);
    assert_eq!(back.packets().iter().map(|p| p.seq).collect::<Vec<_>>(), (65_533..65_539).collect::<Vec<_>>());
    assert_eq!(m.encode()[12..14], [0xFF, 0xFD], "the wire carries the 16-bit value");
}

#[test]
fn nothing_is_recorded_before_the_first_tick() {
    let mut ft = FortuneTeller::new(FortuneTellerParams::design(LinkKind::P2p), SimTime::ZERO);
    let mut rw = TwccRewriter::new(TwccRewriterParams::default());
    rw.on_downlink_rtp(us(900), RtpArrival { seq: 1, bytes: 1200, repair: false }, &mut ft);
    assert_eq!(rw.next_wakeup(), None);
    rw.on_downlink_rtp(us(1_100), RtpArrival { seq: 2, bytes: 1200, repair: false }, &mut ft);
    let m = rw.poll_feedback(us(2_100), &mut ft).remove(0);
    assert_eq!((m.base_seq, m.status_count()), (2, 1));
    assert_eq!(rw.stats().not_recorded, 1);
}

/// TV7 and the parity sampling rules of §4.1.
#[test]
fn tv7_in_band_sample() {
    let params = FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Rtp);
    let (mut ft, link) = steady_ft(params, 100_000);
    let mut rw = TwccRewriter::new(TwccRewriterParams::preset(Profile::Parity));
    let mut id = 0u64;
    let mut arrive = |ft: &mut FortuneTeller, rw: &mut TwccRewriter, t: SimTime, seq: Option<u64>, bytes: u32| {
        if let Some(seq) = seq {
            rw.on_downlink_rtp(t, RtpArrival { seq, bytes, repair: false }, ft);
        }
        id += 1;
        ft.on_enqueue(t, EgressPacket { id, bytes, monitored: seq.is_some() }, Stage::Qdisc);
    };
    for _ in 0..10 {
        arrive(&mut ft, &mut rw, us(99_999_900), None, 1500); // ids 1..=10
    }
    // The sample arrives at t = 100.000000 s; 5000 B follow within the millisecond, one of them the
    // flow's own (not sampled: a sample is pending).
    arrive(&mut ft, &mut rw, ms(100_000), Some(500), 1500);
    arrive(&mut ft, &mut rw, us(100_000_200), Some(501), 1250);
    for t in [300, 400, 900] {
        arrive(&mut ft, &mut rw, us(100_000_000 + t), None, 1250);
    }
    // The link sends its packet and takes the next one from the qdisc (ahead of the sample).
    ft.on_dequeue(us(100_000_500), link.head().unwrap());
    ft.on_to_driver(us(100_000_500), 1);
    assert_eq!(rw.next_wakeup(), Some(ms(100_001)));
    assert_eq!(ft.backlog(), (20_000, 1_500));
    let msgs = rw.poll_feedback(ms(100_001), &mut ft);
    assert_eq!(msgs.len(), 1);
    let p = msgs[0].packets();
    assert_eq!(p.len(), 1, "the sample alone");
    assert_eq!((p[0].seq, p[0].arrival), (500, Some(us(100_013_000))));
    // The next packet of the flow becomes the next sample; a repair packet is never reported.
    arrive(&mut ft, &mut rw, us(100_001_100), Some(502), 1500);
    assert_eq!(rw.next_wakeup(), Some(us(100_002_100)));
    assert_eq!(rw.poll_feedback(us(100_002_100), &mut ft)[0].base_seq, 502);
    rw.on_downlink_rtp(ms(100_003), RtpArrival { seq: 503, bytes: 1500, repair: true }, &mut ft);
    assert!(rw.poll_feedback(ms(100_004), &mut ft).is_empty());
    // A sample not newer than the last reported one is not reported.
    rw.on_downlink_rtp(ms(100_005), RtpArrival { seq: 499, bytes: 1500, repair: false }, &mut ft);
    assert!(rw.poll_feedback(ms(100_006), &mut ft).is_empty());
    assert_eq!(rw.next_wakeup(), None);
}

#[test]
fn parity_sample_dropped_by_the_ap_is_not_reported() {
    let (mut ft, _) = steady_ft(FortuneTellerParams::parity(LinkKind::P2p, FeedbackPath::Rtp), 1000);
    let mut rw = TwccRewriter::new(TwccRewriterParams::preset(Profile::Parity));
    rw.on_downlink_rtp(ms(1000), RtpArrival { seq: 5, bytes: 1500, repair: false }, &mut ft);
    rw.on_ap_drop(ms(1000), 5);
    assert_eq!(rw.next_wakeup(), None);
    assert!(rw.poll_feedback(ms(1001), &mut ft).is_empty());
}

#[test]
fn interval_policy_reports_on_its_own_clock() {
    let (mut ft, _) = steady_ft(FortuneTellerParams::design(LinkKind::P2p), 1000);
    let mut rw = TwccRewriter::new(TwccRewriterParams { emit: TwccEmit::Interval { interval_ms: 50 }, ..Default::default() });
    rw.record_prediction(ms(1000), 1, dms(2));
    rw.record_prediction(ms(1030), 2, dms(2));
    assert_eq!(rw.next_wakeup(), Some(ms(1050)));
    assert_eq!(rw.poll_feedback(ms(1050), &mut ft)[0].status_count(), 2);
    assert_eq!(rw.next_wakeup(), None);
    // Idle for a while: the clock keeps its phase.
    rw.record_prediction(ms(1170), 3, dms(2));
    assert_eq!(rw.next_wakeup(), Some(ms(1200)));
}

#[test]
fn stale_records_are_skipped_not_reported_lost() {
    let (mut ft, _) = steady_ft(FortuneTellerParams::design(LinkKind::P2p), 1000);
    let mut rw = TwccRewriter::new(TwccRewriterParams { emit: TwccEmit::Interval { interval_ms: 5000 }, ..Default::default() });
    rw.record_prediction(ms(1000), 1, dms(2));
    rw.record_prediction(ms(5500), 2, dms(2));
    let m = rw.poll_feedback(ms(6000), &mut ft).remove(0);
    assert_eq!((m.base_seq, m.status_count()), (2, 1));
    assert_eq!(rw.stats().expired, 1);
}

#[test]
fn client_transport_cc_is_dropped_other_rtcp_forwarded() {
    let mut rw = TwccRewriter::new(TwccRewriterParams::default());
    assert_eq!(rw.filter_uplink_rtcp(true), UplinkVerdict::Drop);
    assert_eq!(rw.filter_uplink_rtcp(false), UplinkVerdict::Forward);
    assert_eq!((rw.stats().client_feedback_dropped, rw.stats().rtcp_forwarded), (1, 1));
    // On wire bytes: a TWCC message is recognised, a receiver report (PT 201) and a NACK (RTPFB,
    // FMT 1) are not.
    let (mut ft, _) = steady_ft(FortuneTellerParams::design(LinkKind::P2p), 1000);
    rw.record_prediction(ms(1000), 1, dms(2));
    let bytes = rw.poll_feedback(ms(1001), &mut ft)[0].encode();
    assert!(is_transport_cc(&bytes));
    assert!(!is_transport_cc(&[0x81, 201, 0, 7]));
    assert!(!is_transport_cc(&[0x81, 205, 0, 3]));
    assert!(!is_transport_cc(&[0x8F]));
}

#[test]
fn params_parse_from_scenario_tables() {
    #[derive(serde::Deserialize)]
    struct Doc {
        twcc_rewriter: TwccRewriterParams,
    }
    let parse = |s: &str| toml::from_str::<Doc>(s).map(|d| d.twcc_rewriter).map_err(|e| e.to_string());
    assert_eq!(parse("twcc_rewriter = {}").unwrap(), TwccRewriterParams::default());
    assert_eq!(parse("twcc_rewriter = { emit = { type = \"per_sample_1ms\" } }").unwrap().emit, TwccEmit::PerSample1ms);
    assert_eq!(parse("twcc_rewriter = { emit = { type = \"per_burst\" } }").unwrap().emit, TwccEmit::PerBurst { gap_us: 1000 });
    assert_eq!(
        parse("twcc_rewriter = { emit = { type = \"interval\", interval_ms = 50 } }").unwrap().emit,
        TwccEmit::Interval { interval_ms: 50 }
    );
    assert!(parse("twcc_rewriter = { emit = { type = \"per_frame\" } }").is_err());
    assert!(parse("twcc_rewriter = { history = 3 }").unwrap_err().contains("unknown field"));
    let bad = TwccRewriterParams { emit: TwccEmit::Interval { interval_ms: 0 }, ..Default::default() };
    assert_eq!(bad.validate().unwrap_err().field, "emit.interval_ms");
}
