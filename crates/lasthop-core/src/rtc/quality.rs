//! Video quality metrics from the receiver's decoded and dropped frames (baselines.md §5.6).
//!
//! * **Frame delivery latency** `L = decoded − captured`; a dropped frame never arrives (latency ∞,
//!   Law). Percentiles are nearest-rank over decoded frames after the warm-up (the first
//!   `warmup_frames`, 10 by default as the Zhuge artifact excludes), exact up to
//!   [`crate::stats::EXACT_SAMPLES`] frames (36 min of 30-fps video) and within 0.1 % past that
//!   ([`Samples`]); so is the count of frames above the deadline.
//! * **Deadline miss**: fraction of frames (decoded or dropped, after warm-up) whose latency exceeds the
//!   bound (Law 100 ms, Zhuge "delayed frame" 400 ms); dropped frames always miss. Also reported over
//!   frames that were not retransmitted (Law's Fig. 17b: completed by a first transmission or FEC).
//! * **Freezes** (WebRTC `VideoQualityObserver::OnRenderedFrame`): each inter-frame gap Δ of rendered
//!   (here: decoded) frames, in whole ms, joins a moving window of the last 30 gaps; once the window
//!   holds ≥ 5 gaps *including this one*, Δ is a freeze when `Δ ≥ max(3·avg, avg + 150 ms)` with `avg`
//!   the window mean rounded down. (baselines.md words it as "≥ 5 prior gaps"; the source counts the
//!   current gap in both the count and the mean, and we follow the source.) A freeze's duration is the
//!   whole gap; stall rate = freezes per minute of playback, frozen fraction = total freeze time /
//!   playback time.
//! * **Low frame rate** (Zhuge): decoded frames per 1-s bin from the first decoded frame's bin to the
//!   last's, excluding those two edge bins; the ratio of bins below 10 fps, both counting empty bins
//!   (lasthop's choice) and omitting them (what the Zhuge scripts do).

use super::receiver::{DecodedFrame, Via};
use crate::stats::Samples;
use crate::time::{SimDuration, SimTime};
use serde::Serialize;
use std::collections::VecDeque;

const FREEZE_WINDOW: usize = 30;
const FREEZE_MIN_SAMPLES: usize = 5;
const FREEZE_MIN_INCREASE_MS: i64 = 150;

/// The WebRTC freeze detector over rendered-frame times.
#[derive(Clone, Debug, Default)]
pub struct FreezeDetector {
    last_ms: Option<i64>,
    first_ms: Option<i64>,
    window: VecDeque<i64>,
    sum: i64,
    freezes: u64,
    frozen_ms: i64,
}

impl FreezeDetector {
    /// A frame rendered at `t`; returns the gap before it when that gap was a freeze.
    pub fn on_rendered(&mut self, t: SimTime) -> Option<SimDuration> {
        let now = ((t.as_ns() + 500_000) / 1_000_000) as i64;
        self.first_ms.get_or_insert(now);
        let last = self.last_ms.replace(now)?;
        let gap = now - last;
        self.window.push_back(gap);
        self.sum += gap;
        if self.window.len() > FREEZE_WINDOW {
            self.sum -= self.window.pop_front().expect("non-empty");
        }
        if self.window.len() < FREEZE_MIN_SAMPLES {
            return None;
        }
        let avg = self.sum.div_euclid(self.window.len() as i64);
        if gap >= (3 * avg).max(avg + FREEZE_MIN_INCREASE_MS) {
            self.freezes += 1;
            self.frozen_ms += gap;
            return Some(SimDuration::from_ms(gap as u64));
        }
        None
    }

    pub fn freezes(&self) -> u64 {
        self.freezes
    }

    /// Total duration of the freezes.
    pub fn frozen(&self) -> SimDuration {
        SimDuration::from_ms(self.frozen_ms as u64)
    }

    /// Time from the first to the last rendered frame.
    pub fn playback(&self) -> SimDuration {
        match (self.first_ms, self.last_ms) {
            (Some(a), Some(b)) => SimDuration::from_ms((b - a) as u64),
            _ => SimDuration::ZERO,
        }
    }
}

