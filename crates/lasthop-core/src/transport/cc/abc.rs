//! The sender half of ABC, Accel-Brake Control (P. Goyal, A. Agarwal, R. Netravali, M. Alizadeh,
//! H. Balakrishnan, "ABC: A Simple Explicit Congestion Controller for Wireless Networks", NSDI'20), as
//! the ns-3 `TcpABC` of Zhuge's baseline runs it (zhuge.md §5.3, baselines.md §4.5 MF). The router
//! half, which marks each packet *accelerate* (ECT(1)) or *brake* (ECT(0)), is
//! [`crate::mech::zhuge::abc`].
//!
//! Per ACK carrying an echoed mark ([`CongestionControl::on_ecn_echo`]):
//! * accelerate: `cwnd += MSS`;
//! * brake: `cwnd −= MSS` while `cwnd > (min_cwnd + 1)·MSS`, else `cwnd = min_cwnd·MSS` (4 MSS);
//! * CE (never set by the ABC router) counts as a brake; no mark does nothing.
//!
//! Pacing at `2·cwnd/RTT` with the latest RTT sample (1 Mbit/s before the first one). Losses do not
//! change the window (the code's `GetSsThresh` returns cwnd); a timeout sets it to one MSS, as ns-3's
//! socket does for every controller.
//!
//! Choices: the paper's additive increase (`+MSS/cwnd` per ACK, for fairness across ABC flows) is lost
//! to integer division in the code; `additive_increase = true` restores it. The dual window for
//! non-ABC bottlenecks (the paper's `min(w_abc, w_cubic)`) is not modelled (baselines.md MF tier).
//!
//! Accelerates grow the window only while it is in use (lasthop: below twice the most bytes in flight
//! over the last two rounds, Linux's `tcp_is_cwnd_limited`, [`super::CwndUse`]): the router
//! accelerates a flow whose link is idle, so an app-limited video flow otherwise grows its window
//! without bound and sends its next frames at it.
//!
//! Wiring: the data segments of an ABC sender go out as ECT(1) and the client echoes each data
//! segment's codepoint in its ACK; the transport calls [`CongestionControl::on_ecn_echo`] once per
//! ACK, after `on_ack`. With delayed ACKs only the codepoint of the segment that triggered the ACK is
//! echoed, so ABC runs want `delayed_ack = false` (the code's `DelAckCount = 1`).

use super::{check, AckEvent, CcError, CongestionControl, CwndUse, LossEvent};
use crate::packet::Ecn;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `cc = { type = "abc", initial_window = 10, min_cwnd = 4, additive_increase = false }`; every field
/// is optional.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AbcParams {
    /// Initial window, segments (ns-3 `InitialCwnd` 10).
    pub initial_window: u32,
    /// Smallest window a brake leaves, segments. Default 4 (the code).
    pub min_cwnd: u32,
    /// Add `MSS·bytes_acked/cwnd` per ACK (the paper's additive increase). Default false (the code).
    pub additive_increase: bool,
}

impl Default for AbcParams {
    fn default() -> Self {
        AbcParams { initial_window: 10, min_cwnd: 4, additive_increase: false }
    }
}

impl AbcParams {
    pub fn validate(&self) -> Result<(), CcError> {
        check(self.initial_window >= 1, "initial_window", "must be at least 1 segment")?;
        check(self.min_cwnd >= 1, "min_cwnd", "must be at least 1 segment")
    }
}

/// Counters and state for `stats()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AbcStats {
    pub cwnd: u64,
    pub accelerates: u64,
    pub brakes: u64,
    pub latest_rtt_ns: Option<u64>,
    pub pacing_rate_bps: u64,
    pub losses: u64,
    pub rtos: u64,
}

/// Pacing rate before the first RTT sample (the code's 1 Mbit/s).
const INITIAL_PACING: BitRate = BitRate::from_mbps(1);

/// The ABC sender.
#[derive(Clone, Debug)]
pub struct Abc {
    mss: u64,
    min_cwnd: u64,
    additive: bool,
    cwnd: u64,
    latest_rtt: Option<SimDuration>,
    cwnd_use: CwndUse,
    accelerates: u64,
    brakes: u64,
    losses: u64,
    rtos: u64,
}

