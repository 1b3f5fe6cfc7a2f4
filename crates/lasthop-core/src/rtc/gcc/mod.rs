//! Google Congestion Control as libwebrtc's `goog_cc` runs it on TWCC feedback (baselines.md §4.1;
//! draft-ietf-rmcat-gcc-02 for the design).
//!
//! ```text
//!  on_packet_sent ──▶ send history (seq → send time, size; 60 s)
//!                               │
//!  on_feedback(TWCC) ──match──▶ results (send time, size, arrival | lost), first report of each packet
//!      ├─▶ RTT: mean over the last 32 reports of max(now − send time)          ──▶ AIMD, loss controller
//!      ├─▶ acknowledged bitrate (500/150 ms windows, Bayesian smoothing)       [ack_rate]
//!      ├─▶ inter-arrival groups (5 ms) ─▶ trendline + over-use detector        [inter_arrival, trendline]
//!      │        └─▶ AIMD (0.85 × acked on over-use, 8 %/s or additive up)      [aimd]      = delay-based A
//!      ├─▶ loss fraction ─▶ loss controller (≤ 2 % up, > 10 % down), capped by A [loss]     = target
//!      └─▶ probe packets ─▶ probe estimate ─▶ sets A and the target; more probes    [probe]
//!  poll_probes ──▶ probe clusters for the pacer (3×, 6× start, then 2× while results keep up)
//! ```
//!
//! The flow follows `GoogCcNetworkController::OnTransportPacketsFeedback` and
//! `DelayBasedBwe::MaybeUpdateEstimate`: packets are fed to the delay estimator in arrival order; the
//! stream state resets after 2 s without feedback; on over-use the AIMD is only consulted when
//! [`aimd::Aimd::time_to_reduce_further`] allows, and while no acknowledged bitrate exists yet an
//! over-use halves the estimate (at most once per RTT, clamped to [10, 200] ms). A report whose packets
//! were all lost leaves the delay-based part alone. The target handed to the encoder and pacer is the
//! loss controller's output, which is capped by the delay-based estimate.
//!
//! Behaviour worth knowing (seen in `sim_tests.rs`, 20 Mbit/s, 40 ms RTT): probing finds 15–18 Mbit/s
//! within half a second, but the encoder's jump to that rate often trips the first over-use, and the cut
//! is to 0.85 × the acknowledged bitrate, whose filter still lags (a sample 10× off the estimate gets a
//! few per cent weight); the target then sits near 5 Mbit/s and climbs at 8 %/s. This is the source's
//! logic, not a modelling shortcut.
//!
//! Choices where libwebrtc differs or is silent:
//! * **Loss counts** come from the TWCC reports themselves (libwebrtc v1 takes them from RTCP receiver
//!   reports): each packet counts once, when first reported; a packet reported lost and later received
//!   is taken back out of the loss count.
//! * **Start, floor, ceiling.** Start 300 kbit/s (libwebrtc `kDefaultStartBitrateBps`), floor 5 kbit/s
//!   (`congestion_controller::GetMinBitrate`), ceiling 100 Mbit/s (the Zhuge artifact's; libwebrtc's
//!   loss controller defaults to 1 Gbit/s, and an application normally caps lower).
//! * **Probing** is the initial exponential probing only ([`probe`]); with `probing = false` the ramp
//!   from the start rate is the AIMD's 8 %/s (the Zhuge artifact has no probing). Probes are capped at
//!   `max_kbps` (libwebrtc caps at the configured maximum, 5 Mbit/s when none is set).
//! * **Not modelled:** application-limited regions (ALR) and ALR probing, the congestion window
//!   pushback, loss-based v2, RTT back-off, separate audio detection, and the draft-02 Kalman variant.
//!   The Zhuge port's 10 ms grouping is `group_length_ms = 10`.

pub mod ack_rate;
pub mod aimd;
pub mod inter_arrival;
pub mod loss;
pub mod probe;
pub mod trendline;

#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;

pub use aimd::RateControlState;
pub use trendline::BandwidthUsage;

