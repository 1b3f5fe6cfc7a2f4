//! Per-flow counters and latency samples, summarised at the end of a run.

use crate::packet::Packet;
use crate::rtc::quality::QualityReport;
use crate::time::{SimDuration, SimTime};
use serde::Serialize;

/// Nearest-rank percentile of sorted samples (`q` in 0..=100).
pub fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Running state of one flow.
#[derive(Debug, Clone)]
pub struct FlowTracker {
    pub name: String,
    pub kind: &'static str,
    pub from: String,
    pub to: String,
    /// Packets sent before this are not counted.
    pub measure_from: SimTime,
    pub measure_to: SimTime,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_packets: u64,
    /// Bytes delivered inside the measurement window (by delivery time): the throughput numerator.
    pub window_bytes: u64,
    /// One-way latency of every counted delivered packet, ns (exact percentiles up to
    /// [`super::samples::EXACT_SAMPLES`], then within 0.1 %).
    pub latencies: super::Samples,
    /// Round-trip samples inside the window, ns (TCP: per ACK from the echoed timestamp; RTC: per
    /// RTCP report).
    pub rtts: super::Samples,
    /// The flow's latency is a round trip (ping): RTT metrics come from it.
    pub rtt_is_latency: bool,
    /// Count runs of consecutive losses by sequence number (not for TCP).
    pub loss_runs: bool,
    /// Sequence numbers of counted dropped packets.
    pub lost_seqs: SeqSet,
    /// In-order bytes handed to the application: (value when the window opened, latest value in it).
    pub goodput: Option<(u64, u64)>,
    /// A video flow's quality report and the bytes it encoded in the window.
    pub video: Option<(QualityReport, u64)>,
    /// Every RTT sample (time, ns), window or not, for `rtt.parquet`.
    pub rtt_series: Vec<(SimTime, u64)>,
}

/// RTT samples above this count in `rtt_over_200ms_ratio` (Zhuge's threshold).
pub const RTT_HIGH: SimDuration = SimDuration::from_ms(200);
/// A loss run is this many consecutive packets or more (Law's "consecutive losses").
pub const LOSS_RUN: u64 = 5;

/// A set of sequence numbers (a flow's lost packets): a list while the numbers are few, one bit per
/// number up to the highest once the list would take more (more than one number in 64), and bits from
/// then on (a burst of losses early in a run leaves the rest of the run with bits). Losses come in the
/// order packets are dropped, far from sequence order under an AQM (39 of every 63 losses on ns-3's
/// anchor followed a higher one), so a list has to be sorted before its
/// runs are counted: on that anchor, where half the packets are lost, that sort took 24 ms of the run's
/// 0.7 s; the bits are counted in one pass, and fold duplicates as they come. A flow's sequence numbers
/// count its packets from 0 (TCP, whose numbers are bytes, keeps no set), so the bits take at most one
/// per packet sent, and a call that loses one packet in a thousand keeps its list (a bit per packet would
/// take 16 times its memory over a day).
#[derive(Debug, Clone)]
pub enum SeqSet {
    /// The numbers as they came, and the highest.
    List(Vec<u64>, u64),
    /// Bit `s % 64` of word `s / 64` is number `s`.
    Bits(Vec<u64>),
}

impl Default for SeqSet {
    fn default() -> Self {
        SeqSet::List(Vec::new(), 0)
    }
}

impl SeqSet {
    pub fn insert(&mut self, seq: u64) {
        match self {
            SeqSet::List(list, max) => {
                list.push(seq);
                *max = (*max).max(seq);
                // The list is the larger once it holds more than one number per 64 up to its highest (and
                // at least 64: 512 bytes).
                if list.len() >= 64 && list.len() as u64 * 64 > *max {
                    let mut words = Vec::new();
                    for &s in list.iter() {
                        set_bit(&mut words, s);
                    }
                    *self = SeqSet::Bits(words);
                }
            }
            SeqSet::Bits(words) => set_bit(words, seq),
        }
    }

