use super::*;
use crate::rtc::fec::{FecEncoder, FecParams};
use crate::rtc::frames::packetize;

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

/// A receiver plus the events it produced, driven by a script of arrivals and timer runs.
struct Script {
    rx: Receiver,
    events: Vec<(SimTime, ReceiverEvent)>,
}

impl Script {
    fn new(params: ReceiverParams) -> Self {
        Script { rx: Receiver::new(params), events: vec![] }
    }

    fn at(&mut self, t: SimTime, p: &RtpPacket) {
        self.timers(t);
        let mut out = vec![];
        self.rx.on_packet(t, p, &mut out);
        self.events.extend(out.into_iter().map(|e| (t, e)));
    }

    /// Fires every timer due up to `until`.
    fn timers(&mut self, until: SimTime) {
        while let Some(t) = self.rx.next_wakeup().filter(|&t| t <= until) {
            let mut out = vec![];
            self.rx.advance_to(t, &mut out);
            self.events.extend(out.into_iter().map(|e| (t, e)));
        }
    }

    fn decoded(&self) -> Vec<(u64, u64)> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                ReceiverEvent::Decoded(d) => Some((d.frame_id, d.decoded.as_ns() / 1_000_000)),
                _ => None,
            })
            .collect()
    }

    fn dropped(&self) -> Vec<u64> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                ReceiverEvent::Dropped { frame_id, .. } => Some(*frame_id),
                _ => None,
            })
            .collect()
    }

    /// Times (ms) of the NACKs that asked for `seq`.
    fn nacks_for(&self, seq: u64) -> Vec<u64> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e {
                ReceiverEvent::Nack { seqs, .. } if seqs.contains(&seq) => Some(t.as_ns() / 1_000_000),
                _ => None,
            })
            .collect()
    }

    fn keyframe_requests(&self) -> Vec<u64> {
        self.events
            .iter()
            .filter_map(|(t, e)| matches!(e, ReceiverEvent::KeyframeRequest { .. }).then_some(t.as_ns() / 1_000_000))
            .collect()
    }
}

/// Frame `id` of `n` packets captured at `capture_ms`, sequence numbers from `*seq`.
fn frame(id: u64, n: u64, key: bool, capture_ms: u64, seq: &mut u64) -> Vec<RtpPacket> {
    packetize(id, n * 1_000, key, ms(capture_ms), 1_000, 48, seq)
}

fn continue_mode() -> ReceiverParams {
    ReceiverParams { after_loss: AfterLoss::Continue, ..Default::default() }
}

#[test]
fn frames_decode_in_order_when_complete() {
    let mut seq = 0;
    let f0 = frame(0, 2, true, 0, &mut seq);
    let f1 = frame(1, 2, false, 33, &mut seq);
    let mut s = Script::new(ReceiverParams::default());
    s.at(ms(10), &f0[0]);
    s.at(ms(40), &f1[0]);
    assert_eq!(s.nacks_for(1), vec![40], "the gap 1 is NACKed at once");
    s.at(ms(41), &f1[1]);
    assert!(s.decoded().is_empty(), "frame 1 is complete but waits for frame 0");
    s.at(ms(45), &f0[1]);
    assert_eq!(s.decoded(), vec![(0, 45), (1, 45)]);
    let ReceiverEvent::Decoded(d1) = &s.events.iter().rev().find(|e| matches!(e.1, ReceiverEvent::Decoded(_))).unwrap().1 else {
        unreachable!()
    };
    assert_eq!((d1.complete, d1.latency(), d1.completed_by), (ms(41), SimDuration::from_ms(12), Via::Original));
    // The late packet removed the NACK entry: no more requests.
    s.timers(ms(1_000));
    assert_eq!(s.nacks_for(1), vec![40]);
}

