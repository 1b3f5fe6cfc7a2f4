//! Copa, default mode (V. Arun and H. Balakrishnan, "Copa: Practical Delay-Based Congestion Control
//! for the Internet", NSDI'18, §2.1 and §4), with the details the paper leaves open taken from mvfst's
//! `quic/congestion_control/Copa.cpp` (Facebook's production port). Spec: baselines.md §4.2 (MF:
//! default mode) and zhuge.md §5.4 (the ns-3 port Zhuge uses).
//!
//! On every ACK:
//! * `RTTmin` = min RTT over the last 10 s; `RTTstanding` = min RTT over the last `srtt/2`;
//!   `d_q = RTTstanding − RTTmin` (or `latest RTT − RTTmin`, see [`QueueDelaySignal`]).
//! * Target rate `λ_t = 1/(δ·d_q)` packets/s (∞ when `d_q = 0`); current rate `λ = cwnd/RTTstanding`.
//! * If `λ ≤ λ_t`: `cwnd += v/(δ·cwnd)` per acknowledged packet, else `cwnd −= v/(δ·cwnd)` (in bytes:
//!   `acked·MSS·v/(δ·cwnd)`), never below `min_cwnd` segments.
//! * Slow start until the first decrease: `cwnd += acked` while `λ ≤ λ_t`, which doubles cwnd every
//!   round trip.
//! * Velocity: once per window (packet-timed round; not while slow start is growing), direction = up if
//!   cwnd grew over the window, down otherwise (the first window only records cwnd, as in mvfst); `v` doubles once the direction has stayed the same for 3 windows, and resets to 1 when
//!   it changes (mvfst counts `numTimesDirectionSame ≥ 3`). mvfst also resets `v` at once when a
//!   per-ACK decision goes against the current direction while `v > 1`, so an overshoot does not run
//!   for a whole window at high velocity; so do we.
//! * Pacing at `2·cwnd/RTTstanding` (paper §4).
//!
//! Choices and omissions:
//! * **Competitive mode is not implemented** (spec MF tier; its thresholds are unverified, baselines.md
//!   §7 item 5). Copa here always runs with the configured δ, so it yields to buffer-filling flows.
//! * **Loss** does not change the window (paper default mode; mvfst). A timeout sets cwnd to `min_cwnd`
//!   (mvfst's persistent-congestion rule) and `v` to 1.
//! * Slow start grows per ACK rather than doubling at once every srtt as mvfst does: the same rate of
//!   growth without a burst; the exit test runs on every ACK in both.
//! * **The window grows only while it is in use**: below twice the most bytes in flight over the
//!   last two rounds (Linux's `tcp_is_cwnd_limited`, [`super::CwndUse`]); it may always shrink. Neither
//!   the paper nor mvfst says; an app-limited flow (video over TCP) otherwise grows its window without
//!   bound while its queue stays empty. (Ignoring every app-limited ACK instead ratchets the window
//!   down to `min_cwnd`: a video flow's frame bursts still queue and shrink it.)
//! * `srtt` is an RFC 6298 EWMA of the RTT samples; `v` is capped at 2²⁰ (a guard; never reached in
//!   practice since the direction flips first).

use super::filter::WindowedFilter;
use super::{check, AckEvent, CcError, CongestionControl, CwndUse, LossEvent, RoundCounter, SmoothedRtt};
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which RTT measures the queueing delay `d_q`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueDelaySignal {
    /// `RTTstanding − RTTmin`, as in the paper (§2.1).
    #[default]
    Standing,
    /// `latest RTT − RTTmin`, as in mvfst (`copaUseRttStanding = false`) and Zhuge's ns-3 port
    /// (`UseRttStanding = false`).
    Latest,
}

/// `cc = { type = "copa", delta = 0.5, queue_delay = "standing", min_rtt_window_ms = 10000,
/// initial_window = 10, min_cwnd = 4 }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CopaParams {
    /// δ: the weight of delay against throughput; 1/δ packets of queue per flow (paper default 0.5;
    /// Zhuge's FastAck runs use 0.01–0.08).
    pub delta: f64,
    /// How `d_q` is measured. Default `standing` (paper).
    pub queue_delay: QueueDelaySignal,
    /// Window of `RTTmin`, ms (paper: 10 s).
    pub min_rtt_window_ms: u32,
    /// Initial window, segments (mvfst `initCwndInMss` 10).
    pub initial_window: u32,
    /// Smallest window, segments (Zhuge's ns-3 port: 4).
    pub min_cwnd: u32,
}

impl Default for CopaParams {
    fn default() -> Self {
        CopaParams {
            delta: 0.5,
            queue_delay: QueueDelaySignal::Standing,
            min_rtt_window_ms: 10_000,
            initial_window: 10,
            min_cwnd: 4,
        }
    }
}

