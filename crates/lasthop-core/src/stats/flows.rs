//! Per-flow counters and latency samples, summarised at the end of a run.

use crate::packet::Packet;
use crate::time::SimTime;
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
    /// One-way latency of every counted delivered packet, ns.
    pub latencies: Vec<u64>,
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
            latencies: Vec::new(),
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

    /// A packet that originated at `origin` was dropped.
    pub fn on_dropped(&mut self, origin: SimTime) {
        if origin >= self.measure_from {
            self.dropped_packets += 1;
        }
    }

    pub fn summarize(&mut self) -> FlowSummary {
        self.latencies.sort_unstable();
        let window = self.measure_to.saturating_since(self.measure_from).as_secs_f64();
        let ms = |q: f64| percentile(&self.latencies, q).map(|v| v as f64 * 1e-6);
        let mean = if self.latencies.is_empty() {
            None
        } else {
            Some(self.latencies.iter().map(|&v| v as f64).sum::<f64>() / self.latencies.len() as f64 * 1e-6)
        };
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
            latency_p50_ms: ms(50.0),
            latency_p95_ms: ms(95.0),
            latency_p99_ms: ms(99.0),
            latency_p999_ms: ms(99.9),
            latency_max_ms: self.latencies.last().map(|&v| v as f64 * 1e-6),
        }
    }
}

/// One row of `flows.parquet`.
#[derive(Debug, Clone, Serialize, PartialEq)]
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
}