/// A summary of one video flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct QualityReport {
    pub frames_decoded: u64,
    pub frames_dropped: u64,
    /// Nearest-rank latency percentiles of decoded frames after warm-up, ms.
    pub latency_p50_ms: f64,
    pub latency_p95_ms: f64,
    pub latency_p99_ms: f64,
    pub latency_p999_ms: f64,
    /// Fraction of frames (dropped count as misses) above the deadline.
    pub deadline_miss: f64,
    /// The same over frames not completed by a retransmission (decoded ones only).
    pub deadline_miss_non_retransmitted: f64,
    pub freezes: u64,
    pub freezes_per_minute: f64,
    pub frozen_fraction: f64,
    pub mean_fps: f64,
    /// Fraction of 1-s bins under 10 fps, empty bins included.
    pub low_fps_ratio: f64,
    /// The same with empty bins left out (the Zhuge scripts).
    pub low_fps_ratio_nonempty: f64,
}

/// One decoded or abandoned video frame: (frame id, capture time, decode or give-up time, abandoned).
pub type FrameRecord = (u64, SimTime, SimTime, bool);

/// Collects decoded and dropped frames and summarises them, in memory that does not grow with the
/// length of the call (the frame log is taken out as the run goes, [`VideoQuality::take_log`]).
#[derive(Clone, Debug)]
pub struct VideoQuality {
    warmup_frames: u64,
    /// Latency (ns) of each decoded frame after warm-up.
    latency: Samples,
    /// The same, of the frames not completed by a retransmission.
    latency_first_try: Samples,
    dropped_after_warmup: u64,
    frames_decoded: u64,
    frames_dropped: u64,
    freeze: FreezeDetector,
    /// Decoded frames per second of simulated time, indexed from 0.
    bins: Vec<u32>,
    /// Frames captured (decoded) or given up before this do not count (the run's warm-up).
    measure_from: SimTime,
    /// The frames decoded or given up (measured or not) and not taken out yet, in the order they ended.
    log: Vec<FrameRecord>,
}

impl VideoQuality {
    /// Metrics that ignore the first `warmup_frames` frames (by frame id) for latency and deadline.
    pub fn new(warmup_frames: u64) -> Self {
        VideoQuality {
            warmup_frames,
            latency: Samples::default(),
            latency_first_try: Samples::default(),
            dropped_after_warmup: 0,
            frames_decoded: 0,
            frames_dropped: 0,
            freeze: FreezeDetector::default(),
            bins: vec![],
            measure_from: SimTime::ZERO,
            log: vec![],
        }
    }

    /// Leaves out frames captured before `t` (and drops and renders before it) from every metric.
    pub fn set_measure_from(&mut self, t: SimTime) {
        self.measure_from = t;
    }

    pub fn on_decoded(&mut self, f: &DecodedFrame) {
        self.log.push((f.frame_id, f.capture_time, f.decoded, false));
        if f.capture_time < self.measure_from {
            return;
        }
        self.frames_decoded += 1;
        if f.frame_id >= self.warmup_frames {
            self.latency.push(f.latency().as_ns());
            if f.completed_by != Via::Retransmission {
                self.latency_first_try.push(f.latency().as_ns());
            }
        }
        self.freeze.on_rendered(f.decoded);
        let bin = (f.decoded.as_ns() / 1_000_000_000) as usize;
        if self.bins.len() <= bin {
            self.bins.resize(bin + 1, 0);
        }
        self.bins[bin] += 1;
    }

    /// Frame `frame_id` was given up at `at`; `capture`, when known, logs it. It counts in the metrics
    /// when given up after the measurement start.
    pub fn on_dropped(&mut self, frame_id: u64, capture: Option<SimTime>, at: SimTime) {
        if let Some(c) = capture {
            self.log.push((frame_id, c, at, true));
        }
        if at < self.measure_from {
            return;
        }
        self.frames_dropped += 1;
        self.dropped_after_warmup += (frame_id >= self.warmup_frames) as u64;
    }

