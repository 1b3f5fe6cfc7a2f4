//! The in-band Feedback Updater (zhuge.md §4): the AP answers for the client. It records, per
//! transport-wide sequence number of the flow's downlink RTP packets, the arrival time the Fortune
//! Teller forecasts at the client, builds transport-wide congestion-control feedback (RTCP RTPFB,
//! FMT = 15, [`crate::rtc::twcc`]) from those forecasts, and drops the client's own TWCC for the flow
//! so that the sender's GCC sees the queue before it is felt. Every other RTCP message (RR/SR, NACK,
//! PLI/FIR, REMB) and every other packet is forwarded untouched.
//!
//! # API and wiring
//!
//! ```text
//!   downlink RTP packet of the flow with a transport seq, at AP arrival, before the Fortune Teller's
//!   on_enqueue:                 rewriter.on_downlink_rtp(now, RtpArrival { seq, bytes, repair }, &mut ft)
//!   the AP drops one of them:   rewriter.on_ap_drop(now, seq)
//!   at rewriter.next_wakeup():  for fb in rewriter.poll_feedback(now, &mut ft) { send fb.encode() to the sender }
//!   uplink RTCP of the flow:    if rewriter.filter_uplink_rtcp(is_transport_cc) == UplinkVerdict::Drop { discard }
//! ```
//!
//! Sequence numbers are the unwrapped transport-wide counter (lasthop's `Hdr::Rtp::twcc`); the
//! messages carry them as 16-bit wire values and [`crate::rtc::twcc::TwccFeedback::parse`] unwraps
//! them again, so a flow crossing 65535 is reported without a gap. Arrival times are in the AP's
//! clock (`t_arrival + predicted delay`); the sender only uses their differences. The feedback packet
//! count is the AP's own, independent of the client's.
//!
//! # Emit policies ([`TwccEmit`])
//!
//! * `per_sample_1ms` (parity, §4.1): at most one sampled packet per ms. The first packet of the flow
//!   that arrives while no sample is pending becomes one; it is forecast 1 ms later with `extra` = the
//!   bytes admitted to the egress behind it in that millisecond, and reported alone (one status) at
//!   `t + 1 ms + D`, unless it is a repair (FEC) packet or not newer than the last reported one. The
//!   other packets are never reported (not as lost either: the message starts at the sample).
//! * `per_burst` (default, design): every packet is forecast at its arrival; once the flow has been
//!   quiet for `gap_us` (1 ms), everything recorded since the last message is reported. With a 1-Gbps
//!   wired link a frame's packets arrive within a fraction of a ms, so this is once per frame, as the
//!   code's reports effectively are.
//! * `interval` (design): the same records, reported every `interval_ms` like a receiver's TWCC.
//!
//! In the record-everything policies a message covers every sequence number from the first one not yet
//! reported to the newest recorded: packets the AP dropped ([`TwccRewriter::on_ap_drop`]) and packets
//! lost before the AP are "not received". A drop after the message went out cannot be retracted.
//! Nothing is recorded before the Fortune Teller's first tick (§2.7). Records are kept at most 1 s and
//! 2¹⁵ sequence numbers (§4.2); older unreported ones are skipped, not reported as lost.

use super::fortune_teller::FortuneTeller;
use super::{check, ParamError, Profile, UplinkVerdict};
use crate::rtc::twcc::{build_feedback, TwccFeedback, FMT_TRANSPORT_CC, RTPFB};
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

fn d_gap_us() -> u32 {
    1000
}

/// When the AP emits its feedback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TwccEmit {
    /// One sampled packet per ms, forecast and reported 1 ms after its arrival (the code).
    #[serde(rename = "per_sample_1ms")]
    PerSample1ms,
    /// After `gap_us` without arrivals of the flow (default 1000).
    PerBurst {
        #[serde(default = "d_gap_us")]
        gap_us: u32,
    },
    /// Every `interval_ms`.
    Interval { interval_ms: u32 },
}

