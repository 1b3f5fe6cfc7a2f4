//! Video over TCP, as the Zhuge artifact's TCP runs send it (`zhuge.md` §6.2, §6.8, §6.9): a frame
//! every 1/fps s written into the socket as a 12-byte header plus `R/1024/8/fps` kB, where the rate R
//! adapts every frame interval to how much of the socket buffer is still unsent; the receiver decodes a
//! frame once TCP has handed it every byte of it, in order.
//!
//! Rate adaptation (§6.8), once per frame interval `W` (40 ms at 25 fps), with `pending` the unsent bytes
//! in the socket, `written` the bytes written during the interval and `duty` the fraction of it with
//! unsent bytes waiting:
//!
//! ```text
//! first call:   R = 100 kbit/s
//! otherwise:    sent = written − (pending − pending_prev);  last_rate = sent · 8 / W
//!               pending > 0:  R = 0.75 · min(R, max(0.1, 1 − pending/sent) · last_rate)
//!               else:         R −= 0.5 · (duty − 0.75) · R
//!               R = clamp(R, 100 kbit/s, 100 Mbit/s)
//! ```
//!
//! Choices: the artifact samples `duty` in 1-ms slots; here it is the exact fraction of time (the
//! integral the slots approximate). With `sent = 0` and bytes pending, `1 − pending/sent` is taken as
//! −∞, so the factor is 0.1.

use crate::rtc::quality::VideoQuality;
use crate::rtc::receiver::{DecodedFrame, Via};
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `video = { fps = 25 }` of a `tcp_video` flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TcpVideoParams {
    /// Frames per second (1..=240). Default 25 (the Zhuge artifact).
    pub fps: u32,
    /// Rate floor, kbit/s. Default 100.
    pub min_kbps: u64,
    /// Rate ceiling, kbit/s. Default 100 000.
    pub max_kbps: u64,
    /// Per-frame header written before the frame, bytes. Default 12.
    pub header_bytes: u32,
    /// A fixed bitrate, Mbit/s, instead of the adaptation: every frame is rate/fps bytes (a VR stream,
    /// `qair-lastpq.md` §17.2: 45 Mbit/s at 30 fps for 1080p). Default: adapt.
    pub rate_mbps: Option<f64>,
    /// Skip a due frame at the source when more than this many frames' bytes are still unsent in the
    /// socket (the VR sender of §17.2 skips when more than one frame is unsent: 1). Default: never.
    pub skip_unsent_frames: Option<f64>,
}

impl Default for TcpVideoParams {
    fn default() -> Self {
        TcpVideoParams { fps: 25, min_kbps: 100, max_kbps: 100_000, header_bytes: 12, rate_mbps: None, skip_unsent_frames: None }
    }
}

impl TcpVideoParams {
    /// The first invalid field, as (name, reason).
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if !(1..=240).contains(&self.fps) {
            return Err(("fps", "must be in 1..=240"));
        }
        if self.min_kbps == 0 || self.min_kbps > self.max_kbps {
            return Err(("min_kbps", "must be in 1..=max_kbps"));
        }
        if self.rate_mbps.is_some_and(|r| !(r.is_finite() && r > 0.0 && r <= 10_000.0)) {
            return Err(("rate_mbps", "must be a positive number of Mbit/s up to 10000"));
        }
        if self.skip_unsent_frames.is_some_and(|n| !(n.is_finite() && (0.0..=1e6).contains(&n))) {
            return Err(("skip_unsent_frames", "must be zero or a positive number of frames"));
        }
        Ok(())
    }

    fn interval(&self) -> SimDuration {
        SimDuration::from_ns(1_000_000_000 / self.fps as u64)
    }
}

/// A frame written into the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpFrame {
    pub id: u64,
    pub capture: SimTime,
    /// Bytes written, header included.
    pub bytes: u64,
    /// Stream offset just past the frame.
    pub end: u64,
}

/// The sending application: frame clock, rate adaptation, and where each frame ends in the byte stream.
#[derive(Clone, Debug)]
pub struct TcpVideoSender {
    p: TcpVideoParams,
    interval: SimDuration,
    next_frame: SimTime,
    stop: SimTime,
    rate_bps: f64,
    started: bool,
    written_total: u64,
    written_window: u64,
    pending_prev: u64,
    /// Unsent bytes were waiting since this time (duty-cycle integral).
    busy_since: Option<SimTime>,
    busy_ns: u64,
    window_start: SimTime,
    frame_id: u64,
    /// Frames captured before this do not count in [`TcpVideoSender::measured_bytes`].
    measure_from: SimTime,
    /// Bytes of the frames written that were captured from `measure_from` on (the bitrate metric).
    pub measured_bytes: u64,
    /// Frames skipped at the source ([`TcpVideoParams::skip_unsent_frames`]).
    pub skipped: u64,
}

