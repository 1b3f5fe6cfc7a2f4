//! The Fortune Teller (zhuge.md §2): the delay a packet arriving at the AP now will see on the last
//! hop, `total = qLong + qShort + tx`.
//!
//! * `qLong = q · 8 / rate`: the bytes `q` queued at the AP egress (`Q_d + Q_v`) drained at the
//!   estimated dequeue rate ([`DequeueWindow`], §2.3). On 802.11 ([`FortuneTellerParams::ampdu_wait_ms`])
//!   a queue that fits in the A-MPDU being formed (`q ≤ ampdu_wait · rate`) and is not draining
//!   (`q ≥` the previous prediction's `q`) adds no queueing delay (§2.4).
//! * `qShort`: how long the packet at the head of `Q_v` has waited there ([`HeadWait`]; 802.11 only).
//! * `tx`: the mean interval between departures, in non-idle time (§2.3).
//!
//! # API and wiring
//!
//! The Fortune Teller is a pure state machine; the integrator calls it from the AP's packet events:
//!
//! | AP event (monitored flow or not) | call |
//! |---|---|
//! | a packet is admitted to the egress (`Q_d`, or `Q_v` if the AP has one queue) | [`EgressObserver::on_enqueue`] |
//! | it moves from the qdisc to the driver queue | [`EgressObserver::on_to_driver`] |
//! | it leaves the driver queue for the link | [`EgressObserver::on_dequeue`] |
//! | it is dropped after admission | [`EgressObserver::on_drop`] |
//! | a packet of the flow arrives and needs a forecast | [`FortuneTeller::predict`] **before** its `on_enqueue` |
//!
//! Every packet of the egress is reported (the rate estimator counts all bytes that leave), with
//! `monitored = true` for the packets of the flow this Fortune Teller serves; a Zhuge-managed flow has
//! its own Fortune Teller. The Feedback Updaters ([`super::AckDelayer`], [`super::TwccRewriter`]) call
//! `predict` themselves when handed the Fortune Teller.
//!
//! **The 1-ms tick (§2.3) is event-driven, not scheduled.** Its inputs (bytes that left `Q_v`, whether
//! `Q_v` holds anything, which packet is at its head) change only through the calls above, so every
//! call first replays the ticks due at or before `now` ([`FortuneTeller::advance_to`]); a tick at `T`
//! sees every call made before `T` and none made at `T`. The replay is exact and costs at most
//! `window_slots + 1` ticks however long the egress was quiet. [`FortuneTeller::next_wakeup`] is
//! therefore always `None`: the integrator never schedules anything for it. The ticks fall at
//! `start + k · 1 ms`, `k ≥ 1` (the code starts them 1 ms after the AP application).
//!
//! # Profiles
//!
//! | knob | [`design`](FortuneTellerParams::design) | [`parity`](FortuneTellerParams::parity) (\[CODE\]) |
//! |---|---|---|
//! | `rate_divisor` | non-idle ticks in the window | `window_slots − ni` (TV3 underestimate) |
//! | `exclude_access_wait` (802.11) | a new backlog's wait for its first service is not in the rate | every non-idle tick is |
//! | `resolution` | ns (sub-ms changes are visible) | whole ms per term, truncated |
//! | `head_wait` (802.11) | the head's exact wait against the expected one (`remaining`) | 1-ms head timer with the arrival-overwrite quirk |
//! | `track_queue_trend` | every prediction updates the previous `q` | TCP path only (the RTP path keeps 0) |
//!
//! Both profiles use `qShort = 0` and no A-MPDU allowance on point-to-point links, as the code does;
//! the 802.11 presets set a 5-ms allowance.

