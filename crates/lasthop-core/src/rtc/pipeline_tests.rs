//! End-to-end: every piece of the pipeline in one small event loop of the test's own (no engine).
//!
//! ```text
//!  FrameSource ─▶ FecEncoder ─▶ Pacer ─▶ bottleneck (FIFO, rate C, random loss p, 20 ms) ─▶ Receiver
//!       ▲  ▲                      ▲ ▲                                                     │   TwccReceiver
//!       │  └── PLI ───────────────┼─┼──────────────── 20 ms ◀──────────────────────────────┤
//!       │        RtxSender ◀─ NACK ┘ │                                                     │
//!       └── target × 8/9 ◀── Gcc ◀───┴── TWCC feedback ── 20 ms ◀──────────────────────────┘
//! ```
//!
//! The receiver's NACK timer and the sender's "resent less than one RTT ago" check use the base RTT
//! (40 ms), as both ends learn it from RTCP; GCC's own RTT includes the feedback interval and would make
//! the sender ignore most NACKs.

use super::fec::{FecEncoder, FecParams};
use super::frames::{FrameSource, FrameSourceParams};
use super::gcc::{Gcc, GccParams, SentPacket};
use super::pacer::{Pacer, PacerParams};
use super::quality::{QualityReport, VideoQuality};
use super::receiver::{Receiver, ReceiverEvent, ReceiverParams};
use super::rtp::RtpPacket;
use super::rtx::{RtxParams, RtxSender};
use super::twcc::{TwccFeedback, TwccParams, TwccReceiver};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use std::collections::VecDeque;

const ONE_WAY: SimDuration = SimDuration::from_ms(20);

enum Back {
    Feedback(TwccFeedback),
    Nack(Vec<u64>),
    Pli,
}

struct Pipeline {
    source: FrameSource,
    fec: FecEncoder,
    pacer: Pacer,
    rtx: RtxSender,
    gcc: Gcc,
    rx: Receiver,
    twcc: TwccReceiver,
    quality: VideoQuality,
    capacity: BitRate,
    loss: f64,
    loss_rng: Rng,
    link_free: SimTime,
    forward: VecDeque<(SimTime, RtpPacket)>,
    back: VecDeque<(SimTime, Back)>,
    lost: u64,
}

impl Pipeline {
    fn new(capacity: BitRate, loss: f64, seed: u64) -> Self {
        let gcc = Gcc::new(GccParams::default());
        let fec = FecParams::default();
        let target = gcc.target_rate();
        let mut rx = Receiver::new(ReceiverParams::default());
        rx.set_rtt(ONE_WAY * 2);
        Pipeline {
            source: FrameSource::new(FrameSourceParams::default(), SimTime::ZERO, media(target, &fec), Rng::derive(seed, "video")),
            fec: FecEncoder::new(fec),
            pacer: Pacer::new(PacerParams::default(), target),
            rtx: RtxSender::new(RtxParams::default()),
            gcc,
            rx,
            twcc: TwccReceiver::new(TwccParams::default()),
            quality: VideoQuality::new(10),
            capacity,
            loss,
            loss_rng: Rng::derive(seed, "link/loss"),
            link_free: SimTime::ZERO,
            forward: VecDeque::new(),
            back: VecDeque::new(),
            lost: 0,
        }
    }

