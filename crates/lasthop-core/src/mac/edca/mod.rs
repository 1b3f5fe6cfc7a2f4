//! One EDCA function (EDCAF) per access category, or the single DCF of a non-QoS station: contention
//! window, backoff counter and retry counter, counted slot-accurately but without an event per slot.
//!
//! Source: `wifi-model.md` §3.1 (backoff procedure), §3.5 (event-driven algorithm after ns-3's
//! `ChannelAccessManager`), §9 item 12 (EDCA counts the last AIFS slot boundary).
//!
//! The caller owns the medium: it passes `grant`, the earliest time at which this station may start its
//! AIFS (the end of the last busy period it observed, its own ACK timeout, NAV or EIFS, plus SIFS).
//! From that, `backoff_start = max(b_start, grant + AIFSN·slot)` and `backoff_end = backoff_start +
//! b·slot`. When the medium turns busy the caller calls [`Edcaf::freeze`], which consumes the idle slots
//! that elapsed. Everything is integer nanoseconds, so stations whose backoffs end in the same slot
//! produce equal times and collide exactly.

use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use serde::Serialize;

/// Access categories in priority order (highest first), as mac80211 numbers its queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessCategory {
    Vo = 0,
    Vi = 1,
    Be = 2,
    Bk = 3,
}

impl AccessCategory {
    pub const ALL: [AccessCategory; 4] = [AccessCategory::Vo, AccessCategory::Vi, AccessCategory::Be, AccessCategory::Bk];

    /// 802.1d user priority → AC (mac80211 `ieee802_1d_to_ac`): 0,3 → BE; 1,2 → BK; 4,5 → VI; 6,7 → VO.
    pub fn from_user_priority(up: u8) -> Self {
        match up & 7 {
            1 | 2 => AccessCategory::Bk,
            4 | 5 => AccessCategory::Vi,
            6 | 7 => AccessCategory::Vo,
            _ => AccessCategory::Be,
        }
    }

    pub fn name(self) -> &'static str {
        ["vo", "vi", "be", "bk"][self as usize]
    }
}

/// DSCP → 802.1d user priority per RFC 8325 as Linux `cfg80211_classify8021d` implements it.
pub fn dscp_to_user_priority(dscp: u8) -> u8 {
    match dscp {
        10 | 12 | 14 | 16 => 0,
        18 | 20 | 22 => 3,
        24 | 26 | 28 | 30 => 4,
        44 | 46 => 6,
        48 => 7,
        d => (d >> 3) & 7,
    }
}

/// EDCA parameters of one AC (or the DCF).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EdcaParams {
    pub aifsn: u8,
    pub cw_min: u32,
    pub cw_max: u32,
    /// 0 = one PSDU (plus its response) per channel access.
    pub txop_limit: SimDuration,
}

/// Access status of an EDCAF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    NotRequested,
    Requested,
}

/// The backoff state machine of one EDCAF.
#[derive(Clone, Debug)]
pub struct Edcaf {
    pub params: EdcaParams,
    /// EDCA (QoS) counts the last AIFS slot boundary; DCF does not.
    pub qos: bool,
    /// The consecutive failure that resets the CW to CWmin instead of doubling it (see
    /// [`Edcaf::end_txop`]); the station retry count (QSRC) is also reset on success.
    pub retry_limit: u32,
    cw: u32,
    slots: u32,
    b_start: SimTime,
    retries: u32,
    pub access: Access,
    /// When access was last requested (the start of the wait a transmit event reports as access delay).
    pub requested_at: SimTime,
}

impl Edcaf {
    /// A fresh EDCAF with CW = CWmin and a first backoff drawn, as ns-3's `Txop::DoInitialize`.
    pub fn new(params: EdcaParams, qos: bool, retry_limit: u32, rng: &mut Rng) -> Self {
        let mut e = Edcaf { params, qos, retry_limit, cw: params.cw_min, slots: 0, b_start: SimTime::ZERO, retries: 0, access: Access::NotRequested, requested_at: SimTime::ZERO };
        e.slots = rng.uniform_inclusive(e.cw);
        e
    }

    pub fn cw(&self) -> u32 {
        self.cw
    }
    /// Remaining backoff slots (as of the last freeze).
    pub fn backoff_slots(&self) -> u32 {
        self.slots
    }

    /// When counting starts, given the station's `grant` (idle reference + SIFS).
    #[inline]
    pub fn backoff_start(&self, grant: SimTime, slot: SimDuration) -> SimTime {
        self.b_start.max(grant + slot * self.params.aifsn as u64)
    }

