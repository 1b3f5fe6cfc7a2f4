//! The out-of-band Feedback Updater (zhuge.md §3): the AP holds the uplink ACKs of a TCP-like flow for
//! an extra time that follows the *change* of the predicted downlink delay, so that a delay-based
//! sender (Copa) sees a queue build-up about one queueing delay earlier. ACKs keep their order and are
//! released exactly once.
//!
//! Three parts, each usable alone:
//! * [`DeltaStore`] (§3.1–3.3): recent per-packet changes of the prediction. Increases are kept as the
//!   sampling distribution; decreases are banked as *tokens* that later samples pay back. Each value is
//!   capped at 10 ms and lives 40 ms; expired entries stay 40 ms more in `prev_window`, and when fewer
//!   packets arrived in the last 40 ms than in the 40 ms before, samples shrink by that ratio.
//! * [`ReleaseScheduler`] (§3.4): the release time of each ACK. A new burst starts from its arrival
//!   plus a sample; an ACK behind a held one inherits the held one's extra delay plus a sample no
//!   smaller than what keeps the order; the extra delay never exceeds 10 ms.
//! * [`AckDelayer`]: both, with the recording rule of §3.2 and the 3-s warm-up.
//!
//! # API and wiring
//!
//! ```text
//!   downlink data segment of the flow, at AP arrival, before Fortune Teller on_enqueue:
//!       delayer.on_downlink_data(now, &mut fortune_teller)
//!   uplink segment of the flow toward the sender, intercepted at the AP:
//!       let at = delayer.on_uplink_ack(now);  hold.push(at, packet)   // Hold<Packet>, or any timer
//!   at hold.next_wakeup(): while let Some(p) = hold.poll(now) { forward p }
//! ```
//!
//! The original ACK is consumed: only the held copy is forwarded (zhuge.md §3.7 \[LH\]; the ns-3 code's
//! promiscuous hook duplicates it, which is not modelled). The release time is never before `now` and
//! never before the previous ACK's, so a FIFO [`super::Hold`] keeps the order.