impl CopaParams {
    pub fn validate(&self) -> Result<(), CcError> {
        check(
            self.delta.is_finite() && self.delta > 0.0 && self.delta <= 10.0,
            "delta",
            "must be in (0, 10]",
        )?;
        check(
            self.min_rtt_window_ms >= 1,
            "min_rtt_window_ms",
            "must be at least 1",
        )?;
        check(
            self.initial_window >= 1,
            "initial_window",
            "must be at least 1 segment",
        )?;
        check(self.min_cwnd >= 1, "min_cwnd", "must be at least 1 segment")
    }
}

/// Direction of the window over the last window of packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Up,
    Down,
}

/// State and counters for `stats()`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CopaStats {
    /// `slow_start` or `default`.
    pub mode: &'static str,
    pub cwnd: u64,
    pub velocity: u64,
    pub direction: Option<Direction>,
    pub rtt_min_ns: u64,
    pub rtt_standing_ns: u64,
    pub queue_delay_ns: u64,
    pub target_rate_bps: u64,
    pub pacing_rate_bps: u64,
    pub losses: u64,
    pub rtos: u64,
}

const MAX_VELOCITY: u64 = 1 << 20;
/// Windows in the same direction before `v` starts doubling (paper "three RTTs"; mvfst 3).
const SAME_DIRECTION_WINDOWS: u32 = 3;

/// Copa (default mode).
#[derive(Clone, Debug)]
pub struct Copa {
    mss: u64,
    p: CopaParams,
    /// Bytes, fractional between ACKs.
    cwnd: f64,
    slow_start: bool,
    velocity: u64,
    direction: Option<Direction>,
    same_direction: u32,
    /// cwnd when the current window began; `None` until the first window after slow start's growth.
    window_start_cwnd: Option<f64>,
    rounds: RoundCounter,
    cwnd_use: CwndUse,
    srtt: SmoothedRtt,
    latest_rtt: Option<SimDuration>,
    rtt_min: WindowedFilter,
    rtt_standing: WindowedFilter,
    /// Last `d_q` computed.
    queue_delay: SimDuration,
    pacing_bps: Option<u64>,
    losses: u64,
    rtos: u64,
}

impl Copa {
    pub fn new(p: &CopaParams, mss: u64) -> Self {
        let cwnd = (p.initial_window as u64 * mss) as f64;
        Copa {
            mss,
            p: p.clone(),
            cwnd,
            slow_start: true,
            velocity: 1,
            direction: None,
            same_direction: 0,
            window_start_cwnd: None,
            rounds: RoundCounter::default(),
            cwnd_use: CwndUse::default(),
            srtt: SmoothedRtt::default(),
            latest_rtt: None,
            rtt_min: WindowedFilter::min(),
            rtt_standing: WindowedFilter::min(),
            queue_delay: SimDuration::ZERO,
            pacing_bps: None,
            losses: 0,
            rtos: 0,
        }
    }

    pub fn velocity(&self) -> u64 {
        self.velocity
    }

    pub fn direction(&self) -> Option<Direction> {
        self.direction
    }

    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    pub fn rtt_min(&self) -> Option<SimDuration> {
        self.rtt_min.get().map(SimDuration::from_ns)
    }

    pub fn rtt_standing(&self) -> Option<SimDuration> {
        self.rtt_standing.get().map(SimDuration::from_ns)
    }

    /// The last queueing delay `d_q` measured.
    pub fn queue_delay(&self) -> SimDuration {
        self.queue_delay
    }

    /// `λ_t = MSS/(δ·d_q)` as a bit rate; `None` (infinite) while `d_q = 0`.
    pub fn target_rate(&self) -> Option<BitRate> {
        if self.queue_delay.is_zero() {
            return None;
        }
        let bps = self.mss as f64 * 8e9 / (self.p.delta * self.queue_delay.as_ns() as f64);
        Some(BitRate::from_bps(bps as u64))
    }

    fn min_cwnd(&self) -> f64 {
        (self.p.min_cwnd as u64 * self.mss) as f64
    }

    fn observe_rtt(&mut self, now: SimTime, rtt: SimDuration) {
        self.srtt.update(Some(rtt));
        self.latest_rtt = Some(rtt);
        let window = SimDuration::from_ms(self.p.min_rtt_window_ms as u64);
        self.rtt_min
            .update(now.as_ns(), rtt.as_ns(), window.as_ns());
        let standing_window = self.srtt.get().map_or(0, |s| s.as_ns() / 2);
        self.rtt_standing
            .update(now.as_ns(), rtt.as_ns(), standing_window);
    }

