//! BBR v1 after Linux `net/ipv4/tcp_bbr.c` (the model, state machine, gains and cwnd rules; read from
//! torvalds/linux @02dc96ef) and Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM
//! Queue 14(5), 2016. Spec: baselines.md §4.3.
//!
//! ```text
//!   STARTUP ──full pipe: max bw grew < 25 % in 3 rounds──▶ DRAIN ──inflight ≤ BDP──▶ PROBE_BW
//!   gain 2/ln2                                      1/gain pacing         gains [1.25, 0.75, 1 ×6]
//!      ▲                                                                          │ min_rtt older
//!      └──────────── PROBE_RTT: cwnd 4 packets, ≥ 200 ms and one round ◀──────────┘ than 10 s
//! ```
//!
//! Per ACK (`bbr_main`): update the bandwidth filter (max delivery rate over 10 packet-timed rounds,
//! app-limited samples only if they raise it), the ACK-aggregation estimate, the ProbeBW phase, the
//! full-pipe test, the Drain exit, the min-RTT filter and PROBE_RTT, the gains; then
//! `pacing_rate = pacing_gain · btl_bw · 0.99` (raised only, until the pipe is full) and
//! `cwnd → cwnd_gain · BDP + quantisation budget + aggregation allowance` (slow-start toward it,
//! snapping down only once the pipe is full), with packet conservation in the first round of
//! recovery and the saved cwnd restored after it.
//!
//! Choices where the simulator differs from the kernel or the sources are silent:
//! * **Units.** Bandwidth is bit/s (`u64`), windows bytes. Gains are the exact reals (2/ln 2, ln 2/2)
//!   rather than Linux's 8-bit fixed point (739/256 and 88/256).
//! * **Delivery rate** comes from [`super::DeliveryRateEstimator`] (`tcp_rate.c`); rounds end when an ACK
//!   covers data sent after the previous round ended (`next_rtt_delivered`).
//! * **PROBE_RTT's app-limited mark.** Linux sets `tp->app_limited` inside the transport so that the
//!   low-rate samples of PROBE_RTT cannot lower the bandwidth estimate. A controller here cannot write
//!   the transport's state, so BBR keeps the mark itself: a sample is treated as app-limited if its
//!   packet was sent after PROBE_RTT began and before the delivered count passed the mark.
//! * **Departure-time pacing.** `bbr_packets_in_net_at_edt` is the plain in-flight count: the
//!   transport paces by itself and has no qdisc holding packets with future departure times.
//! * **Quantisation budget.** `3 × tso_segs_goal` segments (1 segment below 1.2 Mbit/s of pacing, else
//!   ~1 ms of pacing in segments, at least 2, at most 127 or 64 KB), rounded up to an even number, +2
//!   in the 1.25 phase (`bbr_quantization_budget`); `quantization_budget = false` drops the TSO and
//!   even-rounding parts, for hosts without segmentation offload.
//! * **Loss.** Losses reported by [`on_loss`](CongestionControl::on_loss) are subtracted from cwnd on the
//!   next ACK (`rs->losses`). A timeout saves cwnd, sets it to one segment (`tcp_enter_loss` with
//!   nothing left in flight) and resets `full_bw` (`bbr_set_state`); cwnd is restored when an ACK of
//!   data sent after the timeout arrives. No undo.
//! * **Not modelled:** the long-term (policer) bandwidth mode (`lt_bw`, MF tier of the spec excludes it),
//!   `is_ack_delayed` filtering of min-RTT samples, and `sk_max_pacing_rate`.