    /// Runs of at least `min` (≥ 1) consecutive numbers, each counted once.
    pub fn runs_at_least(&mut self, min: u64) -> u64 {
        let (mut runs, mut len) = (0, 0u64);
        match self {
            SeqSet::List(list, _) => {
                list.sort_unstable();
                list.dedup();
                for (i, &s) in list.iter().enumerate() {
                    len = if i > 0 && list[i - 1] + 1 == s { len + 1 } else { 1 };
                    runs += (len == min) as u64;
                }
            }
            SeqSet::Bits(words) => {
                for &w in words.iter() {
                    if w == 0 {
                        len = 0;
                        continue;
                    }
                    for bit in 0..64 {
                        if w >> bit & 1 == 1 {
                            len += 1;
                            runs += (len == min) as u64;
                        } else {
                            len = 0;
                        }
                    }
                }
            }
        }
        runs
    }
}

fn set_bit(words: &mut Vec<u64>, seq: u64) {
    let w = (seq / 64) as usize;
    if w >= words.len() {
        words.resize(w + 1, 0);
    }
    words[w] |= 1 << (seq % 64);
}

impl FlowTracker {
    pub fn new(name: String, kind: &'static str, from: String, to: String, measure_from: SimTime, measure_to: SimTime) -> Self {
        FlowTracker {
            name,
            kind,
            from,
            to,
            measure_from,
            measure_to,
            sent_packets: 0,
            sent_bytes: 0,
            delivered_packets: 0,
            delivered_bytes: 0,
            dropped_packets: 0,
            window_bytes: 0,
            latencies: Default::default(),
            rtts: Default::default(),
            rtt_is_latency: false,
            loss_runs: false,
            lost_seqs: SeqSet::default(),
            goodput: None,
            video: None,
            rtt_series: Vec::new(),
        }
    }

    fn counts(&self, p: &Packet) -> bool {
        p.sent >= self.measure_from
    }

    pub fn on_sent(&mut self, p: &Packet) {
        if self.counts(p) {
            self.sent_packets += 1;
            self.sent_bytes += p.size as u64;
        }
    }

    /// A packet sent (or, for an echo, a request sent) at `origin` completed at `now`.
    pub fn on_delivered(&mut self, p: &Packet, origin: SimTime, now: SimTime) {
        if now >= self.measure_from && now <= self.measure_to {
            self.window_bytes += p.size as u64;
        }
        if origin >= self.measure_from {
            self.delivered_packets += 1;
            self.delivered_bytes += p.size as u64;
            self.latencies.push((now - origin).as_ns());
        }
    }

    /// Packet `seq`, which originated at `origin`, was dropped.
    pub fn on_dropped(&mut self, origin: SimTime, seq: u64) {
        if origin >= self.measure_from {
            self.dropped_packets += 1;
            if self.loss_runs {
                self.lost_seqs.insert(seq);
            }
        }
    }

    /// A round-trip sample taken at `now`.
    pub fn on_rtt(&mut self, now: SimTime, rtt: SimDuration) {
        self.rtt_series.push((now, rtt.as_ns()));
        if now >= self.measure_from && now <= self.measure_to {
            self.rtts.push(rtt.as_ns());
        }
    }

    /// The receiver's in-order byte count went from `before` to `after` at `now`.
    pub fn on_goodput(&mut self, now: SimTime, before: u64, after: u64) {
        if now < self.measure_from || now > self.measure_to {
            return;
        }
        let base = self.goodput.map_or(before, |g| g.0);
        self.goodput = Some((base, after));
    }

