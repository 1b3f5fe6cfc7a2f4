//! Congestion control: window and pacing rate of a sender, as pure state machines.
//!
//! Every algorithm sits behind one small trait, [`CongestionControl`], in the style of quinn-proto's
//! `congestion::Controller` and Linux's `tcp_congestion_ops`: the transport reports what happened
//! (a packet sent, an ACK, a loss, a retransmission timeout) with `now` as an argument, and asks for
//! the window and the pacing rate. Nothing here reads a clock, owns a timer or sees a packet; the only
//! randomness (BBR's ProbeBW start phase) comes from the [`Rng`] handed to [`CcParams::build`].
//!
//! ```text
//!   transport ──on_sent(now, &SentEvent)──────▶ ┌───────────────────┐
//!             ──on_loss(now, &LossEvent)──────▶ │ AnyCc             │──▶ cwnd() bytes
//!             ──on_ack(now, &AckEvent)────────▶ │ (Cubic, BBR, Copa,│──▶ pacing_rate() (None = unpaced)
//!             ──on_rto(now)───────────────────▶ │  NewReno)         │──▶ stats() JSON
//!                                               └───────────────────┘
//!   per ACK: DeliveryRateEstimator::on_ack ─▶ RateSample ─▶ AckEvent.rate   (Linux tcp_rate.c)
//! ```
//!
//! | algorithm | module | source | spec |
//! |---|---|---|---|
//! | NewReno (reference) | [`newreno`] | RFC 5681 §3.1, RFC 6582 (one reduction per window) | — |
//! | Cubic + HyStart++ | [`cubic`] | RFC 9438; RFC 9406; Linux `tcp_cubic.c` where the RFC leaves a choice | baselines.md §4.4 |
//! | BBR v1 | [`bbr`] | Linux `net/ipv4/tcp_bbr.c`; Cardwell et al., ACM Queue 2016 | baselines.md §4.3 |
//! | Copa (default mode) | [`copa`] | Arun & Balakrishnan, NSDI'18 §2; mvfst `Copa.cpp` | baselines.md §4.2, zhuge.md §5.4 |
//! | ABC sender | [`abc`] | Goyal et al., NSDI'20; ns-3 `TcpABC` of the Zhuge artifact | baselines.md §4.5, zhuge.md §5.3 |
//!
//! The set is closed, so callers hold an [`AnyCc`] built from a [`CcParams`] (a `type`-tagged scenario
//! table, STYLE 10/16):
//!
//! ```toml
//! cc = { type = "cubic" }                                  # β 0.7, C 0.4, fast convergence, HyStart++
//! cc = { type = "cubic", hystart = false, pacing = true }  # RFC 9438 minimum; Linux-style pacing
//! cc = { type = "bbr" }                                    # Linux tcp_bbr.c v1 defaults
//! cc = { type = "bbr", pacing_gain_cycle = [1.25, 0.75, 1, 1, 1, 1, 1, 1], probe_rtt_ms = 200 }
//! cc = { type = "copa", delta = 0.5 }                      # paper default mode
//! cc = { type = "copa", delta = 0.02, queue_delay = "latest" }   # Zhuge's `copa-fast2`
//! cc = { type = "newreno" }
//! cc = { type = "abc" }                                    # needs ABC marks from the AP (mech::zhuge::abc)
//! ```
//!
//! # Contract with the transport
//!
//! Sizes are bytes; the window is in bytes; the MSS is fixed at construction ([`DEFAULT_MSS`] = 1448,
//! a 1500-byte MTU with TCP timestamps). For each ACK that newly acknowledges data (cumulatively or by
//! SACK) the transport calls, in this order:
//! 1. [`CongestionControl::on_loss`] if the ACK made it declare packets lost (RACK or 3 duplicate
//!    ACKs), once per ACK with the sum of their sizes and the send time of the latest of them;
//! 2. [`CongestionControl::on_ack`] with the [`AckEvent`], whose [`RateSample`] comes from a
//!    [`DeliveryRateEstimator`] the transport keeps (one [`PacketDeliveryState`] per packet in flight);
//! 3. [`CongestionControl::on_ecn_echo`] with the ECN codepoint the ACK echoes, for every ACK that
//!    carries one (only ABC reacts; the others ignore it).
//!
//! Loss recovery is the controller's business: a loss of a packet sent before the current recovery
//! episode began is not a new congestion event (RFC 6582 / RFC 9002 §7.3.2; Linux enters Recovery once
//! per window), and an episode ends with the first ACK of a packet sent after it began. The transport
//! only enforces `bytes_in_flight < cwnd()` and paces at `pacing_rate()`.
//!
//! Choices where the sources are silent or that the simulator forces:
//! * **No PRR, no window inflation.** On a congestion event the window drops to its new value at once
//!   (as in quinn-proto); Linux's Proportional Rate Reduction (RFC 6937) is not modelled. BBR's own
//!   recovery rules (packet conservation, restore) are.
//! * **App-limited.** The [`RateSample::is_app_limited`] flag is Linux's `rs->is_app_limited`. Cubic and
//!   NewReno do not grow the window on ACKs of app-limited data (quinn-proto; Linux's
//!   `tcp_is_cwnd_limited` serves the same purpose).
//! * **Rounds.** A round trip ends when an ACK acknowledges data sent after the previous round ended:
//!   `prior_delivered ≥ next_round_delivered` (Linux `bbr_update_bw`; RFC 9406's `windowEnd`).
//! * **Floating point.** Gains and the cubic curve use `f64`, but only `+ − × ÷` and `sqrt`, which IEEE
//!   754 rounds exactly on every platform; the cube root is Newton's method (no libm), so runs stay
//!   bit-identical across machines (STYLE 7).