use super::pacer::ProbeCluster;
use super::rtp::RtpPacket;
use super::twcc::TwccFeedback;
use super::{check, RtcParamError};
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use ack_rate::AckedBitrate;
use aimd::Aimd;
use inter_arrival::InterArrival;
use loss::LossBased;
use probe::{ProbeController, ProbeEstimator};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use trendline::{Trendline, TrendlineConfig};

const STREAM_TIMEOUT: SimDuration = SimDuration::from_secs(2);
const SEND_HISTORY: SimDuration = SimDuration::from_secs(60);
const RTT_REPORTS: usize = 32;

/// `cc = { type = "gcc", start_kbps = 300, max_kbps = 10000 }`-style parameters; every field is
/// optional and defaults to libwebrtc's value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GccParams {
    /// Start bitrate, kbit/s. Default 300 (libwebrtc `kDefaultStartBitrateBps`).
    pub start_kbps: u64,
    /// Floor, kbit/s. Default 5 (libwebrtc `congestion_controller::GetMinBitrate`).
    pub min_kbps: u64,
    /// Ceiling, kbit/s. Default 100 000 (the Zhuge artifact's bound).
    pub max_kbps: u64,
    /// Send-time group length, ms. Default 5 (`kSendTimeGroupLength`; the Zhuge port uses 10).
    pub group_length_ms: u32,
    /// Trendline window, samples. Default 20 (`kDefaultTrendlineWindowSize`).
    pub trendline_window: u32,
    /// Smoothing of the accumulated delay. Default 0.9 (`kDefaultTrendlineSmoothingCoeff`).
    pub trendline_smoothing: f64,
    /// Gain applied to the slope. Default 4 (`kDefaultTrendlineThresholdGain`).
    pub trendline_gain: f64,
    /// Threshold gain when |m| ≥ γ. Default 0.0087.
    pub k_up: f64,
    /// Threshold gain when |m| < γ. Default 0.039.
    pub k_down: f64,
    /// Initial over-use threshold γ, ms. Default 12.5.
    pub initial_threshold_ms: f64,
    /// Time over the threshold before over-use is declared, ms. Default 10 (`kOverUsingTimeThreshold`).
    pub overuse_time_ms: f64,
    /// Multiplicative decrease on over-use. Default 0.85 (`kDefaultBackoffFactor`).
    pub backoff: f64,
    /// Run the loss-based controller (off reproduces the Zhuge artifact, where it is disabled).
    /// Default true.
    pub loss_based: bool,
    /// Initial exponential probing (libwebrtc `ProbeController`). Default true.
    pub probing: bool,
    /// Loss fraction at or below which the loss controller increases. Default 0.02.
    pub low_loss: f64,
    /// Loss fraction above which it decreases. Default 0.10.
    pub high_loss: f64,
}

impl Default for GccParams {
    fn default() -> Self {
        GccParams {
            start_kbps: 300,
            min_kbps: 5,
            max_kbps: 100_000,
            group_length_ms: 5,
            trendline_window: 20,
            trendline_smoothing: 0.9,
            trendline_gain: 4.0,
            k_up: 0.0087,
            k_down: 0.039,
            initial_threshold_ms: 12.5,
            overuse_time_ms: 10.0,
            backoff: 0.85,
            loss_based: true,
            probing: true,
            low_loss: 0.02,
            high_loss: 0.10,
        }
    }
}

impl GccParams {
    pub fn validate(&self) -> Result<(), RtcParamError> {
        check(self.min_kbps > 0, "min_kbps", "must be > 0")?;
        check(self.max_kbps >= self.min_kbps, "max_kbps", "must be >= min_kbps")?;
        check(self.trendline_window >= 2, "trendline_window", "must be >= 2")?;
        check((0.0..1.0).contains(&self.trendline_smoothing), "trendline_smoothing", "must be in [0, 1)")?;
        check(self.backoff > 0.0 && self.backoff < 1.0, "backoff", "must be in (0, 1)")?;
        check(self.low_loss <= self.high_loss, "low_loss", "must be <= high_loss")
    }

    fn trendline(&self) -> TrendlineConfig {
        TrendlineConfig {
            window: self.trendline_window as usize,
            smoothing: self.trendline_smoothing,
            gain: self.trendline_gain,
            k_up: self.k_up,
            k_down: self.k_down,
            initial_threshold_ms: self.initial_threshold_ms,
            overuse_time_ms: self.overuse_time_ms,
        }
    }
}

