//! Initial exponential probing (libwebrtc `ProbeController` and `ProbeBitrateEstimator`).
//!
//! **Controller.** At start it asks the pacer for two probe clusters at 3× and 6× the start bitrate and
//! waits for results; whenever the target then exceeds 0.7 × the last probe rate, it probes again at
//! 2× the target. Probing ends when a result falls short of that, when a probe would exceed the
//! configured maximum (the probe is capped and is the last), or 1 s after the last probe was started.
//! A cluster lasts at least 15 ms at its rate and at least 5 packets. Not modelled: ALR probing,
//! mid-call probing on a raised maximum, probing after large drops.
//!
//! **Estimator.** Per cluster, from the feedback of its packets: once ≥ 80 % of its minimum packets and
//! bytes are acknowledged, `send = (bytes − last sent) / send span`, `receive = (bytes − first received)
//! / receive span` (spans in (0, 1 s]); a receive/send ratio above 2 is invalid; the result is
//! `min(send, receive)`, or `0.95 × receive` when receive < 0.9 × send (the link is saturated). GCC sets
//! the delay-based and loss-based estimates to the result unless the detector is over-using. Times are
//! exact (libwebrtc rounds them to ms).

use crate::rtc::pacer::ProbeCluster;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use std::collections::BTreeMap;

const FIRST_SCALE: f64 = 3.0;
const SECOND_SCALE: f64 = 6.0;
const FURTHER_SCALE: f64 = 2.0;
const FURTHER_THRESHOLD: f64 = 0.7;
const MIN_PACKETS: u32 = 5;
const MIN_DURATION: SimDuration = SimDuration::from_ms(15);
const MAX_WAIT: SimDuration = SimDuration::from_secs(1);
const MIN_RECEIVED_PERCENT: u64 = 80;
const MAX_VALID_RATIO: f64 = 2.0;
const MIN_RATIO_UNSATURATED: f64 = 0.9;
const TARGET_UTILIZATION: f64 = 0.95;
const MAX_INTERVAL: SimDuration = SimDuration::from_secs(1);
const CLUSTER_HISTORY: SimDuration = SimDuration::from_secs(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Init,
    Waiting,
    Complete,
}

/// Decides when to probe and at which rates.
#[derive(Clone, Debug)]
pub struct ProbeController {
    state: State,
    start_bps: f64,
    max_bps: f64,
    min_to_probe_further: Option<f64>,
    last_initiated: Option<SimTime>,
    next_id: u32,
}

impl ProbeController {
    pub fn new(start_bps: f64, max_bps: f64) -> Self {
        ProbeController { state: State::Init, start_bps, max_bps, min_to_probe_further: None, last_initiated: None, next_id: 0 }
    }

    /// The initial 3× and 6× clusters (once).
    pub fn initial(&mut self, now: SimTime) -> Vec<ProbeCluster> {
        if self.state != State::Init {
            return vec![];
        }
        self.initiate(now, &[FIRST_SCALE * self.start_bps, SECOND_SCALE * self.start_bps], true)
    }

    /// A new target: probe further if it beat the threshold of the last probe.
    pub fn on_estimate(&mut self, now: SimTime, bps: f64) -> Vec<ProbeCluster> {
        self.process(now);
        match self.min_to_probe_further {
            Some(min) if self.state == State::Waiting && bps > min => self.initiate(now, &[FURTHER_SCALE * bps], true),
            _ => vec![],
        }
    }

    /// Gives up waiting 1 s after the last probe was started.
    pub fn process(&mut self, now: SimTime) {
        if self.state == State::Waiting && self.last_initiated.is_some_and(|t| now.saturating_since(t) > MAX_WAIT) {
            self.state = State::Complete;
            self.min_to_probe_further = None;
        }
    }

    fn initiate(&mut self, now: SimTime, rates: &[f64], mut further: bool) -> Vec<ProbeCluster> {
        let clusters = rates
            .iter()
            .map(|&r| {
                if r > self.max_bps {
                    further = false;
                }
                let rate = BitRate::from_bps(r.min(self.max_bps).round() as u64);
                let id = self.next_id;
                self.next_id += 1;
                let min_bytes = (rate.bps() as u128 * MIN_DURATION.as_ns() as u128 / 8 / 1_000_000_000) as u64;
                ProbeCluster { id, rate, min_bytes, min_packets: MIN_PACKETS }
            })
            .collect();
        self.last_initiated = Some(now);
        if further {
            self.state = State::Waiting;
            self.min_to_probe_further = rates.last().map(|r| r * FURTHER_THRESHOLD);
        } else {
            self.state = State::Complete;
            self.min_to_probe_further = None;
        }
        clusters
    }

    /// Still waiting for probe results.
    pub fn probing(&self) -> bool {
        self.state == State::Waiting
    }
}

#[derive(Clone, Copy, Debug)]
struct Aggregate {
    first_send: SimTime,
    last_send: SimTime,
    size_last_send: u64,
    first_receive: SimTime,
    last_receive: SimTime,
    size_first_receive: u64,
    size_total: u64,
    packets: u64,
}

/// Turns the feedback of probe packets into bitrate estimates.
#[derive(Clone, Debug, Default)]
pub struct ProbeEstimator {
    clusters: BTreeMap<u32, Aggregate>,
    estimate: Option<f64>,
}