/// `twcc_rewriter = { emit = { type = "per_burst" }, history_ms = 1000, max_seqs = 32768,
/// sender_ssrc = 0, media_ssrc = 0 }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TwccRewriterParams {
    /// Emit policy. Default `per_burst` with a 1-ms gap (§4.2 step 3).
    pub emit: TwccEmit,
    /// Longest time a record waits for its report, ms. Default 1000 (§4.2).
    pub history_ms: u32,
    /// Most sequence numbers a record may lag the newest. Default 32768 (2¹⁵, §4.2).
    pub max_seqs: u32,
    /// SSRC fields of the messages (lasthop's receivers use 0).
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    /// Keep forecast arrivals at least `bytes / estimated rate` apart, as the link can deliver them no
    /// faster. Without it, a sender outrunning the link behind an AQM that drops at dequeue is told
    /// its packets arrive as fast as it sends them (the reports go out before the drops): a flat delay
    /// and an acknowledged rate equal to the send rate, so GCC never backs off. Default true (a
    /// lasthop decision, not in the spec); `parity` sets false.
    pub drain_spacing: bool,
}

impl Default for TwccRewriterParams {
    fn default() -> Self {
        TwccRewriterParams {
            emit: TwccEmit::PerBurst { gap_us: d_gap_us() },
            history_ms: 1000,
            max_seqs: 1 << 15,
            sender_ssrc: 0,
            media_ssrc: 0,
            drain_spacing: true,
        }
    }
}

impl TwccRewriterParams {
    pub fn preset(profile: Profile) -> Self {
        match profile {
            Profile::Design => Self::default(),
            Profile::Parity => TwccRewriterParams { emit: TwccEmit::PerSample1ms, drain_spacing: false, ..Self::default() },
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        match self.emit {
            TwccEmit::PerSample1ms => Ok(()),
            TwccEmit::PerBurst { gap_us } => check(gap_us >= 1, "emit.gap_us", "must be at least 1"),
            TwccEmit::Interval { interval_ms } => check(interval_ms >= 1, "emit.interval_ms", "must be at least 1"),
        }?;
        check(self.history_ms >= 1, "history_ms", "must be at least 1")?;
        check(self.max_seqs >= 1, "max_seqs", "must be at least 1")
    }
}

/// A downlink RTP packet of the flow at the AP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpArrival {
    /// Transport-wide sequence number, unwrapped.
    pub seq: u64,
    /// Bytes on the wire.
    pub bytes: u32,
    /// A FEC repair packet (the code reports only data packets in `per_sample_1ms`).
    pub repair: bool,
}

/// Counters of the in-band Feedback Updater.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TwccRewriterStats {
    pub recorded: u64,
    /// Packets seen before the Fortune Teller's first tick, or not sampled (`per_sample_1ms`).
    pub not_recorded: u64,
    pub ap_drops: u64,
    /// Records older than the history skipped unreported.
    pub expired: u64,
    pub messages: u64,
    pub statuses: u64,
    pub client_feedback_dropped: u64,
    pub rtcp_forwarded: u64,
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    seq: u64,
    arrived: SimTime,
    /// `FortuneTeller::enqueued_bytes_total` once the sample itself is in.
    mark: u64,
    repair: bool,
}

/// The per-flow TWCC rewriter at the AP.
#[derive(Clone, Debug)]
pub struct TwccRewriter {
    params: TwccRewriterParams,
    /// Unreported records: seq → (arrival at the AP, forecast arrival at the client).
    table: BTreeMap<u64, (SimTime, SimTime)>,
    window_start: Option<u64>,
    last_arrival: Option<SimTime>,
    /// The latest forecast arrival at the client (for `drain_spacing`).
    last_forecast: Option<SimTime>,
    next_due: Option<SimTime>,
    pending: Option<Sample>,
    last_reported: Option<u64>,
    ready: Vec<(SimTime, TwccFeedback)>,
    feedback_count: u8,
    stats: TwccRewriterStats,
}

