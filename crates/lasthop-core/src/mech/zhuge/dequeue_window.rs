//! The dequeue-rate and dequeue-interval estimator of the Fortune Teller (zhuge.md §2.3), also used by
//! the ABC router (§5.3) with a shorter window.
//!
//! Every 1 ms tick classifies the last millisecond of the driver queue `Q_v` into one slot:
//!
//! ```text
//!   bytes left Q_v in the tick > 0  → Bytes(n)   counts toward the rate
//!   nothing left, Q_v non-empty     → Busy       the link held a backlog but moved nothing
//!     … and nothing has left since Q_v last became non-empty → Waiting (a Busy slot, see below)
//!   nothing left, Q_v empty         → Idle       nothing to send: excluded from both estimates
//! ```
//!
//! Over the last `window_slots` slots, with `B` the bytes, `nb` busy (waiting included), `nw` waiting
//! and `ni` idle slots of `n`:
//! * `rate_bps = 1000 · ⌊8·B / (window_slots − ni)⌋` ([`RateDivisor::Window`], the code's divisor, which
//!   underestimates the rate while the window fills; test vector TV3) or `1000 · ⌊8·B / (n − ni)⌋`
//!   ([`RateDivisor::NonIdle`]), floored at `min_rate_bps`. With `exclude_access_wait` the `nw`
//!   waiting slots leave the divisor too: the rate is then the queue's service rate once it is being
//!   served, and the wait for the first service opportunity is left to `tx_delay_us` and `qShort`;
//!   without this a per-station queue of an 802.11 AP, which waits for its turn on the air after
//!   every burst, measures its own offered load instead of what it could send (lasthop design);
//! * `tx_delay_us = ⌊1000·(n − ni) / (n − ni − nb)⌋`, the mean spacing of departure ticks in non-idle
//!   time, or `window_slots · 1000` when no tick of the window moved anything (a stalled link, §2.7);
//! * `whole_rate_bps` (ABC's `cr`): the same bytes over the whole window, idle ticks included.
//!
//! When every slot of the window is idle nothing is updated: the last estimates stay (§2.7, TV4b).

use crate::time::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The estimator's sampling period.
pub const TICK: SimDuration = SimDuration::from_ms(1);

/// Which tick count divides the bytes of the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateDivisor {
    /// The non-idle ticks actually in the window (`n − ni`): no underestimate while it fills.
    #[default]
    NonIdle,
    /// `window_slots − ni`, as the released code does (parity; TV3).
    Window,
}

/// The driver queue at a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backlog {
    /// Nothing queued.
    Empty,
    /// Queued, and nothing has left since the queue last became non-empty: waiting for the link.
    AwaitingAccess,
    /// Queued, and the link has served the queue since it last became non-empty.
    Served,
}

/// What one tick saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Bytes(u64),
    Busy,
    Waiting,
    Idle,
}

/// The sliding window of slots and the estimates derived from it.
#[derive(Clone, Debug)]
pub struct DequeueWindow {
    window_slots: u64,
    min_rate_bps: u64,
    divisor: RateDivisor,
    exclude_access_wait: bool,
    slots: VecDeque<Slot>,
    bytes: u64,
    busy: u64,
    waiting: u64,
    idle: u64,
    last_departed: u64,
    rate_bps: u64,
    whole_rate_bps: u64,
    tx_delay_us: u64,
    ticks: u64,
}

impl DequeueWindow {
    /// An empty window: the rates start at the floor and `tx_delay_us` at 0 (§2.1).
    pub fn new(window_slots: u32, min_rate_bps: u64, divisor: RateDivisor) -> Self {
        debug_assert!(window_slots > 0 && min_rate_bps > 0);
        DequeueWindow {
            window_slots: window_slots as u64,
            min_rate_bps,
            divisor,
            exclude_access_wait: false,
            slots: VecDeque::with_capacity(window_slots as usize + 1),
            bytes: 0,
            busy: 0,
            waiting: 0,
            idle: 0,
            last_departed: 0,
            rate_bps: min_rate_bps,
            whole_rate_bps: min_rate_bps,
            tx_delay_us: 0,
            ticks: 0,
        }
    }