    pub fn summarize(&mut self) -> FlowSummary {
        let window = self.measure_to.saturating_since(self.measure_from).as_secs_f64();
        let mut ms = |q: f64| self.latencies.percentile(q).map(|v| v as f64 * 1e-6);
        let (lat_p50, lat_p95, lat_p99, lat_p999) = (ms(50.0), ms(95.0), ms(99.0), ms(99.9));
        let mean = self.latencies.mean().map(|m| m * 1e-6);
        let window_s = window;
        if self.rtt_is_latency {
            self.rtts = self.latencies.clone();
        }
        let mut rtt_ms = |q: f64| self.rtts.percentile(q).map(|v| v as f64 * 1e-6);
        let (rtt_p50, rtt_p95, rtt_p99) = (rtt_ms(50.0), rtt_ms(95.0), rtt_ms(99.0));
        let high = self.rtts.count_above(RTT_HIGH.as_ns());
        let loss_runs = self.loss_runs.then(|| self.lost_seqs.runs_at_least(LOSS_RUN));
        let per_s = |n: f64| if window_s > 0.0 { n / window_s } else { 0.0 };
        let v = self.video.map(|v| v.0);
        let finite = |x: f64| x.is_finite().then_some(x);
        FlowSummary {
            flow: self.name.clone(),
            kind: self.kind.to_string(),
            from: self.from.clone(),
            to: self.to.clone(),
            sent_packets: self.sent_packets,
            delivered_packets: self.delivered_packets,
            dropped_packets: self.dropped_packets,
            in_flight_packets: self.sent_packets - self.delivered_packets - self.dropped_packets,
            loss_rate: if self.sent_packets > 0 { self.dropped_packets as f64 / self.sent_packets as f64 } else { 0.0 },
            sent_bytes: self.sent_bytes,
            delivered_bytes: self.delivered_bytes,
            throughput_mbps: if window > 0.0 { self.window_bytes as f64 * 8.0 / window * 1e-6 } else { 0.0 },
            latency_mean_ms: mean,
            latency_p50_ms: lat_p50,
            latency_p95_ms: lat_p95,
            latency_p99_ms: lat_p99,
            latency_p999_ms: lat_p999,
            latency_max_ms: self.latencies.max().map(|v| v as f64 * 1e-6),
            rtt_p50_ms: rtt_p50,
            rtt_p95_ms: rtt_p95,
            rtt_p99_ms: rtt_p99,
            rtt_over_200ms_ratio: (!self.rtts.is_empty()).then(|| high as f64 / self.rtts.len() as f64),
            loss_runs5_per_s: loss_runs.map(|n| per_s(n as f64)),
            goodput_mbps: self.goodput.map(|(a, b)| per_s((b - a) as f64 * 8.0) * 1e-6),
            bitrate_mbps: self.video.map(|v| per_s(v.1 as f64 * 8.0) * 1e-6),
            frames_decoded: v.map(|v| v.frames_decoded),
            frames_dropped: v.map(|v| v.frames_dropped),
            frame_latency_p50_ms: v.and_then(|v| finite(v.latency_p50_ms)),
            frame_latency_p95_ms: v.and_then(|v| finite(v.latency_p95_ms)),
            frame_latency_p99_ms: v.and_then(|v| finite(v.latency_p99_ms)),
            frame_latency_p999_ms: v.and_then(|v| finite(v.latency_p999_ms)),
            frame_deadline_miss_rate: v.map(|v| v.deadline_miss),
            freezes: v.map(|v| v.freezes),
            freezes_per_min: v.map(|v| v.freezes_per_minute),
            frozen_ratio: v.map(|v| v.frozen_fraction),
            fps_mean: v.map(|v| v.mean_fps),
            fps_under_10_ratio: v.map(|v| v.low_fps_ratio),
            percentiles_exact: self.latencies.values().is_some() && self.rtts.values().is_some(),
        }
    }
}

/// One row of `flows.parquet`.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FlowSummary {
    pub flow: String,
    pub kind: String,
    pub from: String,
    pub to: String,
    pub sent_packets: u64,
    pub delivered_packets: u64,
    pub dropped_packets: u64,
    /// Sent in the measurement window but neither delivered nor dropped when the run ended.
    pub in_flight_packets: u64,
    /// dropped / sent.
    pub loss_rate: f64,
    pub sent_bytes: u64,
    pub delivered_bytes: u64,
    /// IP bytes delivered during the measurement window (warm-up end or flow start → flow stop or run
    /// end), per second.
    pub throughput_mbps: f64,
    pub latency_mean_ms: Option<f64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p95_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub latency_p999_ms: Option<f64>,
    pub latency_max_ms: Option<f64>,
    /// Round-trip time percentiles, ms: TCP per ACK (echoed timestamp), RTC per RTCP report
    /// (LSR/DLSR-style), ping per reply; null for flows without round trips.
    pub rtt_p50_ms: Option<f64>,
    pub rtt_p95_ms: Option<f64>,
    pub rtt_p99_ms: Option<f64>,
    /// Fraction of RTT samples above 200 ms (Zhuge).
    pub rtt_over_200ms_ratio: Option<f64>,
    /// Runs of ≥ 5 consecutive lost packets (by sequence number) per second of the window (Law);
    /// null for TCP.
    pub loss_runs5_per_s: Option<f64>,
    /// TCP: in-order payload bytes handed to the application in the window, per second.
    pub goodput_mbps: Option<f64>,
    /// Video: encoded bytes of frames captured in the window, per second.
    pub bitrate_mbps: Option<f64>,
    pub frames_decoded: Option<u64>,
    pub frames_dropped: Option<u64>,
    /// Video frame delivery latency (capture → decodable), ms.
    pub frame_latency_p50_ms: Option<f64>,
    pub frame_latency_p95_ms: Option<f64>,
    pub frame_latency_p99_ms: Option<f64>,
    pub frame_latency_p999_ms: Option<f64>,
    /// Frames later than the flow's `deadline_ms`, dropped frames included.
    pub frame_deadline_miss_rate: Option<f64>,
    /// WebRTC freezes (a frame gap > max(3 × mean gap, mean gap + 150 ms)).
    pub freezes: Option<u64>,
    pub freezes_per_min: Option<f64>,
    /// Fraction of playback time spent frozen.
    pub frozen_ratio: Option<f64>,
    pub fps_mean: Option<f64>,
    /// Fraction of 1-s bins with fewer than 10 decoded frames.
    pub fps_under_10_ratio: Option<f64>,
    /// The latency and RTT percentiles are exact (nearest rank); false past
    /// [`super::samples::EXACT_SAMPLES`] samples, where they are within 0.1 % (HDR histogram).
    pub percentiles_exact: bool,
}