impl TcpVideoSender {
    /// A sender whose first frame is due at `start` and none at or after `stop`; frames captured before
    /// `measure_from` do not count in its bitrate.
    pub fn new(p: &TcpVideoParams, start: SimTime, stop: SimTime, measure_from: SimTime) -> Self {
        TcpVideoSender {
            interval: p.interval(),
            p: p.clone(),
            next_frame: start,
            stop,
            rate_bps: p.min_kbps as f64 * 1e3,
            started: false,
            written_total: 0,
            written_window: 0,
            pending_prev: 0,
            busy_since: None,
            busy_ns: 0,
            window_start: start,
            frame_id: 0,
            measure_from,
            measured_bytes: 0,
            skipped: 0,
        }
    }

    /// Frames captured before this do not count in [`TcpVideoSender::measured_bytes`].
    pub fn measure_from(&self) -> SimTime {
        self.measure_from
    }

    /// The next frame time, if before the stop.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        (self.next_frame < self.stop).then_some(self.next_frame)
    }

    /// The socket's unsent bytes changed to `unsent` at `now` (after a write or a transmission).
    pub fn on_unsent(&mut self, now: SimTime, unsent: u64) {
        match (self.busy_since, unsent > 0) {
            (None, true) => self.busy_since = Some(now),
            (Some(s), false) => {
                self.busy_ns += now.saturating_since(s.max(self.window_start)).as_ns();
                self.busy_since = None;
            }
            _ => {}
        }
    }

    /// The current rate, bit/s.
    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// At a frame time: adapts the rate to the socket's `unsent` bytes, then returns the frame to
    /// write, or `None` when not due.
    pub fn poll(&mut self, now: SimTime, unsent: u64) -> Option<TcpFrame> {
        if now < self.next_frame || self.next_frame >= self.stop {
            return None;
        }
        let capture = self.next_frame;
        self.next_frame = capture + self.interval;
        let bytes = match self.p.rate_mbps {
            Some(mbps) => (mbps * 1e6 / 8.0 / self.p.fps as f64).round() as u64 + self.p.header_bytes as u64,
            None => {
                self.adapt(now, unsent);
                let kbps = (self.rate_bps as u64) >> 10;
                kbps * 1000 / 8 / self.p.fps as u64 + self.p.header_bytes as u64
            }
        };
        if self.p.skip_unsent_frames.is_some_and(|n| unsent as f64 > n * bytes as f64) {
            self.skipped += 1;
            return None;
        }
        self.written_total += bytes;
        self.written_window += bytes;
        let id = self.frame_id;
        self.frame_id += 1;
        if capture >= self.measure_from {
            self.measured_bytes += bytes;
        }
        Some(TcpFrame { id, capture, bytes, end: self.written_total })
    }

    fn adapt(&mut self, now: SimTime, pending: u64) {
        let window = now.saturating_since(self.window_start);
        let busy = self.busy_ns + self.busy_since.map_or(0, |s| now.saturating_since(s.max(self.window_start)).as_ns());
        if self.started && !window.is_zero() {
            let sent = self.written_window as i64 - (pending as i64 - self.pending_prev as i64);
            let last_rate = sent as f64 * 8.0 / window.as_secs_f64();
            if pending > 0 {
                let factor = if sent > 0 { (1.0 - pending as f64 / sent as f64).max(0.1) } else { 0.1 };
                self.rate_bps = 0.75 * self.rate_bps.min(factor * last_rate);
            } else {
                let duty = busy as f64 / window.as_ns() as f64;
                self.rate_bps -= 0.5 * (duty - 0.75) * self.rate_bps;
            }
        }
        self.started = true;
        self.rate_bps = self.rate_bps.clamp(self.p.min_kbps as f64 * 1e3, self.p.max_kbps as f64 * 1e3);
        self.pending_prev = pending;
        self.written_window = 0;
        self.busy_ns = 0;
        self.window_start = now;
    }
}

/// The receiving application: decodes each frame when TCP has delivered its last byte.
#[derive(Clone, Debug)]
pub struct TcpVideoReceiver {
    /// Frames written and not yet decoded: (id, capture time, end offset in the stream).
    pending: VecDeque<(u64, SimTime, u64)>,
    pub quality: VideoQuality,
}

impl TcpVideoReceiver {
    pub fn new(measure_from: SimTime) -> Self {
        let mut quality = VideoQuality::new(0);
        quality.set_measure_from(measure_from);
        TcpVideoReceiver { pending: VecDeque::new(), quality }
    }

    /// The sender wrote frame `id` captured at `capture`, ending at stream offset `end`.
    pub fn on_written(&mut self, id: u64, capture: SimTime, end: u64) {
        self.pending.push_back((id, capture, end));
    }