use super::dequeue_window::{DequeueWindow, RateDivisor};
use super::egress::{Egress, EgressMirror, EgressPacket, TickClock};
use super::{check, FeedbackPath, LinkKind, ParamError, Profile};
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How `qShort`, the wait of the packet at the head of `Q_v`, is measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeadWait {
    /// `qShort = 0` (the code on point-to-point links).
    #[default]
    Off,
    /// The code's 1-ms head timer: +1 ms per tick while the head is unchanged, reset when it changes.
    /// Every arrival of a monitored packet overwrites the remembered head, so the timer only grows
    /// across ticks without such arrivals (§2.3, parity quirk).
    TickTimer,
    /// Exactly how long the current head has been at the head (§2.3, lasthop's design on
    /// point-to-point links when asked for).
    Exact,
    /// 802.11 design: the head's exact wait `w` against the expected wait for service `tx`. A packet
    /// behind a head that has waited `w` goes out with it (the A-MPDU of that service), so it waits
    /// the head's remaining `(tx − w)⁺` (the `tx` term; `qShort` is 0) rather than `w + tx`. Adding
    /// the elapsed wait to a full `tx` grows the forecast of every packet of a paced burst by its gap
    /// to the first one, a queue build-up that is not there: all of them leave in the station's next
    /// A-MPDU. (Tried and dropped: counting a head overdue by `w − tx` as overdue as much again. An
    /// 802.11 access wait is bounded by the other stations' TXOPs, so a long-waiting head is about to
    /// leave, and that rule forecast ramps of 40–90 ms for packets that then saw 15–25 ms.)
    Remaining,
}

/// The granularity of a prediction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Nanoseconds.
    #[default]
    Ns,
    /// Each term truncated to whole milliseconds, as the code's integer-ms state (§1, §2.4).
    WholeMs,
}

/// The Fortune Teller's settings (a profile's preset per link and feedback path; scenarios change
/// them with [`FortuneTellerOverrides`]). `Default` is the design profile on a point-to-point link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FortuneTellerParams {
    /// The video frame interval `F` known to the AP, ms. Default 40 (every experiment, §1).
    pub frame_interval_ms: u32,
    /// Window length in frame intervals: `window_slots = window_frames · F / 1 ms`. Default 5 (§2.1:
    /// 200 ticks).
    pub window_frames: u32,
    /// Floor and initial value of the rate estimate, bit/s. Default 512 000 (§2.1, `500·1024`).
    pub min_rate_bps: u64,
    /// 802.11: a queue that drains in this time at the estimated rate and is not shrinking is the
    /// A-MPDU being formed and adds no queueing delay. Default none (point-to-point); 5 on 802.11
    /// (§2.1 `ampdu_wait_ms`).
    pub ampdu_wait_ms: Option<u32>,
    /// How `qShort` is measured. Default `off` (point-to-point).
    pub head_wait: HeadWait,
    /// Divisor of the rate estimate. Default `non_idle`.
    pub rate_divisor: RateDivisor,
    /// Leave the ticks a new backlog waits for its first service out of the rate's divisor, so that
    /// the rate is what the queue drains at once served, not its offered load (module docs of
    /// `dequeue_window`). Default true on 802.11, whose per-station queues wait for their turn on
    /// the air after every burst; false on point-to-point links and in the parity profile.
    pub exclude_access_wait: bool,
    /// Granularity of the terms. Default `ns`.
    pub resolution: Resolution,
    /// Remember each prediction's `q` as the "previous queue" of the 802.11 allowance rule. Default
    /// true.
    pub track_queue_trend: bool,
}

impl Default for FortuneTellerParams {
    fn default() -> Self {
        FortuneTellerParams::design(LinkKind::P2p)
    }
}

impl FortuneTellerParams {
    /// The design profile: the slides and the spec's lasthop decisions.
    pub fn design(link: LinkKind) -> Self {
        let wifi = link == LinkKind::Wifi;
        FortuneTellerParams {
            frame_interval_ms: 40,
            window_frames: 5,
            min_rate_bps: 512_000,
            ampdu_wait_ms: wifi.then_some(5),
            head_wait: if wifi { HeadWait::Remaining } else { HeadWait::Off },
            rate_divisor: RateDivisor::NonIdle,
            exclude_access_wait: wifi,
            resolution: Resolution::Ns,
            track_queue_trend: true,
        }
    }