use super::filter::WindowedFilter;
use super::{check, mul_div, rate_bps, AckEvent, CaState, CcError, CongestionControl, LossEvent};
use super::{Recovery, RoundCounter, SentEvent};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `cc = { type = "bbr", … }`; every field is optional and defaults to Linux `tcp_bbr.c` (v1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BbrParams {
    /// STARTUP pacing and cwnd gain: 2/ln 2 ≈ 2.885 (`bbr_high_gain`), the smallest gain that doubles
    /// the delivery rate every round.
    pub high_gain: f64,
    /// DRAIN pacing gain: ln 2/2 ≈ 0.347 (`bbr_drain_gain` = 1/high_gain), drains STARTUP's queue in
    /// about one round.
    pub drain_gain: f64,
    /// PROBE_BW cwnd gain (`bbr_cwnd_gain`): 2.
    pub cwnd_gain: f64,
    /// PROBE_BW pacing gains, one phase of about min_rtt each (`bbr_pacing_gain`):
    /// [1.25, 0.75, 1, 1, 1, 1, 1, 1]. The cycle starts at a random phase other than index 1.
    pub pacing_gain_cycle: Vec<f64>,
    /// Length of the max filter of delivery-rate samples, packet-timed rounds (`bbr_bw_rtts` =
    /// CYCLE_LEN + 2 = 10).
    pub bw_window_rounds: u32,
    /// Length of the min-RTT filter, ms (`bbr_min_rtt_win_sec` = 10 s).
    pub min_rtt_window_ms: u32,
    /// Minimum time at the PROBE_RTT window, ms (`bbr_probe_rtt_mode_ms` = 200).
    pub probe_rtt_ms: u32,
    /// Smallest cwnd and PROBE_RTT's window, segments (`bbr_cwnd_min_target` = 4).
    pub cwnd_min_target: u32,
    /// The bandwidth must grow by this factor per round for STARTUP to go on (`bbr_full_bw_thresh`
    /// = 1.25)…
    pub full_bw_threshold: f64,
    /// …or STARTUP ends after this many rounds without such growth (`bbr_full_bw_cnt` = 3).
    pub full_bw_rounds: u32,
    /// Pace this many percent below the gain × bandwidth (`bbr_pacing_margin_percent` = 1).
    pub pacing_margin_percent: u32,
    /// Initial window, segments (`TCP_INIT_CWND` = 10).
    pub initial_window: u32,
    /// Provision extra cwnd for ACK aggregation (`bbr_extra_acked_gain` = 1, window 5 rounds, cap
    /// 100 ms of bandwidth; Linux ≥ 4.20). Default true.
    pub ack_aggregation: bool,
    /// Add Linux's TSO quantisation budget to the cwnd target (see the module docs). Default true.
    pub quantization_budget: bool,
}

impl Default for BbrParams {
    fn default() -> Self {
        let high_gain = 2.0 / std::f64::consts::LN_2;
        BbrParams {
            high_gain,
            drain_gain: 1.0 / high_gain,
            cwnd_gain: 2.0,
            pacing_gain_cycle: vec![1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            bw_window_rounds: 10,
            min_rtt_window_ms: 10_000,
            probe_rtt_ms: 200,
            cwnd_min_target: 4,
            full_bw_threshold: 1.25,
            full_bw_rounds: 3,
            pacing_margin_percent: 1,
            initial_window: 10,
            ack_aggregation: true,
            quantization_budget: true,
        }
    }
}

impl BbrParams {
    pub fn validate(&self) -> Result<(), CcError> {
        let gain = |g: f64| g.is_finite() && g > 0.0 && g <= 100.0;
        check(gain(self.high_gain), "high_gain", "must be in (0, 100]")?;
        check(gain(self.drain_gain), "drain_gain", "must be in (0, 100]")?;
        check(gain(self.cwnd_gain), "cwnd_gain", "must be in (0, 100]")?;
        check(
            (2..=64).contains(&self.pacing_gain_cycle.len()),
            "pacing_gain_cycle",
            "must have 2 to 64 phases",
        )?;
        check(
            self.pacing_gain_cycle.iter().all(|&g| gain(g)),
            "pacing_gain_cycle",
            "every gain must be in (0, 100]",
        )?;
        check(
            self.bw_window_rounds >= 1,
            "bw_window_rounds",
            "must be at least 1",
        )?;
        check(
            self.min_rtt_window_ms >= 1,
            "min_rtt_window_ms",
            "must be at least 1",
        )?;
        check(
            self.cwnd_min_target >= 1,
            "cwnd_min_target",
            "must be at least 1 segment",
        )?;
        check(
            self.full_bw_threshold.is_finite() && self.full_bw_threshold >= 1.0,
            "full_bw_threshold",
            "must be finite and >= 1",
        )?;
        check(
            self.full_bw_rounds >= 1,
            "full_bw_rounds",
            "must be at least 1",
        )?;
        check(
            self.pacing_margin_percent < 100,
            "pacing_margin_percent",
            "must be < 100",
        )?;
        check(
            self.initial_window >= 1,
            "initial_window",
            "must be at least 1 segment",
        )
    }
}

/// BBR's state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// State and counters for `stats()`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BbrStats {
    pub mode: BbrMode,
    pub ca_state: CaState,
    pub cwnd: u64,
    pub pacing_rate_bps: u64,
    pub btl_bw_bps: u64,
    pub min_rtt_ns: u64,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    pub cycle_idx: usize,
    pub full_bw_reached: bool,
    pub rounds: u64,
    pub probe_rtt_count: u64,
    pub congestion_events: u64,
    pub rtos: u64,
}

/// ACK-aggregation estimator (`bbr_update_ack_aggregation`).
#[derive(Clone, Copy, Debug)]
struct AckAggregation {
    epoch_start: SimTime,
    epoch_acked: u64,
    extra_acked: [u64; 2],
    win_rounds: u32,
    win_idx: usize,
}

/// Linux `bbr_extra_acked_win_rtts`.
const EXTRA_ACKED_WIN_ROUNDS: u32 = 5;
/// Linux `bbr_extra_acked_max_us`.
const EXTRA_ACKED_MAX: SimDuration = SimDuration::from_ms(100);
/// Linux `bbr_ack_epoch_acked_reset_thresh`, in packets.
const ACK_EPOCH_RESET_PACKETS: u64 = 1 << 20;
/// Below this pacing rate one segment per TSO burst (`bbr_min_tso_rate`).
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
/// `GSO_MAX_SIZE − 1 − MAX_TCP_HEADER`, about 64 KB.
const MAX_TSO_BYTES: u64 = 65_536 - 1 - 320;

/// BBR v1.
#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u64,
    p: BbrParams,
    rng: Rng,
    mode: BbrMode,
    cwnd: u64,
    pacing_bps: u64,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// Max filter of delivery rates (bit/s) keyed by round.
    bw: WindowedFilter,
    min_rtt: Option<SimDuration>,
    min_rtt_stamp: SimTime,
    has_seen_rtt: bool,
    probe_rtt_done: Option<SimTime>,
    probe_rtt_round_done: bool,
    /// PROBE_RTT's app-limited mark: (delivered when it was set first, delivered + inflight now).
    probe_rtt_mark: Option<(u64, u64)>,
    rounds: RoundCounter,
    round_start: bool,
    full_bw: u64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    cycle_stamp: SimTime,
    prior_cwnd: u64,
    packet_conservation: bool,
    recovery: Recovery,
    prev_ca_state: CaState,
    idle_restart: bool,
    /// Bytes declared lost since the last ACK (`rs->losses`).
    pending_losses: u64,
    aggr: AckAggregation,
    probe_rtt_count: u64,
    congestion_events: u64,
    rtos: u64,
}