#[test]
fn nack_is_repeated_each_rtt_and_a_retransmission_completes_the_frame() {
    let mut seq = 0;
    let f0 = frame(0, 3, true, 0, &mut seq);
    let mut s = Script::new(continue_mode());
    s.at(ms(10), &f0[0]);
    s.at(ms(12), &f0[2]);
    // Checked every 20 ms from 32 ms; re-requested once 100 ms (the default RTT) have passed.
    s.timers(ms(149));
    assert_eq!(s.nacks_for(1), vec![12, 112]);
    let mut rtx = f0[1];
    rtx.retransmission = true;
    s.at(ms(150), &rtx);
    assert_eq!(s.decoded(), vec![(0, 150)]);
    let ReceiverEvent::Decoded(d) = s.events.iter().find(|e| matches!(e.1, ReceiverEvent::Decoded(_))).unwrap().1 else {
        unreachable!()
    };
    assert_eq!((d.completed_by, d.retransmitted), (Via::Retransmission, true));
    s.timers(ms(2_000));
    assert_eq!(s.nacks_for(1), vec![12, 112]);
    assert_eq!(s.rx.next_wakeup(), None);
}

#[test]
fn nack_gives_up_after_ten_requests_and_follows_the_rtt() {
    let mut seq = 0;
    let f0 = frame(0, 3, true, 0, &mut seq);
    let mut s = Script::new(continue_mode());
    s.rx.set_rtt(SimDuration::from_ms(50));
    s.at(ms(0), &f0[0]);
    s.at(ms(1), &f0[2]);
    s.timers(ms(5_000));
    // First at 1 ms, then every 60 ms (the first 20-ms check at least 50 ms later): 10 in all.
    assert_eq!(s.nacks_for(1), vec![1, 61, 121, 181, 241, 301, 361, 421, 481, 541]);
    assert_eq!(s.rx.stats().nacked_packets, 10);
}

#[test]
fn fec_rebuilds_a_lost_packet_and_ends_its_nacks() {
    let mut seq = 0;
    let f0 = frame(0, 8, true, 0, &mut seq);
    let repair = FecEncoder::new(FecParams::default()).protect(&f0);
    let mut s = Script::new(continue_mode());
    for (i, p) in f0.iter().enumerate().filter(|(i, _)| *i != 3) {
        s.at(ms(10 + i as u64), p);
    }
    assert_eq!(s.nacks_for(3), vec![14]);
    assert!(s.decoded().is_empty());
    s.at(ms(20), &repair[0]);
    assert_eq!(s.decoded(), vec![(0, 20)]);
    let ReceiverEvent::Decoded(d) = s.events.iter().find(|e| matches!(e.1, ReceiverEvent::Decoded(_))).unwrap().1 else {
        unreachable!()
    };
    assert_eq!(d.completed_by, Via::Fec);
    s.timers(ms(1_000));
    assert_eq!(s.nacks_for(3), vec![14]);
    let st = s.rx.stats();
    assert_eq!((st.media_packets, st.fec_recovered, st.repair_packets), (7, 1, 1));
}

#[test]
fn a_complete_keyframe_skips_incomplete_frames_before_it() {
    let mut seq = 0;
    let f0 = frame(0, 1, true, 0, &mut seq);
    let f1 = frame(1, 2, false, 33, &mut seq);
    let f2 = frame(2, 1, false, 66, &mut seq);
    let f3 = frame(3, 1, true, 100, &mut seq);
    let mut s = Script::new(ReceiverParams::default());
    s.at(ms(10), &f0[0]);
    s.at(ms(43), &f1[0]);
    s.at(ms(76), &f2[0]);
    assert_eq!(s.decoded(), vec![(0, 10)]);
    s.at(ms(110), &f3[0]);
    assert_eq!(s.dropped(), vec![1, 2]);
    assert_eq!(s.decoded(), vec![(0, 10), (3, 110)]);
    assert!(s.keyframe_requests().is_empty());
}

/// Frames of one packet every 1/30 s, arriving 20 ms after capture; frame 1 is lost entirely and
/// frame `key` is a keyframe.
fn stream_with_a_lost_frame(s: &mut Script, frames: u64, key: u64) {
    let mut seq = 0;
    for id in 0..frames {
        let capture = id * 100 / 3;
        let pkts = frame(id, 1, id == 0 || id == key, capture, &mut seq);
        if id != 1 {
            s.at(ms(capture + 20), &pkts[0]);
        }
    }
}