/// A packet as the sender saw it leave (transport seq from the pacer, wire size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    pub transport_seq: u64,
    pub send_time: SimTime,
    pub size_bytes: u64,
    /// The probe cluster it was sent in.
    pub probe_cluster: Option<u32>,
}

impl SentPacket {
    /// The record of a packet the pacer just released at `send_time`.
    pub fn of(p: &RtpPacket, send_time: SimTime) -> Self {
        SentPacket {
            transport_seq: p.transport_seq.expect("sent packets have a transport seq"),
            send_time,
            size_bytes: p.wire_bytes(),
            probe_cluster: p.probe_cluster,
        }
    }
}

/// A sent packet joined with its feedback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketResult {
    pub transport_seq: u64,
    pub send_time: SimTime,
    pub size_bytes: u64,
    /// Arrival in the receiver's clock; `None` when reported lost.
    pub arrival: Option<SimTime>,
    pub probe_cluster: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Unreported,
    Lost,
    Received,
}

#[derive(Clone, Copy, Debug)]
struct Record {
    send_time: SimTime,
    size: u64,
    status: Status,
    probe: Option<u32>,
}

/// Counters of a GCC instance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GccStats {
    pub feedback_messages: u64,
    pub packets_acked: u64,
    pub packets_lost: u64,
    /// Statuses for sequence numbers not in the send history (or already resolved).
    pub statuses_ignored: u64,
    /// Transitions of the detector into over-use.
    pub overuse_events: u64,
    /// Delay-based decreases (AIMD or halving).
    pub delay_decreases: u64,
    pub probe_clusters: u64,
    /// Probe results applied to the estimate.
    pub probe_results: u64,
}

/// One GCC sender-side controller.
#[derive(Clone, Debug)]
pub struct Gcc {
    params: GccParams,
    history: crate::seqmap::SeqMap<Record>,
    inter_arrival: InterArrival,
    trendline: Trendline,
    aimd: Aimd,
    acked: AckedBitrate,
    loss: LossBased,
    probe_ctrl: ProbeController,
    probe_est: ProbeEstimator,
    /// Clusters created (by id), for their minimum sizes.
    clusters: BTreeMap<u32, ProbeCluster>,
    pending_probes: Vec<ProbeCluster>,
    started: bool,
    last_feedback: Option<SimTime>,
    rtts_ms: VecDeque<f64>,
    stats: GccStats,
}

impl Gcc {
    pub fn new(params: GccParams) -> Self {
        debug_assert!(params.validate().is_ok());
        let (start, min, max) = (params.start_kbps as f64 * 1e3, params.min_kbps as f64 * 1e3, params.max_kbps as f64 * 1e3);
        Gcc {
            inter_arrival: InterArrival::new(SimDuration::from_ms(params.group_length_ms as u64)),
            trendline: Trendline::new(params.trendline()),
            aimd: Aimd::new(start, min, params.backoff),
            acked: AckedBitrate::default(),
            loss: LossBased::new(start, min, max, params.low_loss, params.high_loss),
            probe_ctrl: ProbeController::new(start, max),
            probe_est: ProbeEstimator::default(),
            clusters: BTreeMap::new(),
            pending_probes: vec![],
            started: false,
            history: crate::seqmap::SeqMap::new(),
            last_feedback: None,
            rtts_ms: VecDeque::with_capacity(RTT_REPORTS),
            stats: GccStats::default(),
            params,
        }
    }

    /// Records a packet the pacer sent.
    pub fn on_packet_sent(&mut self, p: SentPacket) {
        let rec = Record { send_time: p.send_time, size: p.size_bytes, status: Status::Unreported, probe: p.probe_cluster };
        self.history.insert(p.transport_seq, rec);
        while self.history.first().is_some_and(|(_, r)| p.send_time.saturating_since(r.send_time) > SEND_HISTORY) {
            self.history.pop_first();
        }
    }

    /// Processes one feedback message received at `now`; returns the new target.
    pub fn on_feedback(&mut self, now: SimTime, fb: &TwccFeedback) -> BitRate {
        self.stats.feedback_messages += 1;
        let (results, lost, expected) = self.match_feedback(fb);
        self.on_results(now, &results, lost, expected);
        self.target_rate()
    }