impl Bbr {
    pub fn new(p: &BbrParams, mss: u64, now: SimTime, rng: Rng) -> Self {
        let mut b = Bbr {
            mss,
            p: p.clone(),
            rng,
            mode: BbrMode::Startup,
            cwnd: p.initial_window as u64 * mss,
            pacing_bps: 0,
            pacing_gain: p.high_gain,
            cwnd_gain: p.high_gain,
            bw: WindowedFilter::max(),
            min_rtt: None,
            min_rtt_stamp: now,
            has_seen_rtt: false,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            probe_rtt_mark: None,
            rounds: RoundCounter::default(),
            round_start: false,
            full_bw: 0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: now,
            prior_cwnd: 0,
            packet_conservation: false,
            recovery: Recovery::default(),
            prev_ca_state: CaState::Open,
            idle_restart: false,
            pending_losses: 0,
            aggr: AckAggregation {
                epoch_start: now,
                epoch_acked: 0,
                extra_acked: [0; 2],
                win_rounds: 0,
                win_idx: 0,
            },
            probe_rtt_count: 0,
            congestion_events: 0,
            rtos: 0,
        };
        b.init_pacing_rate(None);
        b
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// The bandwidth estimate (windowed max delivery rate).
    pub fn btl_bw(&self) -> BitRate {
        BitRate::from_bps(self.max_bw())
    }

    pub fn min_rtt(&self) -> Option<SimDuration> {
        self.min_rtt
    }

    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }

    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// Packet-timed rounds so far.
    pub fn rounds(&self) -> u64 {
        self.rounds.count
    }

    /// `gain · BDP` in bytes, before the quantisation budget (`bbr_bdp`), rounded up to segments.
    pub fn bdp(&self, gain: f64) -> u64 {
        self.bdp_at(self.max_bw(), gain)
    }