    /// When the counter reaches zero if the medium stays idle.
    #[inline]
    pub fn backoff_end(&self, grant: SimTime, slot: SimDuration) -> SimTime {
        self.backoff_start(grant, slot) + slot * self.slots as u64
    }

    /// The medium turned busy at `now`: consume the idle slots counted since the backoff started.
    pub fn freeze(&mut self, now: SimTime, grant: SimTime, slot: SimDuration) {
        let s = self.backoff_start(grant, slot);
        if s <= now {
            let elapsed = (now - s).as_ns() / slot.as_ns();
            let n = (elapsed + self.qos as u64).min(self.slots as u64) as u32;
            self.slots -= n;
            self.b_start = s + slot * n as u64;
        }
    }

    /// A frame was queued for this AC. `queue_was_empty`: the AC had nothing before. `medium_idle`:
    /// `Some(grant)` when the medium is idle for this station (grant = idle reference + SIFS).
    pub fn request(&mut self, now: SimTime, queue_was_empty: bool, medium_idle: Option<SimTime>, slot: SimDuration, rng: &mut Rng) {
        if self.access == Access::Requested {
            return;
        }
        self.access = Access::Requested;
        self.requested_at = now;
        if !queue_was_empty {
            return;
        }
        // A post-backoff that already ran out while the medium stayed idle counts as finished.
        if let Some(grant) = medium_idle {
            if self.backoff_end(grant, slot) <= now {
                self.slots = 0;
            }
        }
        if self.slots != 0 {
            return;
        }
        match medium_idle {
            Some(grant) => {
                let aifs_end = grant + slot * self.params.aifsn as u64;
                if self.qos {
                    // Next boundary of the slot grid that starts at AIFS end (ns-3 EDCA rule).
                    let k = if now <= aifs_end { 0 } else { (now - aifs_end).as_ns().div_ceil(slot.as_ns()) };
                    self.b_start = aifs_end + slot * k;
                } else {
                    // 802.11 DCF: transmit at once if the medium has been idle for DIFS already.
                    self.b_start = aifs_end.max(now);
                }
            }
            None => {
                self.slots = rng.uniform_inclusive(self.cw);
            }
        }
    }

    /// The TXOP ended (`success`: ACK or BlockAck received). Updates CW and starts post-backoff.
    pub fn end_txop(&mut self, now: SimTime, success: bool, rng: &mut Rng) {
        if success {
            self.reset_cw();
        } else {
            self.failed_cw();
        }
        self.restart_backoff(now, rng);
    }

    /// This EDCAF lost an internal collision to a higher-priority AC of the same station.
    pub fn internal_collision(&mut self, now: SimTime, rng: &mut Rng) {
        self.failed_cw();
        self.restart_backoff(now, rng);
    }

    /// Lost an internal collision and contends again at once for the same frame, whose wait (since
    /// [`Edcaf::requested_at`]) goes on.
    pub fn lose_internal_collision(&mut self, now: SimTime, slot: SimDuration, rng: &mut Rng) {
        let since = self.requested_at;
        self.internal_collision(now, rng);
        self.request(now, false, None, slot, rng);
        self.requested_at = since;
    }

    /// Access released without a transmission (e.g. the queue emptied): count again from `now`.
    pub fn release(&mut self, now: SimTime) {
        self.access = Access::NotRequested;
        self.b_start = self.b_start.max(now);
    }

    fn restart_backoff(&mut self, now: SimTime, rng: &mut Rng) {
        self.access = Access::NotRequested;
        self.slots = rng.uniform_inclusive(self.cw);
        self.b_start = now;
    }

    fn reset_cw(&mut self) {
        self.cw = self.params.cw_min;
        self.retries = 0;
    }

    /// 802.11-2020 §10.23.2.2: QSRC += 1, CW = min(CWmax, 2^QSRC·(CWmin+1) − 1); the `retry_limit`-th
    /// consecutive failure resets QSRC and CW instead (the standard's, and ns-3's, QSRC limit L is
    /// `retry_limit` = L + 1: QSRC stops at L and the next failure resets).
    fn failed_cw(&mut self) {
        self.retries += 1;
        if self.retries >= self.retry_limit {
            self.reset_cw();
        } else {
            let w = (self.params.cw_min as u64 + 1) << self.retries.min(20);
            self.cw = (w - 1).min(self.params.cw_max as u64) as u32;
        }
    }
}

#[cfg(test)]
mod tests;