    /// Joins a message's statuses with the send history; each packet counts once (a late arrival of a
    /// packet reported lost counts as −1 lost).
    fn match_feedback(&mut self, fb: &TwccFeedback) -> (Vec<PacketResult>, i64, u64) {
        let (mut results, mut lost, mut expected) = (vec![], 0i64, 0u64);
        for st in fb.packets() {
            let Some(rec) = self.history.get_mut(st.seq) else {
                self.stats.statuses_ignored += 1;
                continue;
            };
            match (rec.status, st.arrival) {
                (Status::Received, _) | (Status::Lost, None) => {
                    self.stats.statuses_ignored += 1;
                    continue;
                }
                (Status::Unreported, None) => (lost, expected) = (lost + 1, expected + 1),
                (Status::Unreported, Some(_)) => expected += 1,
                (Status::Lost, Some(_)) => lost -= 1,
            }
            rec.status = if st.arrival.is_some() { Status::Received } else { Status::Lost };
            results.push(PacketResult {
                transport_seq: st.seq,
                send_time: rec.send_time,
                size_bytes: rec.size,
                arrival: st.arrival,
                probe_cluster: rec.probe,
            });
        }
        (results, lost, expected)
    }

    /// The controller's reaction to resolved packets (public so tests and other feedback formats can
    /// drive it directly). `lost` of `expected` feed the loss controller.
    pub fn on_results(&mut self, now: SimTime, results: &[PacketResult], lost: i64, expected: u64) {
        let mut received: Vec<&PacketResult> = results.iter().filter(|r| r.arrival.is_some()).collect();
        received.sort_by_key(|r| (r.arrival, r.transport_seq));
        self.stats.packets_acked += received.len() as u64;
        self.stats.packets_lost = self.stats.packets_lost.saturating_add_signed(lost);
        let before = self.target_rate();
        if !received.is_empty() {
            self.update_rtt(now, &received);
            for r in &received {
                let arrival = r.arrival.expect("received");
                self.acked.update(round_ms(arrival), r.size_bytes);
                if let Some(c) = r.probe_cluster.and_then(|id| self.clusters.get(&id)) {
                    self.probe_est.on_packet(c, r.send_time, arrival, r.size_bytes);
                }
            }
            self.update_delay_based(now, &received);
        }
        if self.params.loss_based {
            self.loss.update_packets_lost(now, lost, expected);
            self.loss.update_estimate(now);
        }
        let target = self.target_rate();
        if self.params.probing && target != before {
            let more = self.probe_ctrl.on_estimate(now, target.bps() as f64);
            self.add_probes(more);
        }
    }

    /// Probe clusters for the pacer: the initial ones on the first call, then any the controller asked
    /// for since (call after every feedback, or at start).
    pub fn poll_probes(&mut self, now: SimTime) -> Vec<ProbeCluster> {
        if self.params.probing && !self.started {
            self.started = true;
            let first = self.probe_ctrl.initial(now);
            self.add_probes(first);
        }
        self.probe_ctrl.process(now);
        std::mem::take(&mut self.pending_probes)
    }

    fn add_probes(&mut self, clusters: Vec<ProbeCluster>) {
        for c in clusters {
            self.stats.probe_clusters += 1;
            self.clusters.insert(c.id, c);
            self.pending_probes.push(c);
        }
    }

    fn update_rtt(&mut self, now: SimTime, received: &[&PacketResult]) {
        let max = received.iter().map(|r| now.saturating_since(r.send_time)).max().expect("non-empty");
        if self.rtts_ms.len() == RTT_REPORTS {
            self.rtts_ms.pop_front();
        }
        self.rtts_ms.push_back(max.as_ms_f64());
        let rtt = self.rtt().expect("just pushed");
        self.aimd.set_rtt(rtt);
        self.loss.set_rtt(rtt);
    }