/// A value of a `flows.parquet` column, typed as its column is whichever values are missing, so that
/// every run's table has the same schema (a column of a flow kind the run lacks is all nulls of its type).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FlowField<'a> {
    Text(&'a str),
    Count(u64),
    Real(f64),
    MaybeCount(Option<u64>),
    MaybeReal(Option<f64>),
    Flag(bool),
}

impl FlowSummary {
    /// The row's columns, in the order of its fields (and of its JSON).
    pub fn fields(&self) -> [(&'static str, FlowField<'_>); 38] {
        [
            ("flow", FlowField::Text(&self.flow)),
            ("kind", FlowField::Text(&self.kind)),
            ("from", FlowField::Text(&self.from)),
            ("to", FlowField::Text(&self.to)),
            ("sent_packets", FlowField::Count(self.sent_packets)),
            ("delivered_packets", FlowField::Count(self.delivered_packets)),
            ("dropped_packets", FlowField::Count(self.dropped_packets)),
            ("in_flight_packets", FlowField::Count(self.in_flight_packets)),
            ("loss_rate", FlowField::Real(self.loss_rate)),
            ("sent_bytes", FlowField::Count(self.sent_bytes)),
            ("delivered_bytes", FlowField::Count(self.delivered_bytes)),
            ("throughput_mbps", FlowField::Real(self.throughput_mbps)),
            ("latency_mean_ms", FlowField::MaybeReal(self.latency_mean_ms)),
            ("latency_p50_ms", FlowField::MaybeReal(self.latency_p50_ms)),
            ("latency_p95_ms", FlowField::MaybeReal(self.latency_p95_ms)),
            ("latency_p99_ms", FlowField::MaybeReal(self.latency_p99_ms)),
            ("latency_p999_ms", FlowField::MaybeReal(self.latency_p999_ms)),
            ("latency_max_ms", FlowField::MaybeReal(self.latency_max_ms)),
            ("rtt_p50_ms", FlowField::MaybeReal(self.rtt_p50_ms)),
            ("rtt_p95_ms", FlowField::MaybeReal(self.rtt_p95_ms)),
            ("rtt_p99_ms", FlowField::MaybeReal(self.rtt_p99_ms)),
            ("rtt_over_200ms_ratio", FlowField::MaybeReal(self.rtt_over_200ms_ratio)),
            ("loss_runs5_per_s", FlowField::MaybeReal(self.loss_runs5_per_s)),
            ("goodput_mbps", FlowField::MaybeReal(self.goodput_mbps)),
            ("bitrate_mbps", FlowField::MaybeReal(self.bitrate_mbps)),
            ("frames_decoded", FlowField::MaybeCount(self.frames_decoded)),
            ("frames_dropped", FlowField::MaybeCount(self.frames_dropped)),
            ("frame_latency_p50_ms", FlowField::MaybeReal(self.frame_latency_p50_ms)),
            ("frame_latency_p95_ms", FlowField::MaybeReal(self.frame_latency_p95_ms)),
            ("frame_latency_p99_ms", FlowField::MaybeReal(self.frame_latency_p99_ms)),
            ("frame_latency_p999_ms", FlowField::MaybeReal(self.frame_latency_p999_ms)),
            ("frame_deadline_miss_rate", FlowField::MaybeReal(self.frame_deadline_miss_rate)),
            ("freezes", FlowField::MaybeCount(self.freezes)),
            ("freezes_per_min", FlowField::MaybeReal(self.freezes_per_min)),
            ("frozen_ratio", FlowField::MaybeReal(self.frozen_ratio)),
            ("fps_mean", FlowField::MaybeReal(self.fps_mean)),
            ("fps_under_10_ratio", FlowField::MaybeReal(self.fps_under_10_ratio)),
            ("percentiles_exact", FlowField::Flag(self.percentiles_exact)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 99.9), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn loss_runs_count_each_run_once() {
        let runs = |seqs: &[u64]| {
            let mut set = SeqSet::default();
            seqs.iter().for_each(|&s| set.insert(s));
            set.runs_at_least(5)
        };
        assert_eq!(runs(&[]), 0);
        assert_eq!(runs(&[1, 2, 3, 4]), 0);
        assert_eq!(runs(&[1, 2, 3, 4, 5]), 1);
        assert_eq!(runs(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), 1);
        assert_eq!(runs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 20]), 2);
        // In any order and repeated (as a list: fewer than 64 numbers).
        assert_eq!(runs(&[5, 3, 4, 1, 2, 4, 2]), 1);
        assert_eq!(runs(&[66, 62, 65, 63, 64, 127, 200]), 1);
        // As bits (64 numbers and more), across words: a run from 62 to 66 among numbers spread out, a
        // word of all ones, every sixth number missing.
        assert_eq!(runs(&[66, 62, 65, 63, 64].into_iter().chain((0..80).map(|i| 100 + 3 * i)).collect::<Vec<_>>()), 1);
        assert_eq!(runs(&(256..320).rev().chain(300..330).collect::<Vec<_>>()), 1);
        assert_eq!(runs(&(0..1000).filter(|s| s % 6 != 5).collect::<Vec<_>>()), 166); // 0–4, 6–10, …, 990–994; 996–999 is four long
    }