    fn max_bw(&self) -> u64 {
        self.bw.get().unwrap_or(0)
    }

    fn min_target(&self) -> u64 {
        self.p.cwnd_min_target as u64 * self.mss
    }

    fn bdp_at(&self, bw: u64, gain: f64) -> u64 {
        let Some(rtt) = self.min_rtt else {
            return self.p.initial_window as u64 * self.mss;
        };
        let bytes = (bw as f64 * rtt.as_ns() as f64 * gain / 8e9).ceil() as u64;
        bytes.div_ceil(self.mss) * self.mss
    }

    /// Segments per TSO burst (`bbr_tso_segs_goal`).
    fn tso_segs_goal(&self) -> u64 {
        let min_segs = if self.pacing_bps < MIN_TSO_RATE_BPS {
            1
        } else {
            2
        };
        let bytes = ((self.pacing_bps / 8) >> 10).min(MAX_TSO_BYTES);
        (bytes / self.mss).max(min_segs).min(127)
    }

    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut pkts = cwnd.div_ceil(self.mss);
        if self.p.quantization_budget {
            pkts += 3 * self.tso_segs_goal();
            pkts = pkts.div_ceil(2) * 2;
        }
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            pkts += 2;
        }
        pkts * self.mss
    }

    /// `bbr_inflight`: the in-flight target at `gain`.
    fn inflight(&self, bw: u64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_at(bw, gain))
    }

    fn rate_with_gain(&self, bw: u64, gain: f64) -> u64 {
        let margin = (100 - self.p.pacing_margin_percent) as f64 / 100.0;
        (bw as f64 * gain * margin) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain × initial window / RTT (1 ms without a sample).
    fn init_pacing_rate(&mut self, rtt: Option<SimDuration>) {
        let rtt = rtt
            .filter(|r| !r.is_zero())
            .unwrap_or(SimDuration::from_ms(1));
        self.has_seen_rtt |= self.min_rtt.is_some();
        let bw = rate_bps(self.cwnd, rtt);
        self.pacing_bps = self.rate_with_gain(bw, self.p.high_gain);
    }

    /// `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, bw: u64, gain: f64, rtt: Option<SimDuration>) {
        if !self.has_seen_rtt && rtt.is_some() {
            self.init_pacing_rate(rtt);
        }
        let rate = self.rate_with_gain(bw, gain);
        if self.full_bw_reached || rate > self.pacing_bps {
            self.pacing_bps = rate;
        }
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// Whether this ACK's sample is app-limited, counting PROBE_RTT's own mark.
    fn sample_app_limited(&mut self, ack: &AckEvent) -> bool {
        let rs = &ack.rate;
        if let Some((_, until)) = self.probe_rtt_mark {
            if rs.delivered_total > until {
                self.probe_rtt_mark = None;
            }
        }
        let marked = self
            .probe_rtt_mark
            .is_some_and(|(from, until)| rs.prior_delivered >= from && rs.prior_delivered <= until);
        rs.is_app_limited || marked
    }

    /// `bbr_update_bw`.
    fn update_bw(&mut self, ack: &AckEvent, app_limited: bool) {
        self.round_start = false;
        let rs = &ack.rate;
        let Some(interval) = rs.interval else { return };
        if self.rounds.on_ack(rs) {
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = rate_bps(rs.delivered, interval);
        if !app_limited || bw >= self.max_bw() {
            let window = self.p.bw_window_rounds as u64;
            self.bw.update(self.rounds.count, bw, window);
        }
    }

    /// `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, now: SimTime, ack: &AckEvent) {
        if !self.p.ack_aggregation || ack.bytes_acked == 0 || ack.rate.interval.is_none() {
            return;
        }
        let a = &mut self.aggr;
        if self.round_start {
            a.win_rounds = (a.win_rounds + 1).min(31);
            if a.win_rounds >= EXTRA_ACKED_WIN_ROUNDS {
                a.win_rounds = 0;
                a.win_idx ^= 1;
                a.extra_acked[a.win_idx] = 0;
            }
        }
        let bw = self.bw.get().unwrap_or(0);
        let epoch = now.saturating_since(a.epoch_start);
        let mut expected = mul_div(bw, epoch.as_ns(), 8_000_000_000);
        let reset_bytes = ACK_EPOCH_RESET_PACKETS * self.mss;
        if a.epoch_acked <= expected || a.epoch_acked + ack.bytes_acked >= reset_bytes {
            a.epoch_acked = 0;
            a.epoch_start = now;
            expected = 0;
        }
        a.epoch_acked = (a.epoch_acked + ack.bytes_acked).min(reset_bytes - 1);
        let extra = (a.epoch_acked - expected).min(self.cwnd);
        if extra > a.extra_acked[a.win_idx] {
            a.extra_acked[a.win_idx] = extra;
        }
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.p.ack_aggregation || !self.full_bw_reached {
            return 0;
        }
        let cap = mul_div(self.max_bw(), EXTRA_ACKED_MAX.as_ns(), 8_000_000_000);
        self.aggr.extra_acked[0]
            .max(self.aggr.extra_acked[1])
            .min(cap)
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, now: SimTime, ack: &AckEvent) -> bool {
        let min_rtt = self.min_rtt.unwrap_or(SimDuration::ZERO);
        let full_length = now.saturating_since(self.cycle_stamp) > min_rtt;
        let bw = self.max_bw();
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        if self.pacing_gain > 1.0 {
            return full_length
                && (self.pending_losses > 0
                    || ack.prior_in_flight >= self.inflight(bw, self.pacing_gain));
        }
        full_length || ack.prior_in_flight <= self.inflight(bw, 1.0)
    }

    fn advance_cycle_phase(&mut self, now: SimTime) {
        self.cycle_idx = (self.cycle_idx + 1) % self.p.pacing_gain_cycle.len();
        self.cycle_stamp = now;
    }

    /// `bbr_reset_probe_bw_mode`: a random start phase, never the draining one (index 1).
    fn reset_probe_bw_mode(&mut self, now: SimTime) {
        self.mode = BbrMode::ProbeBw;
        let n = self.p.pacing_gain_cycle.len();
        let r = self.rng.uniform_inclusive((n - 2) as u32) as usize;
        self.cycle_idx = n - 1 - r;
        self.advance_cycle_phase(now);
    }

    fn reset_mode(&mut self, now: SimTime) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(now);
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    /// `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let max_bw = self.max_bw();
        if max_bw as f64 >= self.full_bw as f64 * self.p.full_bw_threshold {
            self.full_bw = max_bw;
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.p.full_bw_rounds;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, now: SimTime, ack: &AckEvent) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
        }
        if self.mode == BbrMode::Drain && ack.bytes_in_flight <= self.inflight(self.max_bw(), 1.0) {
            self.reset_probe_bw_mode(now);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, now: SimTime) {
        if self.probe_rtt_done.is_none_or(|d| now <= d) {
            return;
        }
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(now);
    }

    /// `bbr_update_min_rtt`, including entry to and exit from PROBE_RTT.
    fn update_min_rtt(&mut self, now: SimTime, ack: &AckEvent) {
        let window = SimDuration::from_ms(self.p.min_rtt_window_ms as u64);
        let expired = now > self.min_rtt_stamp.saturating_add(window);
        if let Some(rtt) = ack.rtt {
            if self.min_rtt.is_none_or(|m| rtt <= m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done = None;
            self.probe_rtt_count += 1;
        }
        if self.mode == BbrMode::ProbeRtt {
            self.probe_rtt_step(now, ack);
        }
        if ack.rate.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// One ACK in PROBE_RTT: mark samples app-limited, hold the small window ≥ 200 ms and a round.
    fn probe_rtt_step(&mut self, now: SimTime, ack: &AckEvent) {
        let delivered = ack.rate.delivered_total;
        let until = (delivered + ack.bytes_in_flight).max(1);
        let from = self.probe_rtt_mark.map_or(delivered, |(from, _)| from);
        self.probe_rtt_mark = Some((from, until));
        if self.probe_rtt_done.is_none() && ack.bytes_in_flight <= self.min_target() {
            let dur = SimDuration::from_ms(self.p.probe_rtt_ms as u64);
            self.probe_rtt_done = Some(now + dur);
            self.probe_rtt_round_done = false;
            self.rounds.restart(delivered);
        } else if self.probe_rtt_done.is_some() {
            if self.round_start {
                self.probe_rtt_round_done = true;
            }
            if self.probe_rtt_round_done {
                self.check_probe_rtt_done(now);
            }
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (self.p.high_gain, self.p.high_gain),
            BbrMode::Drain => (self.p.drain_gain, self.p.high_gain),
            BbrMode::ProbeBw => (self.p.pacing_gain_cycle[self.cycle_idx], self.p.cwnd_gain),
            BbrMode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: the new cwnd, and whether packet conservation set it.
    fn recover_or_restore(&mut self, ack: &AckEvent) -> (u64, bool) {
        let state = self.recovery.state();
        let mut cwnd = self.cwnd;
        if self.pending_losses > 0 {
            cwnd = cwnd.saturating_sub(self.pending_losses).max(self.mss);
        }
        let flight_plus_acked = ack.bytes_in_flight + ack.bytes_acked;
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            self.packet_conservation = true;
            self.rounds.restart(ack.rate.delivered_total);
            cwnd = flight_plus_acked;
        } else if self.prev_ca_state >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(flight_plus_acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, ack: &AckEvent, bw: u64) {
        let acked = ack.bytes_acked;
        if acked > 0 {
            let (mut cwnd, conserving) = self.recover_or_restore(ack);
            if !conserving {
                let target = self.bdp_at(bw, self.cwnd_gain) + self.ack_aggregation_cwnd();
                let target = self.quantization_budget(target);
                let initial = self.p.initial_window as u64 * self.mss;
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || ack.rate.delivered_total < initial {
                    cwnd += acked;
                }
                cwnd = cwnd.max(self.min_target());
            }
            self.cwnd = cwnd;
        }
        if self.mode == BbrMode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_target());
        }
    }
}

impl CongestionControl for Bbr {
    /// `bbr_cwnd_event(CA_EVENT_TX_START)`: restarting from idle while app-limited.
    fn on_sent(&mut self, now: SimTime, sent: &SentEvent) {
        if sent.prior_in_flight != 0 || !sent.app_limited {
            return;
        }
        self.idle_restart = true;
        self.aggr.epoch_start = now;
        self.aggr.epoch_acked = 0;
        match self.mode {
            BbrMode::ProbeBw => self.set_pacing_rate(self.max_bw(), 1.0, None),
            BbrMode::ProbeRtt => self.check_probe_rtt_done(now),
            _ => {}
        }
    }

    /// `bbr_main`.
    fn on_ack(&mut self, now: SimTime, ack: &AckEvent) {
        self.recovery.on_ack(ack.rate.sent_time);
        let app_limited = self.sample_app_limited(ack);
        self.update_bw(ack, app_limited);
        self.update_ack_aggregation(now, ack);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(now, ack) {
            self.advance_cycle_phase(now);
        }
        self.check_full_bw_reached(app_limited);
        self.check_drain(now, ack);
        self.update_min_rtt(now, ack);
        self.update_gains();
        let bw = self.max_bw();
        self.set_pacing_rate(bw, self.pacing_gain, self.min_rtt);
        self.set_cwnd(ack, bw);
        self.pending_losses = 0;
    }

    /// Losses count toward the next ACK's `rs->losses`; a new congestion event saves cwnd
    /// (`bbr_ssthresh`) and enters Recovery.
    fn on_loss(&mut self, now: SimTime, loss: &LossEvent) {
        self.pending_losses += loss.bytes_lost;
        if self.recovery.on_loss(now, loss.largest_lost_sent) {
            self.congestion_events += 1;
            self.save_cwnd();
        }
    }

    fn on_rto(&mut self, now: SimTime) {
        self.rtos += 1;
        self.save_cwnd();
        self.recovery.on_rto(now);
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        self.packet_conservation = false;
        self.pending_losses = 0;
        self.cwnd = self.mss;
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        Some(BitRate::from_bps(self.pacing_bps.max(1)))
    }

    fn stats(&self) -> serde_json::Value {
        let s = BbrStats {
            mode: self.mode,
            ca_state: self.recovery.state(),
            cwnd: self.cwnd,
            pacing_rate_bps: self.pacing_bps,
            btl_bw_bps: self.max_bw(),
            min_rtt_ns: self.min_rtt.map_or(0, |r| r.as_ns()),
            pacing_gain: self.pacing_gain,
            cwnd_gain: self.cwnd_gain,
            cycle_idx: self.cycle_idx,
            full_bw_reached: self.full_bw_reached,
            rounds: self.rounds.count,
            probe_rtt_count: self.probe_rtt_count,
            congestion_events: self.congestion_events,
            rtos: self.rtos,
        };
        serde_json::to_value(s).expect("plain struct")
    }
}