    fn next_event(&self) -> SimTime {
        [
            Some(self.source.next_capture()),
            self.pacer.next_release(),
            self.forward.front().map(|f| f.0),
            self.back.front().map(|b| b.0),
            self.twcc.next_feedback(),
            self.rx.next_wakeup(),
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("the frame clock always has a next capture")
    }

    fn sender(&mut self, now: SimTime) {
        while let Some(frame) = self.source.poll(now, self.pacer.expected_queue_time()) {
            let repairs = self.fec.protect(&frame.packets);
            for p in frame.packets.into_iter().chain(repairs) {
                self.pacer.push(now, p);
            }
        }
        while let Some(p) = self.pacer.pop(now) {
            self.gcc.on_packet_sent(SentPacket::of(&p, now));
            self.rtx.on_sent(now, &p);
            let start = now.max(self.link_free);
            self.link_free = start + self.capacity.tx_time(p.wire_bytes());
            if self.loss_rng.bernoulli(self.loss) {
                self.lost += 1;
            } else {
                self.forward.push_back((self.link_free + ONE_WAY, p));
            }
        }
    }

    fn receiver(&mut self, now: SimTime) {
        let mut events = vec![];
        while self.forward.front().is_some_and(|f| f.0 <= now) {
            let (_, p) = self.forward.pop_front().expect("checked");
            self.twcc.on_packet(now, p.transport_seq.expect("sent"));
            self.rx.on_packet(now, &p, &mut events);
        }
        self.rx.advance_to(now, &mut events);
        for e in events {
            match e {
                ReceiverEvent::Decoded(d) => self.quality.on_decoded(&d),
                ReceiverEvent::Dropped { frame_id, at } => self.quality.on_dropped(frame_id, None, at),
                ReceiverEvent::Nack { seqs, .. } => self.back.push_back((now + ONE_WAY, Back::Nack(seqs))),
                ReceiverEvent::KeyframeRequest { .. } => self.back.push_back((now + ONE_WAY, Back::Pli)),
            }
        }
        for fb in self.twcc.poll_feedback(now) {
            self.back.push_back((now + ONE_WAY, Back::Feedback(fb)));
        }
    }

    fn feedback(&mut self, now: SimTime) {
        while self.back.front().is_some_and(|b| b.0 <= now) {
            match self.back.pop_front().expect("checked").1 {
                Back::Feedback(fb) => {
                    let target = self.gcc.on_feedback(now, &fb);
                    self.source.set_target(media(target, self.fec.params()));
                    self.pacer.set_target(now, target);
                }
                Back::Nack(seqs) => {
                    for p in self.rtx.on_nack(now, &seqs, ONE_WAY * 2) {
                        self.pacer.push(now, p);
                    }
                }
                Back::Pli => self.source.request_keyframe(),
            }
        }
        for c in self.gcc.poll_probes(now) {
            self.pacer.create_probe_cluster(now, c);
        }
    }

    fn run(mut self, secs: u64) -> (Self, QualityReport) {
        let end = SimTime::from_secs(secs);
        let mut now = SimTime::ZERO;
        while now < end {
            self.feedback(now);
            self.sender(now);
            self.receiver(now);
            now = self.next_event();
        }
        let report = self.quality.report(SimDuration::from_ms(100));
        (self, report)
    }
}

fn media(target: BitRate, fec: &FecParams) -> BitRate {
    BitRate::from_bps((target.bps() as f64 * fec.media_share()).round() as u64)
}

#[test]
fn lossy_10_mbps_link_with_fec_nack_and_gcc() {
    let (p, r) = Pipeline::new(BitRate::from_mbps(10), 0.01, 3).run(30);
    let (rx, pacer, gcc) = (p.rx.stats(), p.pacer.stats(), p.gcc.stats());
    println!("{r:#?}");
    println!("receiver {rx:?}\npacer {pacer:?}\ngcc {gcc:?}\nrtx {:?}\nlink losses {}", p.rtx.stats(), p.lost);
    println!("GCC target at the end {} (delay-based {})", p.gcc.target_rate(), p.gcc.delay_based_rate());
    // Every piece did its job: FEC rebuilt packets, NACKs brought retransmissions, probes went out.
    assert!(rx.fec_recovered > 0 && rx.retransmissions > 0 && pacer.probe_packets > 0);
    // 1 % loss costs no frame: FEC rebuilds most packets, a retransmission the rest within ~2 RTT.
    assert_eq!((r.frames_dropped, r.freezes), (0, 0), "{r:?}");
    assert!(r.latency_p99_ms < 100.0 && r.deadline_miss < 0.01, "{r:?}");
    // With 1 % random loss (≤ 2 %) GCC is not held back by the loss controller: ≈ 84 % of 10 Mbit/s.
    assert!(p.gcc.target_rate() > BitRate::from_mbps(7), "{}", p.gcc.target_rate());
}