impl Abc {
    pub fn new(p: &AbcParams, mss: u64) -> Self {
        Abc {
            mss,
            min_cwnd: p.min_cwnd as u64 * mss,
            additive: p.additive_increase,
            cwnd: p.initial_window as u64 * mss,
            latest_rtt: None,
            cwnd_use: CwndUse::default(),
            accelerates: 0,
            brakes: 0,
            losses: 0,
            rtos: 0,
        }
    }
}

impl CongestionControl for Abc {
    fn on_ack(&mut self, _now: SimTime, ack: &AckEvent) {
        if let Some(r) = ack.rtt.filter(|r| !r.is_zero()) {
            self.latest_rtt = Some(r);
        }
        self.cwnd_use.on_ack(ack);
        if self.additive && ack.bytes_acked > 0 && self.cwnd_use.limited(self.cwnd) {
            self.cwnd += super::mul_div(self.mss, ack.bytes_acked, self.cwnd.max(1));
        }
    }

    fn on_ecn_echo(&mut self, _now: SimTime, ecn: Ecn) {
        match ecn {
            Ecn::Ect1 if !self.cwnd_use.limited(self.cwnd) => self.accelerates += 1,
            Ecn::Ect1 => {
                self.accelerates += 1;
                self.cwnd += self.mss;
            }
            Ecn::Ect0 | Ecn::Ce => {
                self.brakes += 1;
                self.cwnd = if self.cwnd > self.min_cwnd + self.mss { self.cwnd - self.mss } else { self.min_cwnd };
            }
            Ecn::NotEct => {}
        }
    }

    fn on_loss(&mut self, _now: SimTime, _loss: &LossEvent) {
        self.losses += 1;
    }

    fn on_rto(&mut self, _now: SimTime) {
        self.rtos += 1;
        self.cwnd = self.mss;
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        Some(match self.latest_rtt {
            None => INITIAL_PACING,
            Some(r) => BitRate::from_bps(super::rate_bps(2 * self.cwnd, r)),
        })
    }