    /// Leaves the ticks that wait for the first service of a new backlog out of the rate's divisor
    /// (module docs).
    pub fn excluding_access_wait(mut self, exclude: bool) -> Self {
        self.exclude_access_wait = exclude;
        self
    }

    /// One tick. `departed_total` is the count of bytes that have ever left the driver queue;
    /// `backlog` what it holds now.
    pub fn tick(&mut self, departed_total: u64, backlog: Backlog) {
        let moved = departed_total.saturating_sub(self.last_departed);
        self.last_departed = departed_total;
        let slot = match (moved, backlog) {
            (0, Backlog::Served) => Slot::Busy,
            (0, Backlog::AwaitingAccess) => Slot::Waiting,
            (0, Backlog::Empty) => Slot::Idle,
            (b, _) => Slot::Bytes(b),
        };
        self.push(slot);
        while self.slots.len() as u64 > self.window_slots {
            let old = self.slots.pop_front().expect("non-empty");
            self.account(old, false);
        }
        self.ticks += 1;
        self.update();
    }

    /// Counts `n` more ticks that cannot change anything: the caller has already run `window_slots + 1`
    /// ticks with no input, so the window holds one repeated slot and the estimates are fixed.
    pub fn skip(&mut self, n: u64) {
        self.ticks += n;
    }

    fn push(&mut self, slot: Slot) {
        self.slots.push_back(slot);
        self.account(slot, true);
    }

    fn account(&mut self, slot: Slot, add: bool) {
        let (b, nb, nw, ni) = match slot {
            Slot::Bytes(b) => (b, 0, 0, 0),
            Slot::Busy => (0, 1, 0, 0),
            Slot::Waiting => (0, 1, 1, 0),
            Slot::Idle => (0, 0, 0, 1),
        };
        if add {
            self.bytes += b;
            self.busy += nb;
            self.waiting += nw;
            self.idle += ni;
        } else {
            self.bytes -= b;
            self.busy -= nb;
            self.waiting -= nw;
            self.idle -= ni;
        }
    }

    fn update(&mut self) {
        let n = self.slots.len() as u64;
        let (ni, nb) = (self.idle, self.busy);
        if ni < n {
            let (rate_div, whole_div) = match self.divisor {
                RateDivisor::Window => (self.window_slots - ni, self.window_slots),
                RateDivisor::NonIdle => (n - ni, n),
            };
            let rate_div = if self.exclude_access_wait { rate_div - self.waiting } else { rate_div };
            // Bits per 1-ms tick are kbit/s; × 1000 gives bit/s (the code's integer arithmetic). A
            // window that only waited moved nothing: the rate falls to the floor (a stall, §2.7).
            self.rate_bps = (8 * self.bytes).checked_div(rate_div).map_or(0, |k| 1000 * k);
            self.whole_rate_bps = 1000 * (8 * self.bytes / whole_div);
            self.tx_delay_us =
                if nb < n - ni { 1000 * (n - ni) / (n - ni - nb) } else { self.window_slots * 1000 };
        }
        self.rate_bps = self.rate_bps.max(self.min_rate_bps);
        self.whole_rate_bps = self.whole_rate_bps.max(self.min_rate_bps);
    }

    /// Dequeue rate over the non-idle ticks (the Fortune Teller's `rate_bps`, ABC's `mu`), bit/s.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Dequeue rate over the whole window, idle ticks included (ABC's `cr`), bit/s.
    pub fn whole_rate_bps(&self) -> u64 {
        self.whole_rate_bps
    }

    /// Mean interval between departure ticks in non-idle time, µs.
    pub fn tx_delay_us(&self) -> u64 {
        self.tx_delay_us
    }

    /// Ticks run so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// The ticks the caller must run one by one before [`skip`](Self::skip) is exact.
    pub fn saturation_ticks(&self) -> u64 {
        self.window_slots + 1
    }

    /// `(slots, bytes, busy, idle)` of the current window (waiting slots count as busy).
    pub fn occupancy(&self) -> (u64, u64, u64, u64) {
        (self.slots.len() as u64, self.bytes, self.busy, self.idle)
    }

    /// Waiting slots in the current window (a subset of the busy ones).
    pub fn waiting(&self) -> u64 {
        self.waiting
    }
}