    fn update_delay_based(&mut self, now: SimTime, received: &[&PacketResult]) {
        if self.last_feedback.is_none_or(|t| now.saturating_since(t) > STREAM_TIMEOUT) {
            self.inter_arrival = InterArrival::new(SimDuration::from_ms(self.params.group_length_ms as u64));
            self.trendline = Trendline::new(self.params.trendline());
        }
        self.last_feedback = Some(now);
        for r in received {
            let arrival = r.arrival.expect("received");
            let before = self.trendline.state();
            if let Some(d) = self.inter_arrival.compute(r.send_time, arrival, now, r.size_bytes) {
                self.trendline.update(d.arrival_ns as f64 / 1e6, d.send_ns as f64 / 1e6, round_ms(arrival) as f64);
            }
            let after = self.trendline.state();
            self.stats.overuse_events += (after == BandwidthUsage::Overusing && before != after) as u64;
        }
        self.maybe_update_estimate(now);
    }

    fn maybe_update_estimate(&mut self, now: SimTime) {
        let usage = self.trendline.state();
        let acked = self.acked.bitrate_bps();
        let before = self.aimd.estimate_bps();
        let probe = self.probe_est.take_estimate();
        if let (Some(p), false) = (probe, usage == BandwidthUsage::Overusing) {
            self.aimd.set_estimate(p, now);
            self.stats.probe_results += 1;
            self.loss.set_send_bitrate(self.aimd.estimate_bps());
            self.loss.update_delay_based(self.aimd.estimate_bps());
            return;
        }
        let updated = match (usage, acked) {
            (BandwidthUsage::Overusing, Some(a)) if self.aimd.time_to_reduce_further(now, a) => {
                self.aimd.update(usage, Some(a), now);
                true
            }
            (BandwidthUsage::Overusing, None) if self.aimd.time_to_reduce_further(now, before / 2.0 - 1.0) => {
                self.aimd.set_estimate(before / 2.0, now);
                true
            }
            (BandwidthUsage::Overusing, _) => false,
            _ => {
                self.aimd.update(usage, acked, now);
                true
            }
        };
        self.stats.delay_decreases += (self.aimd.estimate_bps() < before) as u64;
        if updated {
            self.loss.update_delay_based(self.aimd.estimate_bps());
        }
    }

    /// The target bitrate for the encoder (before FEC/RTX overhead) and the pacer.
    pub fn target_rate(&self) -> BitRate {
        let bps = if self.params.loss_based {
            self.loss.target_bps()
        } else {
            let (min, max) = (self.params.min_kbps as f64 * 1e3, self.params.max_kbps as f64 * 1e3);
            self.aimd.estimate_bps().clamp(min, max)
        };
        BitRate::from_bps(bps.round() as u64)
    }

    /// The delay-based estimate alone.
    pub fn delay_based_rate(&self) -> BitRate {
        BitRate::from_bps(self.aimd.estimate_bps().round() as u64)
    }

    /// The acknowledged bitrate, once known.
    pub fn acked_rate(&self) -> Option<BitRate> {
        self.acked.bitrate()
    }

    /// Mean of the last 32 reports' largest feedback RTT (send → feedback processed).
    pub fn rtt(&self) -> Option<SimDuration> {
        let n = self.rtts_ms.len();
        (n > 0).then(|| SimDuration::from_secs_f64(self.rtts_ms.iter().sum::<f64>() / n as f64 / 1e3).unwrap_or_default())
    }

    pub fn detector_state(&self) -> BandwidthUsage {
        self.trendline.state()
    }

    pub fn rate_control_state(&self) -> RateControlState {
        self.aimd.state()
    }

    /// Loss fraction of the last loss report, 0..=1.
    pub fn loss_fraction(&self) -> f64 {
        self.loss.fraction_q8() as f64 / 256.0
    }

    /// The detector's adaptive threshold and last modified trend (for traces).
    pub fn trend(&self) -> (f64, f64) {
        (self.trendline.threshold(), self.trendline.modified_trend())
    }

    pub fn params(&self) -> &GccParams {
        &self.params
    }

    pub fn stats(&self) -> GccStats {
        self.stats
    }
}

/// Whole milliseconds, rounded (libwebrtc `Timestamp::ms()`).
fn round_ms(t: SimTime) -> i64 {
    ((t.as_ns() + 500_000) / 1_000_000) as i64
}