    /// TCP has handed the application `delivered` in-order bytes by `now`.
    pub fn on_delivered(&mut self, now: SimTime, delivered: u64) {
        while let Some(&(id, capture, end)) = self.pending.front() {
            if end > delivered {
                break;
            }
            self.pending.pop_front();
            let f = DecodedFrame { frame_id: id, capture_time: capture, complete: now, decoded: now, keyframe: id == 0, completed_by: Via::Original, retransmitted: false };
            self.quality.on_decoded(&f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> SimTime {
        SimTime::from_ms(v)
    }

    #[test]
    fn first_frame_is_at_the_floor_and_sized_by_the_shifted_rate() {
        let mut s = TcpVideoSender::new(&TcpVideoParams::default(), ms(0), ms(10_000), ms(0));
        let f = s.poll(ms(0), 0).unwrap();
        // 100 000 >> 10 = 97 "kbps" → 97 000 / 8 / 25 = 485 B + 12.
        assert_eq!(f, TcpFrame { id: 0, capture: ms(0), bytes: 497, end: 497 });
        assert_eq!(s.next_wakeup(), Some(ms(40)));
        assert!(s.poll(ms(39), 0).is_none());
    }

    #[test]
    fn idle_socket_grows_the_rate_by_three_eighths() {
        let mut s = TcpVideoSender::new(&TcpVideoParams::default(), ms(0), ms(10_000), ms(0));
        s.poll(ms(0), 0);
        s.on_unsent(ms(0), 497);
        s.on_unsent(ms(0), 0);
        // Nothing waited during the interval: duty 0 → R −= 0.5·(0 − 0.75)·R = ×1.375.
        s.poll(ms(40), 0);
        assert!((s.rate_bps() - 137_500.0).abs() < 1e-6, "{}", s.rate_bps());
        // Waiting half the interval (duty 0.5): ×1.125.
        s.on_unsent(ms(40), 100);
        s.on_unsent(ms(60), 0);
        s.poll(ms(80), 0);
        assert!((s.rate_bps() - 137_500.0 * 1.125).abs() < 1e-6, "{}", s.rate_bps());
    }

    #[test]
    fn backlog_cuts_the_rate_to_three_quarters_of_what_drained() {
        let p = TcpVideoParams { min_kbps: 1, ..Default::default() };
        let mut s = TcpVideoSender::new(&p, ms(0), ms(10_000), ms(0));
        s.rate_bps = 1e6;
        s.started = true;
        s.window_start = ms(0);
        s.written_window = 5000;
        s.pending_prev = 1000;
        // 5000 written, pending grew 1000 → 3000: sent = 3000 B in 40 ms = 600 kbit/s;
        // factor = max(0.1, 1 − 3000/3000) = 0.1 → R = 0.75 · min(1e6, 60 000) = 45 000.
        s.poll(ms(40), 3000);
        assert!((s.rate_bps() - 45_000.0).abs() < 1e-6, "{}", s.rate_bps());
    }

    #[test]
    fn a_fixed_rate_stream_skips_frames_while_more_than_one_is_unsent() {
        let p = TcpVideoParams { fps: 30, rate_mbps: Some(45.0), skip_unsent_frames: Some(1.0), header_bytes: 0, ..Default::default() };
        let mut s = TcpVideoSender::new(&p, ms(0), ms(10_000), ms(0));
        // 45 Mbit/s at 30 fps: 187 500 B per frame.
        assert_eq!(s.poll(ms(0), 0).map(|f| f.bytes), Some(187_500));
        // One frame unsent is allowed; more than one skips the frame, and the clock goes on.
        assert_eq!(s.poll(ms(34), 187_500).map(|f| f.bytes), Some(187_500));
        assert_eq!(s.poll(ms(67), 187_501), None);
        assert_eq!(s.skipped, 1);
        assert_eq!(s.next_wakeup(), Some(SimTime::from_ns(100_000_000 - 1)));
        assert_eq!(s.poll(ms(100), 0).map(|f| f.id), Some(2));
    }

    #[test]
    fn receiver_decodes_frames_once_their_last_byte_is_in_order() {
        let mut r = TcpVideoReceiver::new(SimTime::ZERO);
        r.on_written(0, ms(0), 500);
        r.on_written(1, ms(40), 1000);
        r.on_delivered(ms(30), 499);
        assert_eq!(r.quality.report(SimDuration::from_ms(400)).frames_decoded, 0);
        r.on_delivered(ms(90), 1000);
        let q = r.quality.report(SimDuration::from_ms(400));
        assert_eq!(q.frames_decoded, 2);
        // Frame delays 90 and 50 ms.
        assert_eq!(q.latency_p99_ms, 90.0);
        assert_eq!(q.latency_p50_ms, 50.0);
    }
}
