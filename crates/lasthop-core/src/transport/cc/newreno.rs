//! NewReno, the reference window controller (RFC 5681 §3.1 with RFC 6582's one reduction per window),
//! in bytes as in quinn-proto's `NewReno`.
//!
//! * Slow start while `cwnd < ssthresh`: `cwnd += bytes_acked` (Linux `tcp_slow_start`: capped at
//!   ssthresh, the rest of the ACK counts toward congestion avoidance).
//! * Congestion avoidance: one MSS per window of acknowledged bytes (RFC 5681 eq. 3, byte counting).
//! * Congestion event: `ssthresh = max(cwnd / 2, 2·MSS)`, `cwnd = ssthresh`. Timeout: the same ssthresh
//!   (unless the previous timeout has not been recovered from yet), `cwnd = 1·MSS` (RFC 5681 eq. 4 and
//!   the loss window).
//!
//! Choices: the reduction uses cwnd, not FlightSize (Linux `tcp_reno_ssthresh`, quinn); no growth during
//! recovery or on app-limited ACKs (module docs of [`super`]); optional Linux-style pacing.

use super::{check, linux_pacing_rate, AckEvent, CaState, CcError, CongestionControl, LossEvent};
use super::{Recovery, SmoothedRtt};
use crate::time::SimTime;
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `cc = { type = "newreno", initial_window = 10, pacing = false }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NewRenoParams {
    /// Initial window in segments (RFC 6928 and Linux `TCP_INIT_CWND`: 10).
    pub initial_window: u32,
    /// Pace at Linux's `tcp_update_pacing_rate` (2× cwnd/srtt in slow start, 1.2× after). Default
    /// false: Linux paces Reno/Cubic only under the `fq` qdisc.
    pub pacing: bool,
}

impl Default for NewRenoParams {
    fn default() -> Self {
        NewRenoParams {
            initial_window: 10,
            pacing: false,
        }
    }
}

impl NewRenoParams {
    pub fn validate(&self) -> Result<(), CcError> {
        check(
            self.initial_window >= 1,
            "initial_window",
            "must be at least 1 segment",
        )
    }
}

/// Counters and state for `stats()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NewRenoStats {
    pub state: &'static str,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub congestion_events: u64,
    pub rtos: u64,
}

/// RFC 5681 NewReno.
#[derive(Clone, Debug)]
pub struct NewReno {
    mss: u64,
    pacing: bool,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance since the last one-MSS increase.
    ca_acked: u64,
    recovery: Recovery,
    srtt: SmoothedRtt,
    congestion_events: u64,
    rtos: u64,
}

impl NewReno {
    pub fn new(p: &NewRenoParams, mss: u64) -> Self {
        NewReno {
            mss,
            pacing: p.pacing,
            cwnd: p.initial_window as u64 * mss,
            ssthresh: u64::MAX,
            ca_acked: 0,
            recovery: Recovery::default(),
            srtt: SmoothedRtt::default(),
            congestion_events: 0,
            rtos: 0,
        }
    }

    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    pub fn ca_state(&self) -> CaState {
        self.recovery.state()
    }

    fn reduce(&mut self) {
        self.ssthresh = (self.cwnd / 2).max(2 * self.mss);
        self.ca_acked = 0;
    }
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, _now: SimTime, ack: &AckEvent) {
        self.srtt.update(ack.rtt);
        self.recovery.on_ack(ack.rate.sent_time);
        if self.recovery.in_recovery() || ack.rate.is_app_limited {
            return;
        }
        let mut acked = ack.bytes_acked;
        if self.cwnd < self.ssthresh {
            let grow = acked.min(self.ssthresh - self.cwnd);
            self.cwnd += grow;
            acked -= grow;
        }
        if acked > 0 && self.cwnd >= self.ssthresh {
            self.ca_acked += acked;
            if self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
    }

    fn on_loss(&mut self, now: SimTime, loss: &LossEvent) {
        if self.recovery.on_loss(now, loss.largest_lost_sent) {
            self.congestion_events += 1;
            self.reduce();
            self.cwnd = self.ssthresh;
        }
    }

    fn on_rto(&mut self, now: SimTime) {
        self.rtos += 1;
        if self.recovery.on_rto(now) {
            self.reduce();
        }
        self.cwnd = self.mss;
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        self.pacing
            .then(|| linux_pacing_rate(self.cwnd, self.ssthresh, self.srtt.get()))
            .flatten()
    }

    fn stats(&self) -> serde_json::Value {
        let state = match self.recovery.state() {
            CaState::Open if self.cwnd < self.ssthresh => "slow_start",
            CaState::Open => "congestion_avoidance",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        };
        let s = NewRenoStats {
            state,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            congestion_events: self.congestion_events,
            rtos: self.rtos,
        };
        serde_json::to_value(s).expect("plain struct")
    }
}