    /// Once per window: compare cwnd with its value at the window's start (mvfst
    /// `checkAndUpdateDirection`).
    fn update_velocity(&mut self) {
        let Some(start) = self.window_start_cwnd.replace(self.cwnd) else {
            return;
        };
        let dir = if self.cwnd > start {
            Direction::Up
        } else {
            Direction::Down
        };
        if self.direction == Some(dir) {
            self.same_direction += 1;
            if self.same_direction >= SAME_DIRECTION_WINDOWS {
                self.velocity = (self.velocity * 2).min(MAX_VELOCITY);
            }
        } else {
            self.direction = Some(dir);
            self.velocity = 1;
            self.same_direction = 0;
        }
    }

    /// A per-ACK decision against the current direction while `v > 1` (mvfst `changeDirection`).
    fn change_direction(&mut self, dir: Direction) {
        if self.direction == Some(dir) || self.velocity <= 1 {
            return;
        }
        self.direction = Some(dir);
        self.velocity = 1;
        self.same_direction = 0;
        self.window_start_cwnd = Some(self.cwnd);
    }
}

impl CongestionControl for Copa {
    fn on_ack(&mut self, now: SimTime, ack: &AckEvent) {
        if let Some(rtt) = ack.rtt {
            self.observe_rtt(now, rtt);
        }
        let round_start = self.rounds.on_ack(&ack.rate);
        let (Some(rtt_min), Some(standing), Some(latest)) =
            (self.rtt_min.get(), self.rtt_standing.get(), self.latest_rtt)
        else {
            return;
        };
        let signal = match self.p.queue_delay {
            QueueDelaySignal::Standing => standing,
            QueueDelaySignal::Latest => latest.as_ns(),
        };
        let dq = signal.saturating_sub(rtt_min);
        self.queue_delay = SimDuration::from_ns(dq);
        // λ ≤ λ_t  ⇔  cwnd/standing ≤ MSS/(δ·d_q)  ⇔  cwnd·δ·d_q ≤ MSS·standing.
        let increase =
            dq == 0 || self.cwnd * self.p.delta * dq as f64 <= (self.mss * standing.max(1)) as f64;
        if round_start && !(increase && self.slow_start) {
            self.update_velocity();
        }
        // v/(δ·cwnd) per acknowledged packet, with the velocity after a turn has reset it (a step at
        // the old direction's velocity once took a 4-segment window to 37 MB in one ACK).
        let step = |c: &Self| ack.bytes_acked as f64 * c.mss as f64 * c.velocity as f64 / (c.p.delta * c.cwnd);
        self.cwnd_use.on_ack(ack);
        if increase && !self.cwnd_use.limited(self.cwnd as u64) {
            // The window is not in use: its delay says nothing about a larger one. Growing here let an
            // app-limited video flow reach gigabyte windows and then send its next burst at terabits
            // per second ([`super::CwndUse`]).
        } else if increase {
            if self.slow_start {
                self.cwnd += ack.bytes_acked as f64;
            } else {
                self.change_direction(Direction::Up);
                self.cwnd += step(self);
            }
        } else {
            self.change_direction(Direction::Down);
            self.slow_start = false;
            self.cwnd = (self.cwnd - step(self)).max(self.min_cwnd().min(self.cwnd));
        }
        let rate = 2.0 * self.cwnd * 8e9 / standing.max(1) as f64;
        self.pacing_bps = Some(rate as u64);
    }

    fn on_loss(&mut self, _now: SimTime, loss: &LossEvent) {
        self.losses += loss.bytes_lost.div_ceil(self.mss);
    }

    fn on_rto(&mut self, _now: SimTime) {
        self.rtos += 1;
        self.cwnd = self.min_cwnd();
        self.velocity = 1;
        self.same_direction = 0;
        self.window_start_cwnd = Some(self.cwnd);
    }

    fn cwnd(&self) -> u64 {
        self.cwnd as u64
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        self.pacing_bps.map(|b| BitRate::from_bps(b.max(1)))
    }

    fn stats(&self) -> serde_json::Value {
        let s = CopaStats {
            mode: if self.slow_start {
                "slow_start"
            } else {
                "default"
            },
            cwnd: self.cwnd(),
            velocity: self.velocity,
            direction: self.direction,
            rtt_min_ns: self.rtt_min.get().unwrap_or(0),
            rtt_standing_ns: self.rtt_standing.get().unwrap_or(0),
            queue_delay_ns: self.queue_delay.as_ns(),
            target_rate_bps: self.target_rate().map_or(u64::MAX, |r| r.bps()),
            pacing_rate_bps: self.pacing_bps.unwrap_or(0),
            losses: self.losses,
            rtos: self.rtos,
        };
        serde_json::to_value(s).expect("plain struct")
    }
}