    /// The released code's behaviour for a flow whose feedback takes `path`.
    pub fn parity(link: LinkKind, path: FeedbackPath) -> Self {
        let wifi = link == LinkKind::Wifi;
        FortuneTellerParams {
            head_wait: if wifi { HeadWait::TickTimer } else { HeadWait::Off },
            rate_divisor: RateDivisor::Window,
            exclude_access_wait: false,
            resolution: Resolution::WholeMs,
            track_queue_trend: path == FeedbackPath::Tcp,
            ..FortuneTellerParams::design(link)
        }
    }

    /// [`design`](Self::design) or [`parity`](Self::parity).
    pub fn preset(profile: Profile, link: LinkKind, path: FeedbackPath) -> Self {
        match profile {
            Profile::Design => Self::design(link),
            Profile::Parity => Self::parity(link, path),
        }
    }

    /// Window length in 1-ms ticks.
    pub fn window_slots(&self) -> u32 {
        self.window_frames.saturating_mul(self.frame_interval_ms)
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.frame_interval_ms >= 1, "frame_interval_ms", "must be at least 1")?;
        check(self.window_frames >= 1, "window_frames", "must be at least 1")?;
        check(self.window_slots() <= 60_000, "window_frames", "the window must not exceed 60 s")?;
        check(self.min_rate_bps >= 1, "min_rate_bps", "must be at least 1")?;
        check(self.ampdu_wait_ms.is_none_or(|w| w <= 1000), "ampdu_wait_ms", "must be at most 1000")
    }
}

/// `fortune_teller = { window_frames = 3, head_wait = "exact", ... }` in a Zhuge mechanism: each field
/// given replaces the profile's preset for the flow's link (802.11 or point-to-point) and feedback
/// path; the rest keep it. `ampdu_wait_ms = 0` turns the A-MPDU allowance off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FortuneTellerOverrides {
    pub frame_interval_ms: Option<u32>,
    pub window_frames: Option<u32>,
    pub min_rate_bps: Option<u64>,
    pub ampdu_wait_ms: Option<u32>,
    pub head_wait: Option<HeadWait>,
    pub rate_divisor: Option<RateDivisor>,
    pub exclude_access_wait: Option<bool>,
    pub resolution: Option<Resolution>,
    pub track_queue_trend: Option<bool>,
}

impl FortuneTellerOverrides {
    /// `base` with the fields given here.
    pub fn apply(&self, base: FortuneTellerParams) -> FortuneTellerParams {
        FortuneTellerParams {
            frame_interval_ms: self.frame_interval_ms.unwrap_or(base.frame_interval_ms),
            window_frames: self.window_frames.unwrap_or(base.window_frames),
            min_rate_bps: self.min_rate_bps.unwrap_or(base.min_rate_bps),
            ampdu_wait_ms: self.ampdu_wait_ms.map_or(base.ampdu_wait_ms, |w| (w > 0).then_some(w)),
            head_wait: self.head_wait.unwrap_or(base.head_wait),
            rate_divisor: self.rate_divisor.unwrap_or(base.rate_divisor),
            exclude_access_wait: self.exclude_access_wait.unwrap_or(base.exclude_access_wait),
            resolution: self.resolution.unwrap_or(base.resolution),
            track_queue_trend: self.track_queue_trend.unwrap_or(base.track_queue_trend),
        }
    }

    /// Checks the fields given against every preset they may be applied to.
    pub fn validate(&self) -> Result<(), ParamError> {
        for link in [LinkKind::P2p, LinkKind::Wifi] {
            self.apply(FortuneTellerParams::design(link)).validate()?;
        }
        Ok(())
    }
}

/// One forecast and its terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Prediction {
    /// `q_long + q_short + tx`.
    pub total: SimDuration,
    /// The queued bytes the forecast drained (`cur_q_bytes` of the code).
    pub q_bytes: u64,
    pub q_long: SimDuration,
    pub q_short: SimDuration,
    pub tx: SimDuration,
}

