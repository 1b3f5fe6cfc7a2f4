//! The WebRTC-style video pipeline of the RTC seeds, as pure state machines (baselines.md §4.1 and §5;
//! zhuge.md §4 and §6).
//!
//! No component holds an engine handle or reads a clock: each takes `now` and returns what it produced,
//! and the time-driven ones expose the catch-up pair (`next_*() -> Option<SimTime>`, then `poll`/`pop`/
//! `advance_to` at that time). Whoever wires them (the engine, the emulator or a test loop) carries the
//! packets between them.
//!
//! ```text
//!  sender                                                            receiver
//!  ──────                                                            ────────
//!  FrameSource ── frames ──▶ packetize ──▶ FecEncoder ──▶ Pacer ═══ network ═══▶ Receiver ──▶ decoded frames
//!  (fps, size model)          (≤1200 B)    (row / 2-D)     (2.5×target,    │      (FEC rebuild,   │  ▶ VideoQuality
//!    ▲    ▲                                                 probes, RTX ▲  │       NACK, in-order,│   (latency, freezes,
//!    │    │                                                 first)      │  │       keyframes)     │    fps < 10)
//!    │    └───────────────── PLI ◀──────────────────────────────────────┼──┼──────────────────────┤
//!    │                  RtxSender ◀───────── NACK ◀─────────────────────┘  │                      │
//!    │                  (history 1 s)  ──▶ retransmissions to the Pacer    └──▶ TwccReceiver ◀────┘
//!    │                                                                         (arrival per transport seq)
//!    └── target × media share ◀── Gcc ◀──────── TWCC feedback (RTCP, every 100 ms) ◀──┘
//!                                 (trendline, AIMD, loss, probes ──▶ Pacer)
//! ```
//!
//! | module | what | source | spec |
//! |---|---|---|---|
//! | [`rtp`] | the packet record: media/repair/padding payloads, three sequence spaces | RFC 3550, libwebrtc | §5.2 |
//! | [`frames`] | frame clock, lognormal sizes, keyframes, packetizer, frame skipping | libwebrtc packetizer | §5.1–5.2 |
//! | [`fec`] | XOR parity: rows of L (1/8), RFC 8627 2-D L×D, iterative recovery | RFC 8627, RFC 5109 | §5.3 |
//! | [`pacer`] | 2.5× pacing, media debt, RTX priority, large-queue drain, probe clusters | `PacingController`, `BitrateProber` | §5.2 |
//! | [`twcc`] | transport-cc RTCP message (encode/parse), builder, periodic receiver | draft-holmer-…-01, `RemoteEstimatorProxy` | §4.1; zhuge.md §4.2 |
//! | [`gcc`] | send-side GCC: grouping, trendline, over-use, AIMD, acked rate, loss v1, probing | `goog_cc` | §4.1 |
//! | [`rtx`] | sent-packet history and NACK answers | `RtpPacketHistory` | §5.4 |
//! | [`receiver`] | assembly, FEC recovery, NACK, in-order decoding, keyframe requests | `NackRequester`, frame buffer | §5.4–5.5 |
//! | [`quality`] | frame latency, deadline miss, WebRTC freezes, low-fps ratio | `VideoQualityObserver` | §5.6 |
//!
//! # Wiring
//!
//! Per frame: `FrameSource::poll(now, pacer.expected_queue_time())` gives an [`frames::EncodedFrame`];
//! push its packets, then `FecEncoder::protect(&packets)`, into [`pacer::Pacer::push`]. Every packet
//! `Pacer::pop` releases goes to `Gcc::on_packet_sent(SentPacket::of(&p, now))` and
//! `RtxSender::on_sent`, then onto the network. At the receiver every packet goes to
//! `TwccReceiver::on_packet(now, transport_seq)` and `Receiver::on_packet`; the receiver's events carry
//! decoded frames (to [`quality::VideoQuality`]), NACKs (to `RtxSender::on_nack`, whose copies go back
//! into the pacer) and keyframe requests (to `FrameSource::request_keyframe`). `TwccReceiver::poll_feedback`
//! messages go back to `Gcc::on_feedback`, whose target sets `Pacer::set_target` and
//! `FrameSource::set_target(target × FecParams::media_share())`; after each feedback (and once at
//! start) `Gcc::poll_probes` clusters go to `Pacer::create_probe_cluster`. `pipeline_tests.rs` is a
//! complete, runnable example of this loop.
//!
//! The packets here are richer than the engine's [`crate::packet::Packet`]: an integration carries the
//! [`rtp::RtpPacket`] (or an index to it) alongside the network packet, whose `Hdr::Rtp` holds the
//! transport-wide seq, frame, index and count, and `wire_bytes()` as its size.
//!
//! # Configuration
//!
//! Every component has serde + schemars params with `deny_unknown_fields` and documented defaults:
//!
//! ```toml
//! video    = { fps = 30, cv = 0.2, keyframe_multiplier = 5.0, max_payload_bytes = 1200 }
//! fec      = { type = "row", l = 8 }                 # or { type = "two_d", l = 4, d = 4 }, { type = "none" }
//! pacer    = { pacing_factor = 2.5, max_queue_time_ms = 2000 }
//! twcc     = { interval_ms = 100 }
//! gcc      = { start_kbps = 300, min_kbps = 5, max_kbps = 100000, probing = true, loss_based = true }
//! rtx      = { history_ms = 1000 }
//! receiver = { abandon_after_ms = 1000, after_loss = "wait_for_keyframe", nack = { max_retries = 10 } }
//! ```
//!
//! A Zhuge-artifact flavour (zhuge.md §6): `video = { fps = 25, cv = 0.0, keyframe_multiplier = 1.0 }`,
//! `fec = { type = "none" }`, `gcc = { start_kbps = 500, min_kbps = 500, group_length_ms = 10,
//! loss_based = false, probing = false }`, `receiver = { after_loss = "continue" }`. (The artifact's
//! sender-driven retransmission and unpaced frame bursts are not modelled here.)
//!
//! # Choices where the sources are silent
//!
//! Each module lists its own; the cross-cutting ones: media, FEC and padding packets have separate
//! sequence spaces (FlexFEC and RTX use their own SSRCs), so only media gaps are NACKed; FEC lines never
//! cross a frame; the TWCC clock starts at the first arrival; GCC counts losses from TWCC (libwebrtc v1
//! uses RTCP receiver reports); frame abandonment is driven by arrivals of newer frames; freezes follow
//! the libwebrtc source where baselines.md's wording differs (the current gap is in its own average).

pub mod fec;
pub mod frames;
pub mod gcc;
pub mod pacer;
pub mod quality;
pub mod receiver;
pub mod rtp;
pub mod rtx;
pub mod twcc;

#[cfg(test)]
mod pipeline_tests;

/// An RTC parameter out of its valid range; `field` is spelled as in the params struct.
pub type RtcParamError = crate::params::ParamError;
pub(crate) use crate::params::check;