impl ProbeEstimator {
    /// One acknowledged packet of `cluster`; returns the cluster's estimate once it is valid.
    pub fn on_packet(&mut self, cluster: &ProbeCluster, send: SimTime, arrival: SimTime, size: u64) -> Option<f64> {
        let horizon = arrival.as_ns().saturating_sub(CLUSTER_HISTORY.as_ns());
        self.clusters.retain(|_, c| c.last_receive.as_ns() >= horizon);
        let c = self.clusters.entry(cluster.id).or_insert(Aggregate {
            first_send: send,
            last_send: send,
            size_last_send: size,
            first_receive: arrival,
            last_receive: arrival,
            size_first_receive: size,
            size_total: 0,
            packets: 0,
        });
        if send < c.first_send {
            c.first_send = send;
        }
        if send > c.last_send {
            (c.last_send, c.size_last_send) = (send, size);
        }
        if arrival < c.first_receive {
            (c.first_receive, c.size_first_receive) = (arrival, size);
        }
        c.last_receive = c.last_receive.max(arrival);
        c.size_total += size;
        c.packets += 1;
        let enough_packets = c.packets * 100 >= cluster.min_packets as u64 * MIN_RECEIVED_PERCENT;
        let enough_bytes = c.size_total * 100 >= cluster.min_bytes * MIN_RECEIVED_PERCENT;
        if !(enough_packets && enough_bytes) {
            return None;
        }
        let est = estimate(c)?;
        self.estimate = Some(est);
        Some(est)
    }

    /// The latest estimate since the last call, if any.
    pub fn take_estimate(&mut self) -> Option<f64> {
        self.estimate.take()
    }
}

fn estimate(c: &Aggregate) -> Option<f64> {
    let send_span = c.last_send.saturating_since(c.first_send);
    let recv_span = c.last_receive.saturating_since(c.first_receive);
    let valid = |s: SimDuration| !s.is_zero() && s <= MAX_INTERVAL;
    if !valid(send_span) || !valid(recv_span) {
        return None;
    }
    let send_bps = (c.size_total - c.size_last_send) as f64 * 8.0 / send_span.as_secs_f64();
    let recv_bps = (c.size_total - c.size_first_receive) as f64 * 8.0 / recv_span.as_secs_f64();
    if recv_bps / send_bps > MAX_VALID_RATIO {
        return None;
    }
    if recv_bps < MIN_RATIO_UNSATURATED * send_bps {
        Some(TARGET_UTILIZATION * recv_bps)
    } else {
        Some(send_bps.min(recv_bps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime::from_ms(x)
    }

    #[test]
    fn initial_probes_then_exponential_while_results_beat_seventy_percent() {
        let mut c = ProbeController::new(300e3, 100e6);
        let first = c.initial(ms(0));
        let rates: Vec<u64> = first.iter().map(|p| p.rate.bps()).collect();
        assert_eq!(rates, vec![900_000, 1_800_000]);
        // 1.8 Mbit/s for 15 ms = 3375 B.
        assert_eq!((first[1].min_bytes, first[1].min_packets, first[1].id), (3_375, 5, 1));
        assert!(c.initial(ms(1)).is_empty());
        // 1.2 Mbit/s is not above 0.7 × 1.8: no further probe yet; 1.7 Mbit/s is.
        assert!(c.on_estimate(ms(150), 1.2e6).is_empty());
        let next = c.on_estimate(ms(200), 1.7e6);
        assert_eq!(next.iter().map(|p| (p.id, p.rate.bps())).collect::<Vec<_>>(), vec![(2, 3_400_000)]);
        // No result for more than a second: probing is over.
        assert!(c.on_estimate(ms(1_201), 3.3e6).is_empty());
        assert!(!c.probing());
    }

    #[test]
    fn a_probe_above_the_maximum_is_capped_and_last() {
        let mut c = ProbeController::new(1e6, 4e6);
        let rates: Vec<u64> = c.initial(ms(0)).iter().map(|p| p.rate.bps()).collect();
        assert_eq!(rates, vec![3_000_000, 4_000_000]);
        assert!(!c.probing());
    }

    fn cluster() -> ProbeCluster {
        ProbeCluster { id: 3, rate: BitRate::from_mbps(8), min_bytes: 15_000, min_packets: 5 }
    }

    #[test]
    fn estimate_is_the_lower_of_send_and_receive_rates() {
        // 12 packets of 1250 B sent 1.25 ms apart (8 Mbit/s), received 1.25 ms apart too.
        let mut e = ProbeEstimator::default();
        let mut last = None;
        for i in 0..12u64 {
            last = e.on_packet(&cluster(), SimTime::from_us(1_250 * i), SimTime::from_us(20_000 + 1_250 * i), 1_250);
            if i < 9 {
                assert_eq!(last, None, "needs 80 % of 15 000 B");
            }
        }
        assert!((last.unwrap() - 8e6).abs() < 1.0);
        assert_eq!(e.take_estimate().map(|x| x.round()), Some(8e6));
        assert_eq!(e.take_estimate(), None);
    }

    #[test]
    fn a_saturated_link_gives_95_percent_of_the_receive_rate() {
        // Sent at 8 Mbit/s, received 2.5 ms apart (4 Mbit/s).
        let mut e = ProbeEstimator::default();
        let mut last = None;
        for i in 0..12u64 {
            last = e.on_packet(&cluster(), SimTime::from_us(1_250 * i), SimTime::from_us(20_000 + 2_500 * i), 1_250);
        }
        assert!((last.unwrap() - 0.95 * 4e6).abs() < 1.0);
    }
}