/// The 1-ms sampling period of `per_sample_1ms`.
const SAMPLE_DELAY: SimDuration = SimDuration::from_ms(1);

impl TwccRewriter {
    pub fn new(params: TwccRewriterParams) -> Self {
        debug_assert!(params.validate().is_ok());
        TwccRewriter {
            params,
            table: BTreeMap::new(),
            window_start: None,
            last_arrival: None,
            last_forecast: None,
            next_due: None,
            pending: None,
            last_reported: None,
            ready: vec![],
            feedback_count: 0,
            stats: TwccRewriterStats::default(),
        }
    }

    /// A downlink RTP packet of the flow reached the AP; call before the Fortune Teller's `on_enqueue`.
    pub fn on_downlink_rtp(&mut self, now: SimTime, pkt: RtpArrival, ft: &mut FortuneTeller) {
        if self.params.emit != TwccEmit::PerSample1ms {
            if ft.ticked(now) {
                let mut d = ft.predict(now, 0).total;
                if self.params.drain_spacing {
                    let rate = ft.estimate(now).rate_bps.max(1);
                    let gap = SimDuration::from_ns(pkt.bytes as u64 * 8 * 1_000_000_000 / rate);
                    if let Some(prev) = self.last_forecast {
                        d = d.max((prev + gap).saturating_since(now));
                    }
                    self.last_forecast = Some(now + d);
                }
                self.record_prediction(now, pkt.seq, d);
            } else {
                self.stats.not_recorded += 1;
            }
            return;
        }
        self.evaluate_sample(now, ft);
        if self.pending.is_some() {
            self.stats.not_recorded += 1;
            return;
        }
        let mark = ft.enqueued_bytes_total() + pkt.bytes as u64;
        self.pending = Some(Sample { seq: pkt.seq, arrived: now, mark, repair: pkt.repair });
    }

    /// Records that packet `seq`, at the AP at `now`, is forecast to reach the client `delay` later
    /// (the record-everything policies; [`on_downlink_rtp`](Self::on_downlink_rtp) calls it).
    pub fn record_prediction(&mut self, now: SimTime, seq: u64, delay: SimDuration) {
        self.stats.recorded += 1;
        self.table.insert(seq, (now, now + delay));
        if self.window_start.is_none_or(|w| seq < w) {
            self.window_start = Some(seq);
        }
        self.last_arrival = Some(now);
        if let TwccEmit::Interval { interval_ms } = self.params.emit {
            let iv = SimDuration::from_ms(interval_ms as u64);
            let due = self.next_due.get_or_insert(now + iv);
            if *due < now {
                let late = (now - *due).as_ns().div_ceil(iv.as_ns());
                *due += iv * late;
            }
        }
    }

    /// The AP dropped packet `seq` of the flow: it will be reported as not received (if a later packet
    /// is reported), and a pending sample is abandoned.
    pub fn on_ap_drop(&mut self, _now: SimTime, seq: u64) {
        self.stats.ap_drops += 1;
        self.table.remove(&seq);
        if self.pending.is_some_and(|s| s.seq == seq) {
            self.pending = None;
        }
    }