pub mod abc;
pub mod bbr;
pub mod copa;
pub mod cubic;
mod filter;
mod hystart;
pub mod newreno;
pub mod rate;

#[cfg(test)]
mod bbr_tests;
#[cfg(test)]
mod copa_tests;
#[cfg(test)]
mod cubic_tests;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;

pub use abc::{Abc, AbcParams, AbcStats};
pub use bbr::{Bbr, BbrMode, BbrParams, BbrStats};
pub use copa::{Copa, CopaParams, CopaStats, QueueDelaySignal};
pub use cubic::{Cubic, CubicParams, CubicStats};
pub use newreno::{NewReno, NewRenoParams, NewRenoStats};
pub use rate::{DeliveryRateEstimator, PacketDeliveryState, RateSample};

use crate::packet::Ecn;
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default maximum segment size: 1500-byte MTU − 40 bytes of IP/TCP − 12 bytes of timestamps
/// (baselines.md §6.3; Zhuge's bulk sender uses 1448-byte sends).
pub const DEFAULT_MSS: u64 = 1448;

/// A packet left the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentEvent {
    /// Its size in bytes (payload counted against the window).
    pub bytes: u64,
    /// Bytes in flight just before it was sent (0 = the connection restarts from idle).
    pub prior_in_flight: u64,
    /// The application had nothing more to send (Linux `tp->app_limited != 0`).
    pub app_limited: bool,
}

/// An ACK that newly acknowledged data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckEvent {
    /// Bytes newly acknowledged, cumulatively or selectively (Linux `rs->acked_sacked`).
    pub bytes_acked: u64,
    /// The RTT sample this ACK gave, if any (none for retransmitted data, Karn's rule).
    pub rtt: Option<SimDuration>,
    /// Bytes in flight before this ACK was processed (Linux `rs->prior_in_flight`).
    pub prior_in_flight: u64,
    /// Bytes in flight after it (acknowledged and newly lost bytes removed).
    pub bytes_in_flight: u64,
    /// The delivery-rate sample ([`DeliveryRateEstimator::on_ack`]).
    pub rate: RateSample,
}

/// Packets declared lost while processing one ACK (or by a RACK timer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LossEvent {
    /// Their total size.
    pub bytes_lost: u64,
    /// Send time of the latest of them: decides whether this is a new congestion event.
    pub largest_lost_sent: SimTime,
}

/// The congestion-control role (STYLE 8). Implementations are deterministic given their [`Rng`].
pub trait CongestionControl {
    /// A packet was sent (hook; Cubic and BBR use it to notice restarts from idle).
    fn on_sent(&mut self, _now: SimTime, _sent: &SentEvent) {}

    /// An ACK newly acknowledged data (after [`on_loss`](Self::on_loss) for losses it revealed).
    fn on_ack(&mut self, now: SimTime, ack: &AckEvent);

    /// Packets were declared lost; at most one window reduction per round trip.
    fn on_loss(&mut self, now: SimTime, loss: &LossEvent);

    /// The retransmission timer fired: everything in flight is presumed lost.
    fn on_rto(&mut self, now: SimTime);

    /// An ACK echoed the ECN codepoint `ecn` of the segment it answers (hook; ABC's accelerate/brake).
    fn on_ecn_echo(&mut self, _now: SimTime, _ecn: Ecn) {}

    /// The congestion window in bytes; the transport sends while `bytes_in_flight < cwnd()`.
    fn cwnd(&self) -> u64;

    /// The pacing rate; `None` means send as fast as the window allows.
    fn pacing_rate(&self) -> Option<BitRate>;

    /// State name, window, thresholds, filters and counters, for traces and Python.
    fn stats(&self) -> serde_json::Value;
}