    /// Takes out the logged frames that ended before `before`, in the order they ended (the others
    /// stay): frames end at their own time, so chunks taken as a run goes concatenate to what one
    /// taken at the end holds.
    pub fn take_log(&mut self, before: SimTime) -> Vec<FrameRecord> {
        let (done, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.log).into_iter().partition(|f| f.2 < before);
        self.log = rest;
        done
    }

    pub fn freeze_detector(&self) -> &FreezeDetector {
        &self.freeze
    }

    /// The summary with frame deadline `deadline`.
    pub fn report(&self, deadline: SimDuration) -> QualityReport {
        let mut lat = self.latency.clone();
        let mut pct = |p: f64| lat.percentile(p).map_or(f64::NAN, |ns| SimDuration::from_ns(ns).as_ms_f64());
        let (p50, p95, p99, p999) = (pct(50.0), pct(95.0), pct(99.0), pct(99.9));
        let late = self.latency.count_above(deadline.as_ns());
        let total = self.latency.len() + self.dropped_after_warmup;
        let first_try = &self.latency_first_try;
        let playback_min = self.freeze.playback().as_secs_f64() / 60.0;
        let (low, low_nonempty, mean_fps) = self.fps_figures();
        QualityReport {
            frames_decoded: self.frames_decoded,
            frames_dropped: self.frames_dropped,
            latency_p50_ms: p50,
            latency_p95_ms: p95,
            latency_p99_ms: p99,
            latency_p999_ms: p999,
            deadline_miss: ratio(late + self.dropped_after_warmup, total),
            deadline_miss_non_retransmitted: ratio(first_try.count_above(deadline.as_ns()), first_try.len()),
            freezes: self.freeze.freezes(),
            freezes_per_minute: if playback_min > 0.0 { self.freeze.freezes() as f64 / playback_min } else { 0.0 },
            frozen_fraction: ratio(self.freeze.frozen().as_ns(), self.freeze.playback().as_ns()),
            mean_fps,
            low_fps_ratio: low,
            low_fps_ratio_nonempty: low_nonempty,
        }
    }

    /// (low-fps ratio with empty bins, without them, mean fps) over the inner bins.
    fn fps_figures(&self) -> (f64, f64, f64) {
        let first = self.bins.iter().position(|&n| n > 0);
        let inner: &[u32] = match first {
            Some(a) if self.bins.len() >= a + 3 => &self.bins[a + 1..self.bins.len() - 1],
            _ => &[],
        };
        let low = inner.iter().filter(|&&n| n < 10).count() as u64;
        let nonempty: Vec<u32> = inner.iter().copied().filter(|&n| n > 0).collect();
        let low_nonempty = nonempty.iter().filter(|&&n| n < 10).count() as u64;
        let mean = if inner.is_empty() { 0.0 } else { inner.iter().sum::<u32>() as f64 / inner.len() as f64 };
        (ratio(low, inner.len() as u64), ratio(low_nonempty, nonempty.len() as u64), mean)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime::from_ms(x)
    }

    /// 41 frames 33 ms apart, then one more after `gap` ms: is that last gap a freeze?
    fn freeze_after(gap: u64) -> bool {
        let mut f = FreezeDetector::default();
        for i in 0..41 {
            assert_eq!(f.on_rendered(ms(i * 33)), None);
        }
        f.on_rendered(ms(40 * 33 + gap)).is_some()
    }

    #[test]
    fn freeze_rule_counts_the_gap_itself_in_the_average() {
        // Window = 29 × 33 ms + the gap G; avg = floor((957 + G) / 30); freeze iff G ≥ avg + 150
        // (3·avg is smaller here). G = 188 → avg 38 → 188 ≥ 188; G = 187 → avg 38 → no.
        assert!(freeze_after(188));
        assert!(!freeze_after(187));
        assert!(freeze_after(1_000));
    }