/// The estimator state a forecast reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    pub rate_bps: u64,
    pub tx_delay_us: u64,
    pub head_wait: SimDuration,
}

fn quantise(d: SimDuration, r: Resolution) -> SimDuration {
    match r {
        Resolution::Ns => d,
        Resolution::WholeMs => SimDuration::from_ms(d.as_ns() / 1_000_000),
    }
}

/// The §2.4 arithmetic: the forecast for `q_bytes` queued ahead, given the previous forecast's queue
/// `last_q_bytes` and the estimates. `qLong` is `8·q/rate` exactly (the code computes it in f64 and
/// truncates to ms; the integer form is the same without rounding surprises).
pub fn forecast(p: &FortuneTellerParams, q_bytes: u64, last_q_bytes: u64, est: Estimate) -> Prediction {
    let rate = est.rate_bps.max(1);
    let allowance = p.ampdu_wait_ms.map(|w| w as u64 * rate / 8000);
    let in_ampdu = allowance.is_some_and(|a| q_bytes <= a && q_bytes >= last_q_bytes);
    let q_long = if in_ampdu {
        SimDuration::ZERO
    } else {
        let ns = q_bytes as u128 * 8 * 1_000_000_000 / rate as u128;
        SimDuration::from_ns(ns.min(u64::MAX as u128) as u64)
    };
    let q_long = quantise(q_long, p.resolution);
    let tx = SimDuration::from_us(est.tx_delay_us);
    let (q_short, tx) = match p.head_wait {
        HeadWait::Remaining => (SimDuration::ZERO, tx.saturating_sub(est.head_wait)),
        _ => (est.head_wait, tx),
    };
    let (q_short, tx) = (quantise(q_short, p.resolution), quantise(tx, p.resolution));
    Prediction { total: q_long + q_short + tx, q_bytes, q_long, q_short, tx }
}

/// Counters and the current estimates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FortuneTellerStats {
    pub ticks: u64,
    pub predictions: u64,
    pub rate_bps: u64,
    pub tx_delay_us: u64,
    pub qdisc_bytes: u64,
    pub driver_bytes: u64,
}

/// The per-flow delay predictor at the AP.
#[derive(Clone, Debug)]
pub struct FortuneTeller {
    params: FortuneTellerParams,
    window: DequeueWindow,
    egress: Egress,
    clock: TickClock,
    head_key: Option<u64>,
    head_time_ms: u64,
    last_q_bytes: u64,
    predictions: u64,
}

impl FortuneTeller {
    /// A Fortune Teller whose AP application starts at `start` (first tick at `start + 1 ms`).
    pub fn new(params: FortuneTellerParams, start: SimTime) -> Self {
        debug_assert!(params.validate().is_ok());
        let window = DequeueWindow::new(params.window_slots(), params.min_rate_bps, params.rate_divisor)
            .excluding_access_wait(params.exclude_access_wait);
        FortuneTeller {
            params,
            window,
            egress: Egress::default(),
            clock: TickClock::new(start),
            head_key: None,
            head_time_ms: 0,
            last_q_bytes: 0,
            predictions: 0,
        }
    }

    pub fn params(&self) -> &FortuneTellerParams {
        &self.params
    }

    /// Replays the ticks due at or before `now` (called by every other method).
    pub fn advance_to(&mut self, now: SimTime) {
        let due = self.clock.take_due(now);
        let one_by_one = due.min(self.window.saturation_ticks());
        for _ in 0..one_by_one {
            self.tick();
        }
        let rest = due - one_by_one;
        if rest > 0 {
            // Nothing changed since the last of them: the window holds one repeated slot.
            self.window.skip(rest);
            if self.params.head_wait == HeadWait::TickTimer && self.egress.head().is_some() {
                self.head_time_ms += rest;
            }
        }
    }