#[test]
fn an_abandoned_frame_requests_a_keyframe_and_p_frames_wait_for_it() {
    let mut s = Script::new(ReceiverParams::default());
    stream_with_a_lost_frame(&mut s, 41, 40);
    // Frame 2 (captured at 66 ms) is overtaken by frame 32 (captured at 1066 ms, arriving at 1086 ms):
    // frames 1 and 2 are dropped, and a keyframe is requested then and every 200 ms until frame 40.
    assert_eq!(s.keyframe_requests(), vec![1_086, 1_286]);
    assert_eq!(s.decoded().first(), Some(&(0, 20)));
    assert_eq!(s.decoded().last(), Some(&(40, 1_353)));
    assert_eq!(s.decoded().len(), 2, "no P-frame is decoded while waiting for the keyframe");
    assert_eq!(s.dropped(), (1..40).collect::<Vec<_>>());
    assert_eq!(s.rx.next_wakeup(), None, "no more requests after the keyframe");
}

#[test]
fn in_continue_mode_decoding_resumes_after_the_abandoned_frame() {
    let mut s = Script::new(continue_mode());
    stream_with_a_lost_frame(&mut s, 41, 40);
    assert!(s.keyframe_requests().is_empty());
    assert_eq!(s.dropped(), vec![1]);
    let decoded = s.decoded();
    // Frames 2..=32 were complete and waiting; they are all decoded when frame 32 arrives.
    assert_eq!(decoded[1], (2, 1_086));
    assert_eq!(decoded[31], (32, 1_086));
    assert_eq!(decoded.len(), 40);
}

#[test]
fn the_first_keyframe_is_requested_after_200_ms_without_one() {
    let mut seq = 0;
    let f0 = frame(0, 2, true, 0, &mut seq);
    let mut s = Script::new(ReceiverParams::default());
    s.at(ms(10), &f0[0]);
    s.timers(ms(500));
    assert_eq!(s.keyframe_requests(), vec![210, 410]);
    assert!(Script::new(continue_mode()).rx.next_wakeup().is_none());
}

#[test]
fn a_nack_list_overflow_requests_a_keyframe() {
    let params = ReceiverParams { nack: NackParams { max_list: 5, ..Default::default() }, ..continue_mode() };
    let mut s = Script::new(params);
    let mut seq = 0;
    let pkts = frame(0, 12, true, 0, &mut seq);
    s.at(ms(1), &pkts[0]);
    s.at(ms(2), &pkts[4]);
    assert_eq!(s.nacks_for(2), vec![2]);
    s.at(ms(3), &pkts[11]);
    assert_eq!(s.keyframe_requests(), vec![3]);
    assert!(s.nacks_for(7).is_empty());
}

#[test]
fn duplicates_late_packets_and_padding_are_counted() {
    let mut seq = 0;
    let f0 = frame(0, 1, true, 0, &mut seq);
    let mut s = Script::new(ReceiverParams::default());
    s.at(ms(1), &f0[0]);
    s.at(ms(2), &f0[0]);
    let mut pad = f0[0];
    pad.payload = Payload::Padding;
    s.at(ms(3), &pad);
    let st = s.rx.stats();
    assert_eq!((st.media_packets, st.late, st.duplicates, st.padding_packets), (1, 1, 0, 1));
    let f1 = frame(1, 2, false, 33, &mut seq);
    s.at(ms(40), &f1[0]);
    s.at(ms(41), &f1[0]);
    assert_eq!(s.rx.stats().duplicates, 1);
}

#[test]
fn params_parse() {
    let p: ReceiverParams =
        toml::from_str("abandon_after_ms = 400\nafter_loss = \"continue\"\nnack = { max_retries = 3 }").unwrap();
    assert_eq!((p.abandon_after_ms, p.after_loss, p.nack.max_retries, p.nack.interval_ms), (400, AfterLoss::Continue, 3, 20));
    assert!(toml::from_str::<ReceiverParams>("after_loss = \"skip\"").is_err());
}