    #[test]
    fn no_freeze_before_five_gaps_and_durations_add_up() {
        let mut f = FreezeDetector::default();
        for t in [0, 33, 66, 900] {
            assert_eq!(f.on_rendered(ms(t)), None, "only 3 gaps so far");
        }
        for i in 1..=10 {
            f.on_rendered(ms(900 + i * 33));
        }
        let gap = f.on_rendered(ms(1_230 + 500));
        assert_eq!(gap, Some(SimDuration::from_ms(500)));
        assert_eq!((f.freezes(), f.frozen(), f.playback()), (1, SimDuration::from_ms(500), SimDuration::from_ms(1_730)));
    }

    fn decoded(id: u64, capture_ms: u64, decoded_ms: u64, by: Via) -> DecodedFrame {
        DecodedFrame {
            frame_id: id,
            capture_time: ms(capture_ms),
            complete: ms(decoded_ms),
            decoded: ms(decoded_ms),
            keyframe: id == 0,
            completed_by: by,
            retransmitted: by == Via::Retransmission,
        }
    }

    #[test]
    fn latency_percentiles_and_deadline_misses() {
        let mut q = VideoQuality::new(2);
        // Frames 0 and 1 are warm-up. Latencies of frames 2..=11: 10, 20, …, 100 ms; frame 11 retransmitted.
        for id in 0..12u64 {
            let by = if id == 11 { Via::Retransmission } else { Via::Original };
            q.on_decoded(&decoded(id, id * 33, id * 33 + id.saturating_sub(1) * 10, by));
        }
        q.on_dropped(12, Some(ms(12 * 33)), ms(600));
        let r = q.report(SimDuration::from_ms(75));
        assert_eq!((r.frames_decoded, r.frames_dropped), (12, 1));
        assert_eq!((r.latency_p50_ms, r.latency_p95_ms, r.latency_p99_ms), (50.0, 100.0, 100.0));
        // Above 75 ms: 80, 90, 100 and the dropped frame: 4 of 11.
        assert!((r.deadline_miss - 4.0 / 11.0).abs() < 1e-12);
        // Not retransmitted: latencies 10..=90, two above 75 ms.
        assert!((r.deadline_miss_non_retransmitted - 2.0 / 9.0).abs() < 1e-12);
        // The log gives out the frames that ended before a time, in the order they ended, once.
        let early = q.take_log(ms(11 * 33 + 100));
        assert_eq!(early.iter().map(|f| f.0).collect::<Vec<_>>(), (0..11).collect::<Vec<_>>());
        assert_eq!(q.take_log(SimTime::MAX), vec![(11, ms(11 * 33), ms(11 * 33 + 100), false), (12, ms(12 * 33), ms(600), true)]);
        assert!(q.take_log(SimTime::MAX).is_empty());
    }

    #[test]
    fn low_fps_bins_exclude_the_edges_and_optionally_empty_bins() {
        let mut q = VideoQuality::new(0);
        let mut id = 0;
        let mut at = |q: &mut VideoQuality, t_ms: u64| {
            q.on_decoded(&decoded(id, t_ms, t_ms, Via::Original));
            id += 1;
        };
        // Per second: 30, 30, 30, 5, 5, 0, 30, 30 frames.
        for (sec, n) in [30u64, 30, 30, 5, 5, 0, 30, 30].iter().enumerate() {
            for k in 0..*n {
                at(&mut q, sec as u64 * 1_000 + k * 1_000 / n);
            }
        }
        let r = q.report(SimDuration::from_ms(100));
        // Inner bins 30, 30, 5, 5, 0, 30: 3 of 6 below 10 fps; without the empty bin 2 of 5.
        assert!((r.low_fps_ratio - 0.5).abs() < 1e-12);
        assert!((r.low_fps_ratio_nonempty - 0.4).abs() < 1e-12);
        assert!((r.mean_fps - 100.0 / 6.0).abs() < 1e-12);
        // The 5 fps seconds are freezes (200 ms gaps after 33 ms ones) and so is the empty second.
        assert!(r.freezes >= 2, "{r:?}");
    }
}