use super::fortune_teller::{FortuneTeller, Prediction, Resolution};
use super::{check, ParamError, Profile};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `ack_delayer = { history_ms = 40, prev_window_ms = 80, delta_cap_ms = 10, max_extra_delay_ms = 10,
/// warmup_ms = 3000, resolution = "ns" }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AckDelayerParams {
    /// Lifetime of deltas and tokens, ms; an entry expires when strictly older. Default 40 (§3.1).
    pub history_ms: u32,
    /// Age up to which expired entries count in `prev_window`, ms. Default 80 (§3.1).
    pub prev_window_ms: u32,
    /// Cap on each stored increase and each token, ms. Default 10 (§3.1).
    pub delta_cap_ms: u32,
    /// Cap on the extra delay of one ACK, ms. Default 10 (`kMaxActualDelay`; a code comment says it
    /// ought to track the minimum RTT).
    pub max_extra_delay_ms: u32,
    /// Nothing is predicted or recorded until this long after the AP starts, ms. Default 3000 (§2.1).
    pub warmup_ms: u32,
    /// `whole_ms` truncates the shrunk sample to whole ms as the code's integer state; default `ns`.
    pub resolution: Resolution,
}

impl Default for AckDelayerParams {
    fn default() -> Self {
        AckDelayerParams {
            history_ms: 40,
            prev_window_ms: 80,
            delta_cap_ms: 10,
            max_extra_delay_ms: 10,
            warmup_ms: 3000,
            resolution: Resolution::Ns,
        }
    }
}

impl AckDelayerParams {
    pub fn preset(profile: Profile) -> Self {
        match profile {
            Profile::Design => Self::default(),
            Profile::Parity => AckDelayerParams { resolution: Resolution::WholeMs, ..Self::default() },
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.history_ms >= 1, "history_ms", "must be at least 1")?;
        check(self.prev_window_ms >= self.history_ms, "prev_window_ms", "must be at least history_ms")?;
        check(self.delta_cap_ms >= 1, "delta_cap_ms", "must be at least 1")
    }
}

/// A stored value and when it was added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    at: SimTime,
    value: SimDuration,
}

/// The delay-change store of §3.1–3.3. Signed durations are `i64` nanoseconds.
#[derive(Clone, Debug)]
pub struct DeltaStore {
    history: SimDuration,
    prev_len: SimDuration,
    cap: SimDuration,
    resolution: Resolution,
    deltas: VecDeque<Entry>,
    tokens: VecDeque<Entry>,
    spent: VecDeque<Entry>,
    /// Times added of the entries that expired from the three lists above, at most `prev_len` old.
    prev: VecDeque<SimTime>,
}

/// Sizes of the store's lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreCounts {
    pub deltas: usize,
    pub tokens: usize,
    pub spent: usize,
    pub prev_window: usize,
}

impl DeltaStore {
    pub fn new(p: &AckDelayerParams) -> Self {
        DeltaStore {
            history: SimDuration::from_ms(p.history_ms as u64),
            prev_len: SimDuration::from_ms(p.prev_window_ms as u64),
            cap: SimDuration::from_ms(p.delta_cap_ms as u64),
            resolution: p.resolution,
            deltas: VecDeque::new(),
            tokens: VecDeque::new(),
            spent: VecDeque::new(),
            prev: VecDeque::new(),
        }
    }

    /// Moves entries older than the history into `prev_window` (keeping their time added) and forgets
    /// `prev_window` entries older than its length.
    fn age(&mut self, now: SimTime) {
        for list in [&mut self.deltas, &mut self.tokens, &mut self.spent] {
            while list.front().is_some_and(|e| now.saturating_since(e.at) > self.history) {
                let e = list.pop_front().expect("non-empty");
                self.prev.push_back(e.at);
            }
        }
        let keep = self.prev_len;
        self.prev.retain(|&t| now.saturating_since(t) <= keep);
    }

    /// Records a change of the prediction: an increase (zero included) joins the distribution, a
    /// decrease becomes a token of its size; both capped.
    pub fn add(&mut self, now: SimTime, delta_ns: i64) {
        self.age(now);
        let v = SimDuration::from_ns(delta_ns.unsigned_abs()).min(self.cap);
        let list = if delta_ns >= 0 { &mut self.deltas } else { &mut self.tokens };
        list.push_back(Entry { at: now, value: v });
    }

    /// §3.3: a sample no smaller than `min_ns` (which may be negative). `pick(len)` chooses the index of
    /// the delta drawn (uniform in the delayer; scripted in tests). Tokens, oldest first, are paid out
    /// of the sample: one smaller than what is left is spent; otherwise it is reduced and the sample
    /// becomes 0 (a token exactly equal stays, with value 0).
    pub fn sample(&mut self, now: SimTime, min_ns: i64, pick: &mut impl FnMut(usize) -> usize) -> i64 {
        self.age(now);
        if self.deltas.is_empty() {
            return min_ns;
        }
        let i = pick(self.deltas.len());
        debug_assert!(i < self.deltas.len());
        let drawn = self.deltas[i.min(self.deltas.len() - 1)].value.as_ns() as i64;
        let mut r = drawn.max(min_ns);
        while let Some(front) = self.tokens.front_mut() {
            let t = front.value.as_ns() as i64;
            if t < r {
                r -= t;
                let e = self.tokens.pop_front().expect("non-empty");
                self.spent.push_back(e);
            } else {
                front.value = SimDuration::from_ns((t - r) as u64);
                r = 0;
                break;
            }
        }
        let cur = (self.spent.len() + self.tokens.len() + self.deltas.len()) as i128;
        let prev = self.prev.len() as i128;
        if prev > cur {
            r = (r as i128 * cur / prev) as i64;
            if self.resolution == Resolution::WholeMs {
                r = r / 1_000_000 * 1_000_000;
            }
        }
        r
    }

    pub fn counts(&self) -> StoreCounts {
        StoreCounts {
            deltas: self.deltas.len(),
            tokens: self.tokens.len(),
            spent: self.spent.len(),
            prev_window: self.prev.len(),
        }
    }

    /// The tokens still owed, oldest first.
    pub fn tokens(&self) -> Vec<SimDuration> {
        self.tokens.iter().map(|e| e.value).collect()
    }
}

/// The ACK release scheduler of §3.4.
#[derive(Clone, Copy, Debug)]
pub struct ReleaseScheduler {
    max_extra: SimDuration,
    /// Arrival and release time of the previous ACK; `None` before the first.
    last: Option<(SimTime, SimTime)>,
}

impl ReleaseScheduler {
    pub fn new(max_extra: SimDuration) -> Self {
        ReleaseScheduler { max_extra, last: None }
    }

    /// The release time of an ACK arriving at `now`. `sample(min_ns)` draws the extra delay of §3.3
    /// (at least `min_ns`); it is not called for the very first ACK, which passes at once.
    pub fn on_ack(&mut self, now: SimTime, sample: impl FnOnce(i64) -> i64) -> SimTime {
        let Some((last_arr, last_sent)) = self.last else {
            self.last = Some((now, now));
            return now;
        };
        let at = |base: SimTime, d: i64| SimTime::from_ns((base.as_ns() as i64 + d).max(0) as u64);
        let send_at = if now > last_sent {
            at(now, sample(0).max(0))
        } else {
            // Still holding the previous ACK: inherit its extra delay; `min` keeps this one behind it.
            let base = now + (last_sent - last_arr);
            let min = last_sent.as_ns() as i64 - base.as_ns() as i64;
            at(base, sample(min).max(min))
        };
        let send_at = send_at.min(now + self.max_extra);
        debug_assert!(send_at >= now && (now > last_sent || send_at >= last_sent));
        self.last = Some((now, send_at));
        send_at
    }
}

/// Counters of the out-of-band Feedback Updater.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AckDelayerStats {
    pub predictions: u64,
    /// Increases (zero included) recorded.
    pub deltas: u64,
    /// Decreases recorded as tokens.
    pub tokens: u64,
    /// Predictions not recorded because the queue was empty now and at the previous one.
    pub skipped_idle: u64,
    pub acks: u64,
    /// ACKs released later than they arrived.
    pub acks_delayed: u64,
    pub extra_delay_total_ns: u64,
    pub extra_delay_max_ns: u64,
}

/// The out-of-band Feedback Updater of one flow.
#[derive(Clone, Debug)]
pub struct AckDelayer {
    store: DeltaStore,
    sched: ReleaseScheduler,
    rng: Rng,
    warmup_end: SimTime,
    last_total: SimDuration,
    last_q_bytes: u64,
    stats: AckDelayerStats,
}

impl AckDelayer {
    /// The delayer of a flow at an AP started at `start`. `rng` is its own stream, derived from the
    /// path `ap/<flow>/zhuge/delta_sampler` (STYLE rule 6).
    pub fn new(params: &AckDelayerParams, start: SimTime, rng: Rng) -> Self {
        debug_assert!(params.validate().is_ok());
        AckDelayer {
            store: DeltaStore::new(params),
            sched: ReleaseScheduler::new(SimDuration::from_ms(params.max_extra_delay_ms as u64)),
            rng,
            warmup_end: start + SimDuration::from_ms(params.warmup_ms as u64),
            last_total: SimDuration::ZERO,
            last_q_bytes: 0,
            stats: AckDelayerStats::default(),
        }
    }

    /// Whether the warm-up is over (`now > start + warmup`, strictly, as the code's `t > 3 s`).
    pub fn recording(&self, now: SimTime) -> bool {
        now > self.warmup_end
    }

    /// A downlink data segment of the flow reached the AP (call before the Fortune Teller's
    /// `on_enqueue` for it). After the warm-up, predicts its delay and records the change (§3.2).
    pub fn on_downlink_data(&mut self, now: SimTime, ft: &mut FortuneTeller) -> Option<Prediction> {
        if !self.recording(now) {
            return None;
        }
        let p = ft.predict(now, 0);
        self.record_prediction(now, &p);
        Some(p)
    }

    /// §3.2 for a prediction made elsewhere: records `total − previous total` unless the queue was
    /// empty both now and at the previous prediction. Ignored during the warm-up.
    pub fn record_prediction(&mut self, now: SimTime, p: &Prediction) {
        if !self.recording(now) {
            return;
        }
        self.stats.predictions += 1;
        if p.q_bytes == 0 && self.last_q_bytes == 0 {
            self.stats.skipped_idle += 1;
        } else {
            let d = p.total.as_ns() as i64 - self.last_total.as_ns() as i64;
            if d >= 0 {
                self.stats.deltas += 1;
            } else {
                self.stats.tokens += 1;
            }
            self.store.add(now, d);
        }
        self.last_total = p.total;
        self.last_q_bytes = p.q_bytes;
    }

    /// An uplink ACK of the flow reached the AP at `now`: when to release it (never before `now`,
    /// never before the previous ACK's release).
    pub fn on_uplink_ack(&mut self, now: SimTime) -> SimTime {
        let (store, rng) = (&mut self.store, &mut self.rng);
        let mut pick = |n: usize| rng.uniform_inclusive(n as u32 - 1) as usize;
        let at = self.sched.on_ack(now, |min| store.sample(now, min, &mut pick));
        let extra = (at - now).as_ns();
        self.stats.acks += 1;
        self.stats.acks_delayed += (extra > 0) as u64;
        self.stats.extra_delay_total_ns += extra;
        self.stats.extra_delay_max_ns = self.stats.extra_delay_max_ns.max(extra);
        at
    }

    pub fn store(&self) -> &DeltaStore {
        &self.store
    }

    pub fn stats(&self) -> AckDelayerStats {
        self.stats
    }
}