    /// When [`poll_feedback`](Self::poll_feedback) next has something to do.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        if let Some((t, _)) = self.ready.first() {
            return Some(*t);
        }
        match self.params.emit {
            TwccEmit::PerSample1ms => self.pending.map(|s| s.arrived + SAMPLE_DELAY),
            _ if self.table.is_empty() => None,
            TwccEmit::PerBurst { gap_us } => self.last_arrival.map(|t| t + SimDuration::from_us(gap_us as u64)),
            TwccEmit::Interval { .. } => self.next_due,
        }
    }

    /// The messages due at `now` (none before [`next_wakeup`](Self::next_wakeup)).
    pub fn poll_feedback(&mut self, now: SimTime, ft: &mut FortuneTeller) -> Vec<TwccFeedback> {
        self.evaluate_sample(now, ft);
        let mut out: Vec<TwccFeedback> = self.ready.drain(..).map(|(_, m)| m).collect();
        let due = match self.params.emit {
            TwccEmit::PerSample1ms => false,
            _ => self.next_wakeup().is_some_and(|t| t <= now),
        };
        if due {
            out.extend(self.build(now));
            if let TwccEmit::Interval { interval_ms } = self.params.emit {
                self.next_due = Some(now + SimDuration::from_ms(interval_ms as u64));
            }
        }
        for m in &mut out {
            m.sender_ssrc = self.params.sender_ssrc;
            m.media_ssrc = self.params.media_ssrc;
            self.stats.messages += 1;
            self.stats.statuses += m.status_count() as u64;
        }
        out
    }

    /// `per_sample_1ms`: forecasts the pending sample once its millisecond is over.
    fn evaluate_sample(&mut self, now: SimTime, ft: &mut FortuneTeller) {
        let Some(s) = self.pending else { return };
        if now < s.arrived + SAMPLE_DELAY {
            return;
        }
        self.pending = None;
        if !ft.ticked(now) || s.repair || self.last_reported.is_some_and(|l| s.seq <= l) {
            self.stats.not_recorded += 1;
            return;
        }
        let extra = ft.enqueued_bytes_total().saturating_sub(s.mark);
        let d = ft.predict(now, extra).total;
        self.stats.recorded += 1;
        let msgs = build_feedback(&[(s.seq, now + d)], Some(s.seq), &mut self.feedback_count);
        self.ready.extend(msgs.into_iter().map(|m| (now, m)));
        self.last_reported = Some(s.seq);
    }

    /// One report of everything recorded and not yet reported.
    fn build(&mut self, now: SimTime) -> Vec<TwccFeedback> {
        self.expire(now);
        let Some(start) = self.window_start else { return vec![] };
        let entries: Vec<(u64, SimTime)> = self.table.iter().map(|(&s, &(_, t))| (s, t)).collect();
        let msgs = build_feedback(&entries, Some(start), &mut self.feedback_count);
        if let Some(&(last, _)) = entries.last() {
            self.window_start = Some(last + 1);
            self.last_reported = Some(last);
        }
        self.table.clear();
        msgs
    }

    /// Skips records older than the history or more than `max_seqs` behind the newest.
    fn expire(&mut self, now: SimTime) {
        let horizon = SimTime::from_ns(now.as_ns().saturating_sub(self.params.history_ms as u64 * 1_000_000));
        let newest = self.table.keys().next_back().copied().unwrap_or(0);
        let min_seq = newest.saturating_sub(self.params.max_seqs as u64 - 1);
        while let Some((&seq, &(arrived, _))) = self.table.first_key_value() {
            if arrived >= horizon && seq >= min_seq {
                break;
            }
            self.table.remove(&seq);
            self.stats.expired += 1;
            self.window_start = Some(seq + 1);
        }
    }

    /// An RTCP packet of the flow travels from the client to the sender: the client's transport-wide
    /// feedback is dropped (the AP sends its own), everything else is forwarded (§4.2 step 4).
    pub fn filter_uplink_rtcp(&mut self, is_transport_cc: bool) -> UplinkVerdict {
        if is_transport_cc {
            self.stats.client_feedback_dropped += 1;
            UplinkVerdict::Drop
        } else {
            self.stats.rtcp_forwarded += 1;
            UplinkVerdict::Forward
        }
    }

    pub fn stats(&self) -> TwccRewriterStats {
        self.stats
    }
}

/// Whether an RTCP packet (its first header) is transport-wide congestion-control feedback: version 2,
/// packet type RTPFB (205), FMT 15. For an AP that sees wire bytes (the emulator).
pub fn is_transport_cc(rtcp: &[u8]) -> bool {
    rtcp.len() >= 4 && rtcp[0] >> 6 == 2 && rtcp[0] & 0x1F == FMT_TRANSPORT_CC && rtcp[1] == RTPFB
}
