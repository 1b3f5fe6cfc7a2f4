//! Helpers for the script tests: a sender's bookkeeping ([`Flow`]) so that a test reads as a
//! timeline of sends, ACKs and losses, and hand-made rate samples ([`Samples`]) for rules that depend
//! on exact bandwidth values.

use super::*;
use std::collections::VecDeque;

pub const MSS: u64 = DEFAULT_MSS;

pub fn t_ms(ms: u64) -> SimTime {
    SimTime::from_ms(ms)
}

pub fn d_ms(ms: u64) -> SimDuration {
    SimDuration::from_ms(ms)
}

pub fn build(p: CcParams) -> AnyCc {
    p.build(MSS, SimTime::ZERO, Rng::derive(1, "test/cc"))
        .expect("valid params")
}

/// One ACK of a full segment with a 40-ms RTT sample, `in_flight` segments in flight before it, and a
/// rate sample that ends `round` (a new round for every distinct `round`) and is app-limited or not.
pub fn one_ack(in_flight: u64, round: u64, app_limited: bool) -> AckEvent {
    AckEvent {
        bytes_acked: MSS,
        rtt: Some(d_ms(40)),
        prior_in_flight: in_flight * MSS,
        bytes_in_flight: MSS,
        rate: RateSample {
            delivered_total: MSS + round * MSS,
            prior_delivered: round * MSS,
            sent_time: SimTime::ZERO,
            delivered: MSS,
            interval: Some(d_ms(40)),
            is_app_limited: app_limited,
        },
    }
}

/// A sender with an infinite backlog of full segments, as a transport would drive a controller.
pub struct Flow {
    rate: DeliveryRateEstimator,
    outstanding: VecDeque<PacketDeliveryState>,
    pub in_flight: u64,
    pub sent: u64,
}

impl Flow {
    pub fn new() -> Self {
        Flow {
            rate: DeliveryRateEstimator::new(SimTime::ZERO),
            outstanding: VecDeque::new(),
            in_flight: 0,
            sent: 0,
        }
    }

    /// Sends `n` segments at `now`, window or not.
    pub fn send(&mut self, cc: &mut impl CongestionControl, now: SimTime, n: u64) {
        for _ in 0..n {
            let st = self.rate.on_sent(now, self.in_flight);
            let ev = SentEvent {
                bytes: MSS,
                prior_in_flight: self.in_flight,
                app_limited: false,
            };
            cc.on_sent(now, &ev);
            self.outstanding.push_back(st);
            self.in_flight += MSS;
            self.sent += 1;
        }
    }

    /// Sends as many segments as the window allows at `now` (ignoring pacing); returns how many.
    pub fn fill(&mut self, cc: &mut impl CongestionControl, now: SimTime) -> u64 {
        let n = cc.cwnd().saturating_sub(self.in_flight).div_ceil(MSS);
        self.send(cc, now, n);
        n
    }

    /// One ACK at `now` for the oldest `n` segments, with RTT sample `rtt`.
    pub fn ack(
        &mut self,
        cc: &mut impl CongestionControl,
        now: SimTime,
        n: u64,
        rtt: Option<SimDuration>,
    ) {
        let prior = self.in_flight;
        let pkts: Vec<_> = (0..n).map_while(|_| self.outstanding.pop_front()).collect();
        let bytes = pkts.len() as u64 * MSS;
        self.in_flight -= bytes;
        let rs = self
            .rate
            .on_ack(now, pkts.into_iter().map(|p| (p, MSS)), None);
        let ev = AckEvent {
            bytes_acked: bytes,
            rtt,
            prior_in_flight: prior,
            bytes_in_flight: self.in_flight,
            rate: rs.expect("acked something"),
        };
        cc.on_ack(now, &ev);
    }

    /// One ACK per segment for the oldest `n`, all at `now`.
    pub fn ack_each(
        &mut self,
        cc: &mut impl CongestionControl,
        now: SimTime,
        n: u64,
        rtt: SimDuration,
    ) {
        for _ in 0..n {
            self.ack(cc, now, 1, Some(rtt));
        }
    }

    /// The oldest `n` segments are declared lost at `now`.
    pub fn lose(&mut self, cc: &mut impl CongestionControl, now: SimTime, n: u64) {
        let mut last = SimTime::ZERO;
        for _ in 0..n {
            let p = self.outstanding.pop_front().expect("in flight");
            last = p.sent_time;
            self.in_flight -= MSS;
        }
        cc.on_loss(
            now,
            &LossEvent {
                bytes_lost: n * MSS,
                largest_lost_sent: last,
            },
        );
    }

    /// A lossless round trip on an unconstrained path, ACK-clocked like a bulk sender: every segment in
    /// flight is ACKed one by one `rtt` after `now`, and the window is refilled after each ACK (it is
    /// filled first if nothing is in flight). Returns the time of the ACKs.
    pub fn round(
        &mut self,
        cc: &mut impl CongestionControl,
        now: SimTime,
        rtt: SimDuration,
    ) -> SimTime {
        if self.in_flight == 0 {
            self.fill(cc, now);
        }
        let t = now + rtt;
        for _ in 0..self.outstanding.len() {
            self.ack(cc, t, 1, Some(rtt));
            self.fill(cc, t);
        }
        t
    }

    /// ACKs everything in flight one by one at `now` without sending more (the sender goes idle).
    pub fn drain(&mut self, cc: &mut impl CongestionControl, now: SimTime, rtt: SimDuration) {
        let n = self.outstanding.len() as u64;
        self.ack_each(cc, now, n, rtt);
    }
}

/// Hand-made ACKs with exact delivery-rate samples, for BBR's bandwidth rules.
pub struct Samples {
    pub delivered: u64,
    /// `delivered` after the last round-ending ACK.
    round_total: u64,
    last_sent: SimTime,
}

impl Samples {
    pub fn new() -> Self {
        Samples {
            delivered: 0,
            round_total: 0,
            last_sent: SimTime::ZERO,
        }
    }

    /// An ACK at `now` of `bytes` delivered over `bytes/bw`, for data sent `rtt` earlier, with
    /// `in_flight` bytes before and after. If `new_round`, the data was sent after the previous
    /// round-ending ACK (so this ACK ends a round); otherwise before it.
    pub fn ack(
        &mut self,
        now: SimTime,
        bw: BitRate,
        bytes: u64,
        rtt: SimDuration,
        in_flight: (u64, u64),
        new_round: bool,
    ) -> AckEvent {
        let prior_delivered = if new_round {
            self.delivered
        } else {
            self.round_total.saturating_sub(1)
        };
        self.delivered += bytes;
        if new_round {
            self.round_total = self.delivered;
        }
        let sent = SimTime::from_ns(now.as_ns().saturating_sub(rtt.as_ns()));
        self.last_sent = sent.max(SimTime::from_ns(self.last_sent.as_ns() + 1));
        AckEvent {
            bytes_acked: bytes,
            rtt: Some(rtt),
            prior_in_flight: in_flight.0,
            bytes_in_flight: in_flight.1,
            rate: RateSample {
                delivered_total: self.delivered,
                prior_delivered,
                sent_time: self.last_sent,
                delivered: self.delivered - prior_delivered,
                interval: Some(bw.tx_time(self.delivered - prior_delivered)),
                is_app_limited: false,
            },
        }
    }
}
