//! The video source: a frame clock, a frame-size model and the packetizer (baselines.md §5.1–§5.2).
//!
//! Frame `k` is captured at `start + k/fps` (exact integer nanoseconds, no drift) and encoded at once
//! (encoder latency 0, the spec's default). Its size is
//!
//! ```text
//! S_k = round(R / 8 / fps · X_k) bytes,   × keyframe_multiplier for a keyframe,   at least 1 byte
//! ```
//!
//! where `R` is the encoder target set by the rate controller ([`FrameSource::set_target`], sampled at
//! capture) and `X_k` is lognormal with mean 1 and coefficient of variation `cv`
//! (σ² = ln(1 + cv²), μ = −σ²/2, drawn from the source's own [`Rng`]; no draw when `cv` = 0).
//!
//! Keyframes: frame 0, the first frame after [`FrameSource::request_keyframe`] (a PLI), and, if
//! `keyframe_interval_ms` is set, the first frame at least that long after the previous keyframe. The rate
//! controller is not compensated for keyframes, so a keyframe overshoots the target for a moment, as in
//! libwebrtc (baselines.md §5.1).
//!
//! Packetization: `n = ceil(S / max_payload)` packets whose payloads differ by at most one byte (the
//! larger ones first), consecutive media sequence numbers, the marker on the last (libwebrtc's
//! `RtpPacketizer::SplitAboutEqually` without its first/last-packet reductions).
//!
//! Frame skipping: when the pacer's expected queue time exceeds `max_pacer_queue_ms` at capture time, the
//! frame is skipped (no frame id is consumed, so the receiver never waits for it), as libwebrtc pauses the
//! encoder when the pacer queue would exceed 2 s (`kMaxExpectedQueueLength`, baselines.md §4.1).
//!
//! Choices where the sources are silent (baselines.md §7 item 7): `cv` = 0.2 and
//! `keyframe_multiplier` = 5 are guesses; no periodic keyframes by default (WebRTC sends them on demand).
//! The Zhuge artifact's source is `cv = 0`, no keyframes, 25 fps (zhuge.md §6.2).