    /// Against the definition: sorted, deduplicated, runs of consecutive numbers of length ≥ 5.
    #[test]
    fn loss_runs_match_a_sort() {
        let mut rng = crate::rng::Rng::derive(7, "seqset");
        for _ in 0..50 {
            let seqs: Vec<u64> = (0..300).map(|_| (rng.unit() * 400.0) as u64).collect();
            let mut sorted = seqs.clone();
            sorted.sort_unstable();
            sorted.dedup();
            let mut expected = 0;
            let mut len = 0;
            for (i, &s) in sorted.iter().enumerate() {
                len = if i > 0 && sorted[i - 1] + 1 == s { len + 1 } else { 1 };
                expected += (len == 5) as u64;
            }
            let mut set = SeqSet::default();
            seqs.iter().for_each(|&s| set.insert(s));
            assert!(matches!(set, SeqSet::Bits(_)), "300 numbers below 400 take fewer bits than a list");
            assert_eq!(set.runs_at_least(5), expected, "{seqs:?}");
        }
        // Sparse numbers (one in a hundred) stay a list, whose runs are the same.
        let seqs: Vec<u64> = (0..500).map(|i| i * 100).chain((7_000..7_010).rev()).chain([20_001, 20_002]).collect();
        let mut set = SeqSet::default();
        seqs.iter().for_each(|&s| set.insert(s));
        assert!(matches!(set, SeqSet::List(..)), "511 numbers up to 49,900 as a list");
        assert_eq!(set.runs_at_least(5), 1);
    }

    #[test]
    fn fields_name_every_serialized_field_in_order() {
        let row = FlowSummary { flow: "f".into(), frames_decoded: Some(3), latency_p50_ms: Some(1.5), ..Default::default() };
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(row.fields().len(), json.as_object().unwrap().len());
        // serde_json's map sorts its keys: the order is read from the text, where each key appears once.
        let text = serde_json::to_string(&row).unwrap();
        let at: Vec<usize> = row.fields().iter().map(|(n, _)| text.find(&format!("\"{n}\":")).expect("a field")).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "fields out of order: {at:?}");
        for (name, value) in row.fields() {
            let expected = match value {
                FlowField::Text(s) => serde_json::Value::from(s),
                FlowField::Count(x) => x.into(),
                FlowField::Real(x) => x.into(),
                FlowField::MaybeCount(x) => x.into(),
                FlowField::MaybeReal(x) => x.into(),
                FlowField::Flag(x) => x.into(),
            };
            assert_eq!(json[name], expected, "{name}");
        }
    }
}