/// A congestion-control parameter out of range; `field` is spelled as in the params table.
pub type CcError = crate::params::ParamError;
pub(crate) use crate::params::check;

/// Congestion-control configuration: `cc = { type = "cubic", … }`. Every field of every variant is
/// optional; the defaults are documented on each params struct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CcParams {
    /// RFC 5681 NewReno, as a reference.
    #[serde(rename = "newreno")]
    NewReno(NewRenoParams),
    /// RFC 9438 Cubic (the Linux default).
    Cubic(CubicParams),
    /// BBR v1 after Linux `tcp_bbr.c`.
    Bbr(BbrParams),
    /// Copa, default mode.
    Copa(CopaParams),
    /// ABC's sender (reacts to the accelerate/brake marks of an ABC router).
    Abc(AbcParams),
}

impl Default for CcParams {
    fn default() -> Self {
        CcParams::Cubic(CubicParams::default())
    }
}

impl CcParams {
    /// Checks ranges without building anything.
    pub fn validate(&self) -> Result<(), CcError> {
        match self {
            CcParams::NewReno(p) => p.validate(),
            CcParams::Cubic(p) => p.validate(),
            CcParams::Bbr(p) => p.validate(),
            CcParams::Copa(p) => p.validate(),
            CcParams::Abc(p) => p.validate(),
        }
    }

    /// Builds the controller of a connection with segment size `mss` that starts at `now`. `rng` is
    /// the connection's own stream (e.g. `Rng::derive(seed, "server/tcp3/cc")`); only BBR draws from it.
    pub fn build(&self, mss: u64, now: SimTime, rng: Rng) -> Result<AnyCc, CcError> {
        self.validate()?;
        check(mss >= 64, "mss", "must be at least 64 bytes")?;
        Ok(match self {
            CcParams::NewReno(p) => AnyCc::NewReno(NewReno::new(p, mss)),
            CcParams::Cubic(p) => AnyCc::Cubic(Cubic::new(p, mss)),
            CcParams::Bbr(p) => AnyCc::Bbr(Box::new(Bbr::new(p, mss, now, rng))),
            CcParams::Copa(p) => AnyCc::Copa(Box::new(Copa::new(p, mss))),
            CcParams::Abc(p) => AnyCc::Abc(Abc::new(p, mss)),
        })
    }
}

/// Any congestion controller (closed set, enum dispatch).
#[derive(Clone, Debug)]
pub enum AnyCc {
    NewReno(NewReno),
    Cubic(Cubic),
    Bbr(Box<Bbr>),
    Copa(Box<Copa>),
    Abc(Abc),
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyCc::NewReno($c) => $e,
            AnyCc::Cubic($c) => $e,
            AnyCc::Bbr($c) => $e,
            AnyCc::Copa($c) => $e,
            AnyCc::Abc($c) => $e,
        }
    };
}

impl CongestionControl for AnyCc {
    fn on_sent(&mut self, now: SimTime, sent: &SentEvent) {
        dispatch!(self, c => c.on_sent(now, sent))
    }
    fn on_ack(&mut self, now: SimTime, ack: &AckEvent) {
        dispatch!(self, c => c.on_ack(now, ack))
    }
    fn on_loss(&mut self, now: SimTime, loss: &LossEvent) {
        dispatch!(self, c => c.on_loss(now, loss))
    }
    fn on_rto(&mut self, now: SimTime) {
        dispatch!(self, c => c.on_rto(now))
    }
    fn on_ecn_echo(&mut self, now: SimTime, ecn: Ecn) {
        dispatch!(self, c => c.on_ecn_echo(now, ecn))
    }
    fn cwnd(&self) -> u64 {
        dispatch!(self, c => c.cwnd())
    }
    fn pacing_rate(&self) -> Option<BitRate> {
        dispatch!(self, c => c.pacing_rate())
    }
    fn stats(&self) -> serde_json::Value {
        dispatch!(self, c => c.stats())
    }
}

/// Where a window-based controller stands in loss recovery (Linux `icsk_ca_state`, reduced to the
/// three states the controllers here distinguish).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaState {
    /// No loss outstanding.
    Open,
    /// Fast recovery after a loss detected by ACKs.
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

/// One congestion event per round trip: the recovery episode that began at `start` covers every packet
/// sent up to then (quinn-proto `recovery_start_time`; RFC 9002 §7.3.2).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Recovery {
    start: Option<SimTime>,
    state: Option<CaState>,
}

impl Recovery {
    /// A loss of data sent at `largest_lost_sent`: `true` if it starts a new congestion event.
    pub fn on_loss(&mut self, now: SimTime, largest_lost_sent: SimTime) -> bool {
        if self.start.is_some_and(|s| largest_lost_sent <= s) {
            return false;
        }
        self.start = Some(now);
        self.state = Some(CaState::Recovery);
        true
    }