use super::rtp::{MediaHeader, Payload, RtpPacket, DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_OVERHEAD_BYTES};
use super::{check, RtcParamError};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `video = { fps = 30, cv = 0.2, keyframe_multiplier = 5.0 }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FrameSourceParams {
    /// Frames per second. Default 30 (Law, LAST-PQ; Zhuge's artifact uses 25).
    pub fps: u32,
    /// Coefficient of variation of the lognormal frame-size factor. Default 0.2 (a guess, baselines.md
    /// §5.1); 0 gives constant sizes.
    pub cv: f64,
    /// Keyframe size as a multiple of a mean P-frame. Default 5 (a guess, baselines.md §5.1).
    pub keyframe_multiplier: f64,
    /// Periodic keyframe interval, ms; `None` (default) sends keyframes only at the start and on request.
    pub keyframe_interval_ms: Option<u32>,
    /// Largest payload per packet, bytes. Default 1200 (libwebrtc).
    pub max_payload_bytes: u32,
    /// Per-packet header bytes (RTP 12 + extensions 8 + UDP/IPv4 28). Default 48.
    pub overhead_bytes: u32,
    /// Skip a frame when the pacer's expected queue time is longer than this, ms. Default 2000 (libwebrtc
    /// `kMaxExpectedQueueLength`); 0 never skips.
    pub max_pacer_queue_ms: u32,
}

impl Default for FrameSourceParams {
    fn default() -> Self {
        FrameSourceParams {
            fps: 30,
            cv: 0.2,
            keyframe_multiplier: 5.0,
            keyframe_interval_ms: None,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            overhead_bytes: DEFAULT_OVERHEAD_BYTES,
            max_pacer_queue_ms: 2_000,
        }
    }
}

impl FrameSourceParams {
    pub fn validate(&self) -> Result<(), RtcParamError> {
        check(self.fps > 0, "fps", "must be > 0")?;
        check(self.cv.is_finite() && self.cv >= 0.0, "cv", "must be finite and >= 0")?;
        check(
            self.keyframe_multiplier.is_finite() && self.keyframe_multiplier > 0.0,
            "keyframe_multiplier",
            "must be finite and > 0",
        )?;
        check(self.keyframe_interval_ms != Some(0), "keyframe_interval_ms", "must be > 0 when set")?;
        check(self.max_payload_bytes > 0, "max_payload_bytes", "must be > 0")
    }

    /// The nominal frame interval, 1/fps (floored to the nanosecond).
    pub fn frame_interval(&self) -> SimDuration {
        SimDuration::from_ns(1_000_000_000 / self.fps as u64)
    }
}

/// One encoded frame and its packets.
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedFrame {
    pub frame_id: u64,
    pub capture_time: SimTime,
    /// Encoded size, bytes (the sum of the packets' payloads).
    pub size_bytes: u64,
    pub keyframe: bool,
    /// Media packets in order, without transport sequence numbers.
    pub packets: Vec<RtpPacket>,
}

/// Counters of a frame source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrameSourceStats {
    pub frames: u64,
    pub keyframes: u64,
    /// Frames not encoded because the pacer queue was too long.
    pub skipped: u64,
    pub packets: u64,
    pub bytes: u64,
    /// Keyframe requests received (several before the next frame count once each).
    pub keyframe_requests: u64,
}

/// A video encoder and packetizer driven by its capture clock.
#[derive(Clone, Debug)]
pub struct FrameSource {
    params: FrameSourceParams,
    start: SimTime,
    /// Capture slot of the next frame (skipped slots included), and its capture time (kept: the
    /// session asks for it after every packet, and it takes a 128-bit division).
    next_slot: u64,
    next_capture: SimTime,
    next_frame_id: u64,
    next_seq: u64,
    target: BitRate,
    keyframe_pending: bool,
    last_keyframe: Option<SimTime>,
    rng: Rng,
    stats: FrameSourceStats,
}

impl FrameSource {
    /// A source whose first frame is captured at `start`, encoding at `target` until told otherwise.
    pub fn new(params: FrameSourceParams, start: SimTime, target: BitRate, rng: Rng) -> Self {
        debug_assert!(params.validate().is_ok());
        FrameSource {
            params,
            start,
            next_slot: 0,
            next_capture: start,
            next_frame_id: 0,
            next_seq: 0,
            target,
            keyframe_pending: true,
            last_keyframe: None,
            rng,
            stats: FrameSourceStats::default(),
        }
    }

    pub fn params(&self) -> &FrameSourceParams {
        &self.params
    }

    /// Capture time of the next frame (the catch-up interface's wake-up time).
    pub fn next_capture(&self) -> SimTime {
        self.next_capture
    }

    fn slot_time(&self, slot: u64) -> SimTime {
        let ns = slot as u128 * 1_000_000_000 / self.params.fps as u128;
        self.start + SimDuration::from_ns(ns as u64)
    }

    /// The encoder target bitrate (media only: the caller subtracts FEC and RTX overhead).
    pub fn set_target(&mut self, target: BitRate) {
        self.target = target;
    }

    pub fn target(&self) -> BitRate {
        self.target
    }

    /// A keyframe request (PLI/FIR): the next encoded frame is a keyframe.
    pub fn request_keyframe(&mut self) {
        self.stats.keyframe_requests += 1;
        self.keyframe_pending = true;
    }

    /// Encodes the next frame due at or before `now`, or `None` when no frame is due. Skipped frames
    /// (pacer queue longer than `max_pacer_queue_ms`) are passed over silently; call again until `None` to
    /// catch up. `pacer_queue` is the pacer's expected queue time now.
    pub fn poll(&mut self, now: SimTime, pacer_queue: SimDuration) -> Option<EncodedFrame> {
        while self.next_capture() <= now {
            let capture = self.next_capture();
            self.next_slot += 1;
            self.next_capture = self.slot_time(self.next_slot);
            let limit = self.params.max_pacer_queue_ms;
            if limit > 0 && pacer_queue > SimDuration::from_ms(limit as u64) {
                self.stats.skipped += 1;
                continue;
            }
            return Some(self.encode(capture));
        }
        None
    }

    fn encode(&mut self, capture: SimTime) -> EncodedFrame {
        let keyframe = self.keyframe_due(capture);
        if keyframe {
            self.keyframe_pending = false;
            self.last_keyframe = Some(capture);
        }
        let size = self.frame_size(keyframe);
        let frame_id = self.next_frame_id;
        self.next_frame_id += 1;
        let p = &self.params;
        let packets = packetize(
            frame_id,
            size,
            keyframe,
            capture,
            p.max_payload_bytes,
            p.overhead_bytes,
            &mut self.next_seq,
        );
        self.stats.frames += 1;
        self.stats.keyframes += keyframe as u64;
        self.stats.packets += packets.len() as u64;
        self.stats.bytes += size;
        EncodedFrame { frame_id, capture_time: capture, size_bytes: size, keyframe, packets }
    }

    fn keyframe_due(&self, capture: SimTime) -> bool {
        let periodic = match (self.params.keyframe_interval_ms, self.last_keyframe) {
            (Some(ms), Some(last)) => capture.saturating_since(last) >= SimDuration::from_ms(ms as u64),
            _ => false,
        };
        self.keyframe_pending || periodic
    }

    fn frame_size(&mut self, keyframe: bool) -> u64 {
        let mean = self.target.bps() as f64 / 8.0 / self.params.fps as f64;
        let x = lognormal_unit_mean(&mut self.rng, self.params.cv);
        let mult = if keyframe { self.params.keyframe_multiplier } else { 1.0 };
        ((mean * x * mult).round() as u64).max(1)
    }

    pub fn stats(&self) -> FrameSourceStats {
        self.stats
    }
}

/// A lognormal variate with mean 1 and coefficient of variation `cv` (1 exactly, without a draw, when
/// `cv` is 0).
pub fn lognormal_unit_mean(rng: &mut Rng, cv: f64) -> f64 {
    if cv <= 0.0 {
        return 1.0;
    }
    let var = (1.0 + cv * cv).ln();
    (-var / 2.0 + var.sqrt() * rng.normal()).exp()
}

/// Splits a frame of `size` bytes into `ceil(size / max_payload)` media packets of near-equal payload
/// (sizes differ by at most one byte, larger first) with consecutive sequence numbers from `*next_seq`.
pub fn packetize(
    frame_id: u64,
    size: u64,
    keyframe: bool,
    capture_time: SimTime,
    max_payload: u32,
    overhead: u32,
    next_seq: &mut u64,
) -> Vec<RtpPacket> {
    let n = size.div_ceil(max_payload as u64).max(1);
    assert!(n <= u16::MAX as u64, "frame of {size} B needs {n} packets (more than 65535)");
    let (base, extra) = (size / n, size % n);
    (0..n)
        .map(|i| {
            let header = MediaHeader {
                frame_id,
                index: i as u16,
                count: n as u16,
                marker: i + 1 == n,
                keyframe,
            };
            let seq = *next_seq;
            *next_seq += 1;
            RtpPacket {
                seq,
                transport_seq: None,
                payload_bytes: (base + (i < extra) as u64) as u32,
                overhead_bytes: overhead,
                capture_time,
                retransmission: false,
                probe_cluster: None,
                payload: Payload::Media(header),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(params: FrameSourceParams, mbps: u64) -> FrameSource {
        FrameSource::new(params, SimTime::from_ms(1_000), BitRate::from_mbps(mbps), Rng::derive(1, "video"))
    }

    fn constant() -> FrameSourceParams {
        FrameSourceParams { cv: 0.0, ..Default::default() }
    }

    #[test]
    fn frame_clock_is_exact_and_catches_up() {
        let mut s = source(constant(), 3);
        assert_eq!(s.next_capture(), SimTime::from_ms(1_000));
        assert!(s.poll(SimTime::from_ms(999), SimDuration::ZERO).is_none());
        // At 1.1 s, frames 0..=3 are due (1000, 1033.3, 1066.6, 1100 ms).
        let times: Vec<u64> = std::iter::from_fn(|| s.poll(SimTime::from_ms(1_100), SimDuration::ZERO))
            .map(|f| f.capture_time.as_ns())
            .collect();
        assert_eq!(times, vec![1_000_000_000, 1_033_333_333, 1_066_666_666, 1_100_000_000]);
        // 30 frames later the clock is exactly one second on: no drift.
        for _ in 0..26 {
            s.poll(SimTime::from_secs(3), SimDuration::ZERO).unwrap();
        }
        assert_eq!(s.next_capture(), SimTime::from_ms(2_000));
    }

    #[test]
    fn sizes_follow_target_and_keyframes_are_larger() {
        // 3 Mbit/s at 30 fps: 12 500 B per P-frame, keyframe ×5 = 62 500 B.
        let mut s = source(constant(), 3);
        let f0 = s.poll(SimTime::from_ms(1_000), SimDuration::ZERO).unwrap();
        assert!(f0.keyframe);
        assert_eq!(f0.size_bytes, 62_500);
        let f1 = s.poll(SimTime::from_ms(1_034), SimDuration::ZERO).unwrap();
        assert!(!f1.keyframe);
        assert_eq!(f1.size_bytes, 12_500);
        s.set_target(BitRate::from_mbps(6));
        s.request_keyframe();
        let f2 = s.poll(SimTime::from_ms(1_067), SimDuration::ZERO).unwrap();
        assert!(f2.keyframe);
        assert_eq!(f2.size_bytes, 125_000);
        let f3 = s.poll(SimTime::from_ms(1_100), SimDuration::ZERO).unwrap();
        assert_eq!((f3.keyframe, f3.size_bytes), (false, 25_000));
        assert_eq!(s.stats().keyframes, 2);
    }

    #[test]
    fn periodic_keyframes() {
        let params = FrameSourceParams { keyframe_interval_ms: Some(1_000), ..constant() };
        let mut s = source(params, 1);
        let keys: Vec<u64> = std::iter::from_fn(|| s.poll(SimTime::from_ms(3_500), SimDuration::ZERO))
            .filter(|f| f.keyframe)
            .map(|f| f.frame_id)
            .collect();
        assert_eq!(keys, vec![0, 30, 60]);
    }

    #[test]
    fn packetization_is_near_equal_with_marker_last() {
        let mut seq = 100;
        let pkts = packetize(7, 2_500, false, SimTime::ZERO, 1_200, 48, &mut seq);
        let sizes: Vec<u32> = pkts.iter().map(|p| p.payload_bytes).collect();
        assert_eq!(sizes, vec![834, 833, 833]);
        assert_eq!(seq, 103);
        let headers: Vec<MediaHeader> = pkts.iter().map(|p| *p.media().unwrap()).collect();
        assert_eq!(headers.iter().map(|h| h.index).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!(headers.iter().all(|h| h.count == 3 && h.frame_id == 7));
        assert_eq!(headers.iter().map(|h| h.marker).collect::<Vec<_>>(), vec![false, false, true]);
        assert_eq!(pkts.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![100, 101, 102]);
        assert_eq!(pkts[0].wire_bytes(), 882);
        // Exactly one full packet, and a tiny frame still makes one packet.
        assert_eq!(packetize(0, 1_200, false, SimTime::ZERO, 1_200, 48, &mut seq).len(), 1);
        assert_eq!(packetize(0, 1, false, SimTime::ZERO, 1_200, 48, &mut seq)[0].payload_bytes, 1);
    }

    #[test]
    fn lognormal_sizes_have_mean_one_and_requested_spread() {
        let mut rng = Rng::derive(3, "ln");
        let xs: Vec<f64> = (0..100_000).map(|_| lognormal_unit_mean(&mut rng, 0.2)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((mean - 1.0).abs() < 0.005, "{mean}");
        assert!((sd - 0.2).abs() < 0.005, "{sd}");
    }

    #[test]
    fn same_seed_same_frames() {
        let run = || {
            let mut s = source(FrameSourceParams::default(), 2);
            std::iter::from_fn(|| s.poll(SimTime::from_secs(3), SimDuration::ZERO))
                .map(|f| f.size_bytes)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn long_pacer_queue_skips_frames_without_consuming_ids() {
        let mut s = source(constant(), 2);
        let f0 = s.poll(SimTime::from_ms(1_000), SimDuration::ZERO).unwrap();
        assert!(s.poll(SimTime::from_ms(1_070), SimDuration::from_ms(2_001)).is_none());
        assert_eq!(s.stats().skipped, 2);
        let f1 = s.poll(SimTime::from_ms(1_100), SimDuration::from_ms(2_000)).unwrap();
        assert_eq!((f0.frame_id, f1.frame_id), (0, 1));
        assert_eq!(f1.capture_time, SimTime::from_ms(1_100));
    }

    #[test]
    fn params_parse_and_validate() {
        let p: FrameSourceParams = toml::from_str("fps = 25\ncv = 0.0").unwrap();
        assert_eq!((p.fps, p.cv, p.max_payload_bytes), (25, 0.0, 1_200));
        assert_eq!(p.frame_interval(), SimDuration::from_ms(40));
        assert!(toml::from_str::<FrameSourceParams>("fsp = 25").is_err());
        let bad = FrameSourceParams { fps: 0, ..Default::default() };
        assert_eq!(bad.validate().unwrap_err().field, "fps");
    }
}