    fn stats(&self) -> serde_json::Value {
        let s = AbcStats {
            cwnd: self.cwnd,
            accelerates: self.accelerates,
            brakes: self.brakes,
            latest_rtt_ns: self.latest_rtt.map(|r| r.as_ns()),
            pacing_rate_bps: self.pacing_rate().map_or(0, |r| r.bps()),
            losses: self.losses,
            rtos: self.rtos,
        };
        serde_json::to_value(s).expect("plain struct")
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::{CcParams, CongestionControl};
    use super::*;

    fn abc() -> super::super::AnyCc {
        build(CcParams::Abc(AbcParams::default()))
    }

    #[test]
    fn config_table_selects_abc() {
        #[derive(Deserialize)]
        struct Doc {
            cc: CcParams,
        }
        let c: Doc = toml::from_str("cc = { type = \"abc\" }").unwrap();
        assert_eq!(c.cc, CcParams::Abc(AbcParams::default()));
        let c: Doc = toml::from_str("cc = { type = \"abc\", min_cwnd = 2, additive_increase = true }").unwrap();
        assert_eq!(c.cc, CcParams::Abc(AbcParams { min_cwnd: 2, additive_increase: true, ..Default::default() }));
        assert!(toml::from_str::<Doc>("cc = { type = \"abc\", eta = 1 }").is_err());
        assert_eq!(AbcParams { min_cwnd: 0, ..Default::default() }.validate().unwrap_err().field, "min_cwnd");
    }

    #[test]
    fn accelerate_and_brake_move_the_window_one_segment() {
        let mut cc = abc();
        assert_eq!(cc.cwnd(), 10 * MSS);
        let mut f = Flow::new();
        f.fill(&mut cc, t_ms(0));
        f.ack(&mut cc, t_ms(50), 1, Some(d_ms(50))); // the window is in use
        cc.on_ecn_echo(t_ms(1), Ecn::Ect1);
        cc.on_ecn_echo(t_ms(1), Ecn::Ect1);
        assert_eq!(cc.cwnd(), 12 * MSS);
        cc.on_ecn_echo(t_ms(2), Ecn::Ect0);
        assert_eq!(cc.cwnd(), 11 * MSS);
        cc.on_ecn_echo(t_ms(2), Ecn::NotEct);
        assert_eq!(cc.cwnd(), 11 * MSS, "an unmarked ACK changes nothing");
        cc.on_ecn_echo(t_ms(2), Ecn::Ce);
        assert_eq!(cc.cwnd(), 10 * MSS, "CE brakes");
    }

    #[test]
    fn accelerates_grow_only_a_window_in_use() {
        let mut cc = abc();
        // 10-segment window: 2 segments in flight do not use it, 6 do (10 < 2·6).
        cc.on_ack(t_ms(40), &one_ack(2, 0, false));
        cc.on_ecn_echo(t_ms(40), Ecn::Ect1);
        assert_eq!(cc.cwnd(), 10 * MSS);
        cc.on_ecn_echo(t_ms(40), Ecn::Ect0);
        assert_eq!(cc.cwnd(), 9 * MSS, "brakes still apply");
        cc.on_ack(t_ms(41), &one_ack(6, 1, false));
        cc.on_ecn_echo(t_ms(41), Ecn::Ect1);
        assert_eq!(cc.cwnd(), 10 * MSS);
    }

    #[test]
    fn brakes_stop_at_four_segments() {
        let mut cc = abc();
        let mut seen = vec![];
        for _ in 0..10 {
            cc.on_ecn_echo(t_ms(1), Ecn::Ect0);
            seen.push(cc.cwnd() / MSS);
        }
        assert_eq!(seen, vec![9, 8, 7, 6, 5, 4, 4, 4, 4, 4]);
        // From 4.5 segments (after an additive step) a brake lands on 4, not 3.5.
        let mut cc = Abc::new(&AbcParams::default(), MSS);
        cc.cwnd = 4 * MSS + MSS / 2;
        cc.on_ecn_echo(t_ms(1), Ecn::Ect0);
        assert_eq!(cc.cwnd(), 4 * MSS);
    }

    #[test]
    fn acks_losses_and_timeouts() {
        let mut cc = abc();
        let mut f = Flow::new();
        f.fill(&mut cc, t_ms(0));
        // Unmarked ACKs do not grow the window (the code's additive term is lost to integer division).
        f.ack_each(&mut cc, t_ms(50), 5, d_ms(50));
        assert_eq!(cc.cwnd(), 10 * MSS);
        f.lose(&mut cc, t_ms(60), 1);
        assert_eq!(cc.cwnd(), 10 * MSS, "loss keeps the window (ssthresh = cwnd)");
        cc.on_rto(t_ms(300));
        assert_eq!(cc.cwnd(), MSS);
        // With the paper's additive increase: + MSS·acked/cwnd.
        let mut cc = build(CcParams::Abc(AbcParams { additive_increase: true, ..Default::default() }));
        let mut f = Flow::new();
        f.fill(&mut cc, t_ms(0));
        f.ack(&mut cc, t_ms(50), 1, Some(d_ms(50)));
        assert_eq!(cc.cwnd(), 10 * MSS + MSS / 10);
    }

    #[test]
    fn pacing_is_twice_the_window_per_latest_rtt() {
        let mut cc = abc();
        assert_eq!(cc.pacing_rate(), Some(BitRate::from_mbps(1)));
        let mut f = Flow::new();
        f.fill(&mut cc, t_ms(0));
        f.ack(&mut cc, t_ms(40), 1, Some(d_ms(40)));
        // 2 · 14 480 B · 8 / 40 ms = 5.792 Mbit/s.
        assert_eq!(cc.pacing_rate(), Some(BitRate::from_bps(5_792_000)));
        f.ack(&mut cc, t_ms(100), 1, Some(d_ms(80)));
        assert_eq!(cc.pacing_rate(), Some(BitRate::from_bps(2_896_000)), "the latest sample, not a mean");
        assert_eq!(cc.stats()["cwnd"], 10 * MSS);
    }

    #[test]
    fn other_controllers_ignore_ecn_echoes() {
        for p in [CcParams::default(), CcParams::Copa(Default::default()), CcParams::NewReno(Default::default())] {
            let mut cc = build(p);
            let w = cc.cwnd();
            cc.on_ecn_echo(t_ms(1), Ecn::Ect0);
            cc.on_ecn_echo(t_ms(1), Ecn::Ect1);
            assert_eq!(cc.cwnd(), w);
        }
    }
}