    /// A retransmission timeout always opens a new episode. Returns `true` unless one was already
    /// open because of an earlier timeout (a backed-off RTO does not reduce again, as in Linux).
    pub fn on_rto(&mut self, now: SimTime) -> bool {
        let repeated = self.state == Some(CaState::Loss);
        self.start = Some(now);
        self.state = Some(CaState::Loss);
        !repeated
    }

    /// An ACK of data sent at `sent`: `true` if it ends the open episode.
    pub fn on_ack(&mut self, sent: SimTime) -> bool {
        match (self.state, self.start) {
            (Some(_), Some(s)) if sent > s => {
                self.state = None;
                true
            }
            _ => false,
        }
    }

    pub fn state(&self) -> CaState {
        self.state.unwrap_or(CaState::Open)
    }

    pub fn in_recovery(&self) -> bool {
        self.state.is_some()
    }
}

/// Whether the window is in use, for controllers whose growth has no loss to stop it (Copa, ABC):
/// Linux's `tcp_is_cwnd_limited` slow-start rule, `cwnd < 2 · max_packets_out`, with the most bytes in
/// flight over this and the previous packet-timed round. An app-limited flow (video over TCP) would
/// otherwise grow its window without bound while its queue stays empty, then send a frame burst at it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CwndUse {
    rounds: RoundCounter,
    current: u64,
    previous: u64,
}

impl CwndUse {
    pub fn on_ack(&mut self, ack: &AckEvent) {
        if self.rounds.on_ack(&ack.rate) {
            self.previous = self.current;
            self.current = 0;
        }
        self.current = self.current.max(ack.prior_in_flight);
    }

    /// May a window of `cwnd` bytes grow?
    pub fn limited(&self, cwnd: u64) -> bool {
        cwnd < 2 * self.current.max(self.previous)
    }
}

/// Packet-timed round trips (Linux `bbr->rtt_cnt` / `next_rtt_delivered`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RoundCounter {
    pub count: u64,
    next_round_delivered: u64,
}

impl RoundCounter {
    /// `true` if this sample starts a new round.
    pub fn on_ack(&mut self, rs: &RateSample) -> bool {
        if rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = rs.delivered_total;
            self.count += 1;
            true
        } else {
            false
        }
    }

    /// Starts a round now: it ends with the first ACK of data sent after `delivered_total` bytes had
    /// been delivered (Linux sets `next_rtt_delivered = tp->delivered` when entering recovery and
    /// PROBE_RTT).
    pub fn restart(&mut self, delivered_total: u64) {
        self.next_round_delivered = delivered_total;
    }
}

/// RFC 6298 smoothed RTT (gain 1/8), for controllers that use `srtt` (Cubic's `t + RTT`, Copa).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SmoothedRtt(Option<SimDuration>);

impl SmoothedRtt {
    pub fn update(&mut self, sample: Option<SimDuration>) {
        if let Some(r) = sample {
            self.0 = Some(match self.0 {
                None => r,
                Some(s) => SimDuration::from_ns((s.as_ns() * 7 + r.as_ns()) / 8),
            });
        }
    }

    pub fn get(&self) -> Option<SimDuration> {
        self.0
    }
}

/// Linux `tcp_update_pacing_rate`: `mss · cwnd / srtt`, × 2 in slow start (`cwnd < ssthresh / 2`),
/// × 1.2 otherwise (`tcp_pacing_ss_ratio` 200, `tcp_pacing_ca_ratio` 120).
pub(crate) fn linux_pacing_rate(
    cwnd: u64,
    ssthresh: u64,
    srtt: Option<SimDuration>,
) -> Option<BitRate> {
    let srtt = srtt.filter(|s| !s.is_zero())?;
    let ratio = if cwnd < ssthresh / 2 { 200 } else { 120 };
    let bps = cwnd as u128 * 8 * 1_000_000_000 * ratio / 100 / srtt.as_ns() as u128;
    Some(BitRate::from_bps(bps.min(u64::MAX as u128) as u64))
}

/// `value · num / den` in u128, saturating at `u64::MAX`.
pub(crate) fn mul_div(value: u64, num: u64, den: u64) -> u64 {
    debug_assert!(den > 0);
    (value as u128 * num as u128 / den as u128).min(u64::MAX as u128) as u64
}

/// Bits per second of `bytes` delivered over `interval`.
pub(crate) fn rate_bps(bytes: u64, interval: SimDuration) -> u64 {
    if interval.is_zero() {
        return u64::MAX;
    }
    mul_div(bytes, 8_000_000_000, interval.as_ns())
}