    /// Always `None`: the ticks are replayed by the calls themselves (module docs).
    pub fn next_wakeup(&self) -> Option<SimTime> {
        None
    }

    fn tick(&mut self) {
        if self.params.head_wait == HeadWait::TickTimer {
            match self.egress.head() {
                Some((h, _)) if self.head_key == Some(h.id) => self.head_time_ms += 1,
                Some((h, _)) => {
                    self.head_key = Some(h.id);
                    self.head_time_ms = 0;
                }
                None => self.head_time_ms = 0,
            }
        }
        self.window.tick(self.egress.departed_total(), self.egress.backlog());
    }

    /// Whether at least one tick has run by `now` (before it the estimates are only initial values;
    /// the in-band path reports nothing then, §2.7).
    pub fn ticked(&mut self, now: SimTime) -> bool {
        self.advance_to(now);
        self.window.ticks() > 0
    }

    /// The estimator state at `now`.
    pub fn estimate(&mut self, now: SimTime) -> Estimate {
        self.advance_to(now);
        let head_wait = match self.params.head_wait {
            HeadWait::Off => SimDuration::ZERO,
            HeadWait::TickTimer => SimDuration::from_ms(self.head_time_ms),
            HeadWait::Exact | HeadWait::Remaining => self.egress.head().map_or(SimDuration::ZERO, |(_, since)| now - since),
        };
        Estimate { rate_bps: self.window.rate_bps(), tx_delay_us: self.window.tx_delay_us(), head_wait }
    }

    /// The forecast for a packet at `now` (§2.4). `extra_bytes` is 0 for a packet about to be
    /// enqueued (call before its `on_enqueue`: `q` is then the bytes ahead of it). The in-band parity
    /// path passes the bytes that arrived behind a sampled packet; when they exceed the qdisc's bytes
    /// the sample has reached `Q_v`, and `q` is what `Q_v` holds ahead of its newest monitored packet.
    pub fn predict(&mut self, now: SimTime, extra_bytes: u64) -> Prediction {
        let est = self.estimate(now);
        let (qd, qv) = (self.egress.qdisc_bytes(), self.egress.driver_bytes());
        let q = if extra_bytes > qd {
            self.egress.driver_bytes_ahead_of_last_monitored()
        } else {
            (qd + qv).saturating_sub(extra_bytes)
        };
        let p = forecast(&self.params, q, self.last_q_bytes, est);
        if self.params.track_queue_trend {
            self.last_q_bytes = q;
        }
        self.predictions += 1;
        p
    }

    /// The `q` of the previous forecast, as the 802.11 allowance rule compares against (0 at first).
    pub fn last_q_bytes(&self) -> u64 {
        self.last_q_bytes
    }

    /// Bytes that ever entered the egress; the in-band path measures the bytes behind a sample with it.
    pub fn enqueued_bytes_total(&self) -> u64 {
        self.egress.enqueued_total()
    }

    /// Bytes in the qdisc and in the driver queue.
    pub fn backlog(&self) -> (u64, u64) {
        (self.egress.qdisc_bytes(), self.egress.driver_bytes())
    }

    pub fn stats(&self) -> FortuneTellerStats {
        FortuneTellerStats {
            ticks: self.window.ticks(),
            predictions: self.predictions,
            rate_bps: self.window.rate_bps(),
            tx_delay_us: self.window.tx_delay_us(),
            qdisc_bytes: self.egress.qdisc_bytes(),
            driver_bytes: self.egress.driver_bytes(),
        }
    }
}

impl EgressMirror for FortuneTeller {
    fn catch_up(&mut self, now: SimTime) {
        self.advance_to(now);
    }
    fn egress_mut(&mut self) -> &mut Egress {
        &mut self.egress
    }
    fn on_admit(&mut self, pkt: &EgressPacket) {
        if pkt.monitored && self.params.head_wait == HeadWait::TickTimer {
            self.head_key = Some(pkt.id); // the code's overwrite on every arrival of the flow
        }
    }
}
