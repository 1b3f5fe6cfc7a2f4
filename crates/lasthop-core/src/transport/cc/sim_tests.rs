//! Closed-loop sanity harness: one bulk flow through one fixed-rate drop-tail bottleneck, simulated
//! packet by packet without the engine, for 30 s per controller.
//!
//! ```text
//!   sender ──(no delay)──▶ drop-tail FIFO ──20 Mbit/s──▶ 20 ms ──▶ receiver ──ACK every packet──▶ 20 ms ──▶ sender
//! ```
//!
//! The sender has an infinite backlog of 1448-byte segments, sends while `in_flight + MSS ≤ cwnd` and
//! the pacing clock allows (`next = max(next, now) + MSS/rate`: no credit accumulates while idle). The
//! receiver ACKs every segment. A segment is declared lost when one sent three segments after it is
//! ACKed (RFC 6675's DupThresh with SACK); lost data is not retransmitted, the next segments carry new
//! data, so goodput = bytes leaving the bottleneck. The retransmission timer is RFC 6298's with Linux's
//! 200 ms minimum. Wire size = MSS, so utilisation is goodput over link rate.
//!
//! Expectations (issue): BBR ≥ 90 % utilisation and a standing queue under one RTT in a deep buffer;
//! Cubic ≥ 95 % and fills the deep buffer; Copa ≥ 80 % with low delay.

use super::testkit::MSS;
use super::*;
use std::collections::{BTreeMap, VecDeque};

struct Path {
    rate: BitRate,
    /// Propagation round trip, without serialisation.
    base_rtt: SimDuration,
    buffer_bytes: u64,
    duration: SimDuration,
    /// Start of the measurement window for the steady-state figures.
    warmup: SimDuration,
}

impl Path {
    fn bdp_bytes(&self) -> u64 {
        mul_div(self.rate.bps(), self.base_rtt.as_ns(), 8_000_000_000)
    }

    fn new(bdp_multiple: u64) -> Path {
        let mut p = Path {
            rate: BitRate::from_mbps(20),
            base_rtt: SimDuration::from_ms(40),
            buffer_bytes: 0,
            duration: SimDuration::from_secs(30),
            warmup: SimDuration::from_secs(5),
        };
        p.buffer_bytes = bdp_multiple * p.bdp_bytes();
        p
    }
}

#[derive(Debug, Default)]
struct Outcome {
    /// Goodput / capacity over the whole run.
    util_all: f64,
    /// The same after the warm-up.
    util_steady: f64,
    /// Queueing delay of packets arriving after the warm-up, ms.
    qdelay_mean_ms: f64,
    qdelay_p50_ms: f64,
    qdelay_p95_ms: f64,
    qdelay_max_ms: f64,
    drops: u64,
    sent: u64,
    rtos: u64,
}

struct InFlight {
    state: PacketDeliveryState,
}

/// The bottleneck: departure times of the packets it holds (FIFO, so they leave in order).
struct Bottleneck {
    departures: VecDeque<SimTime>,
    last_departure: SimTime,
}

impl Bottleneck {
    /// Enqueues at `now`; `Some((start of service, departure))` or `None` if dropped.
    fn offer(&mut self, now: SimTime, path: &Path) -> Option<(SimTime, SimTime)> {
        while self.departures.front().is_some_and(|&d| d <= now) {
            self.departures.pop_front();
        }
        if (self.departures.len() as u64 + 1) * MSS > path.buffer_bytes {
            return None;
        }
        let start = self.last_departure.max(now);
        let depart = start + path.rate.tx_time(MSS);
        self.last_departure = depart;
        self.departures.push_back(depart);
        Some((start, depart))
    }
}

/// RFC 6298 retransmission timer state.
struct Rto {
    srtt: Option<SimDuration>,
    rttvar: SimDuration,
    backoff: u32,
}

impl Rto {
    fn sample(&mut self, r: SimDuration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = SimDuration::from_ns(s.as_ns().abs_diff(r.as_ns()));
                self.rttvar = SimDuration::from_ns((self.rttvar.as_ns() * 3 + diff.as_ns()) / 4);
                self.srtt = Some(SimDuration::from_ns((s.as_ns() * 7 + r.as_ns()) / 8));
            }
        }
        self.backoff = 0;
    }

    fn timeout(&self) -> SimDuration {
        let base = match self.srtt {
            None => SimDuration::from_secs(1),
            Some(s) => (s + self.rttvar * 4).max(SimDuration::from_ms(200)),
        };
        base * (1u64 << self.backoff.min(6))
    }
}

struct Sender {
    next_seq: u64,
    outstanding: BTreeMap<u64, InFlight>,
    in_flight: u64,
    rate: DeliveryRateEstimator,
    next_pace: SimTime,
    last_progress: SimTime,
    rto: Rto,
    min_rtt: Option<SimDuration>,
}

struct Harness<'a> {
    path: &'a Path,
    cc: AnyCc,
    tx: Sender,
    link: Bottleneck,
    /// (ACK arrival, seq, send time) in arrival order.
    acks: VecDeque<(SimTime, u64, SimTime)>,
    out: Outcome,
    delivered_all: u64,
    delivered_steady: u64,
    qdelays: Vec<SimDuration>,
}

impl<'a> Harness<'a> {
    fn new(path: &'a Path, cc: AnyCc) -> Self {
        Harness {
            path,
            cc,
            tx: Sender {
                next_seq: 0,
                outstanding: BTreeMap::new(),
                in_flight: 0,
                rate: DeliveryRateEstimator::new(SimTime::ZERO),
                next_pace: SimTime::ZERO,
                last_progress: SimTime::ZERO,
                rto: Rto {
                    srtt: None,
                    rttvar: SimDuration::ZERO,
                    backoff: 0,
                },
                min_rtt: None,
            },
            link: Bottleneck {
                departures: VecDeque::new(),
                last_departure: SimTime::ZERO,
            },
            acks: VecDeque::new(),
            out: Outcome::default(),
            delivered_all: 0,
            delivered_steady: 0,
            qdelays: Vec::new(),
        }
    }

    fn can_send(&self, now: SimTime) -> bool {
        self.tx.in_flight + MSS <= self.cc.cwnd().max(MSS)
            && (self.cc.pacing_rate().is_none() || self.tx.next_pace <= now)
    }

    fn send_one(&mut self, now: SimTime) {
        let seq = self.tx.next_seq;
        self.tx.next_seq += 1;
        let prior = self.tx.in_flight;
        if prior == 0 {
            self.tx.last_progress = now;
        }
        let state = self.tx.rate.on_sent(now, prior);
        self.cc.on_sent(
            now,
            &SentEvent {
                bytes: MSS,
                prior_in_flight: prior,
                app_limited: false,
            },
        );
        self.tx.outstanding.insert(seq, InFlight { state });
        self.tx.in_flight += MSS;
        self.out.sent += 1;
        if let Some(r) = self.cc.pacing_rate() {
            self.tx.next_pace = self.tx.next_pace.max(now) + r.tx_time(MSS);
        }
        match self.link.offer(now, self.path) {
            None => self.out.drops += 1,
            Some((start, depart)) => {
                self.acks.push_back((depart + self.path.base_rtt, seq, now));
                self.account(now, start, depart);
            }
        }
    }

    fn account(&mut self, arrival: SimTime, start: SimTime, depart: SimTime) {
        if depart <= SimTime::ZERO + self.path.duration {
            self.delivered_all += MSS;
            if depart >= SimTime::ZERO + self.path.warmup {
                self.delivered_steady += MSS;
            }
        }
        if arrival >= SimTime::ZERO + self.path.warmup {
            self.qdelays.push(start - arrival);
        }
    }

    fn on_ack(&mut self, now: SimTime, seq: u64, sent: SimTime) {
        let Some(p) = self.tx.outstanding.remove(&seq) else {
            return;
        };
        let prior = self.tx.in_flight;
        self.tx.in_flight -= MSS;
        let rtt = now - sent;
        self.tx.rto.sample(rtt);
        self.tx.min_rtt = Some(self.tx.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.tx.last_progress = now;
        // DupThresh 3: everything three or more segments below `seq` is lost.
        let lost: Vec<u64> = self
            .tx
            .outstanding
            .range(..seq.saturating_sub(2))
            .map(|(&s, _)| s)
            .collect();
        if !lost.is_empty() {
            let mut largest = SimTime::ZERO;
            for s in &lost {
                let l = self.tx.outstanding.remove(s).expect("listed");
                largest = largest.max(l.state.sent_time);
            }
            self.tx.in_flight -= lost.len() as u64 * MSS;
            let ev = LossEvent {
                bytes_lost: lost.len() as u64 * MSS,
                largest_lost_sent: largest,
            };
            self.cc.on_loss(now, &ev);
        }
        let rs = self
            .tx
            .rate
            .on_ack(now, [(p.state, MSS)], self.tx.min_rtt)
            .expect("one packet");
        let ev = AckEvent {
            bytes_acked: MSS,
            rtt: Some(rtt),
            prior_in_flight: prior,
            bytes_in_flight: self.tx.in_flight,
            rate: rs,
        };
        self.cc.on_ack(now, &ev);
    }

    fn on_rto(&mut self, now: SimTime) {
        self.tx.outstanding.clear();
        self.tx.in_flight = 0;
        self.tx.rto.backoff += 1;
        self.tx.last_progress = now;
        self.out.rtos += 1;
        self.cc.on_rto(now);
    }

    /// The next time something happens, if before the end.
    fn next_event(&self, now: SimTime) -> Option<SimTime> {
        let mut t = self.acks.front().map(|a| a.0);
        let window_open = self.tx.in_flight + MSS <= self.cc.cwnd().max(MSS);
        if window_open && self.cc.pacing_rate().is_some() {
            t = Some(t.map_or(self.tx.next_pace, |x| x.min(self.tx.next_pace)));
        }
        if self.tx.in_flight > 0 {
            let rto = self.tx.last_progress + self.tx.rto.timeout();
            t = Some(t.map_or(rto, |x| x.min(rto)));
        }
        t.map(|t| t.max(now))
            .filter(|&t| t <= SimTime::ZERO + self.path.duration)
    }

    fn run(mut self) -> (Outcome, AnyCc) {
        let mut now = SimTime::ZERO;
        loop {
            while self.acks.front().is_some_and(|a| a.0 <= now) {
                let (_, seq, sent) = self.acks.pop_front().expect("front");
                self.on_ack(now, seq, sent);
            }
            if self.tx.in_flight > 0 && now >= self.tx.last_progress + self.tx.rto.timeout() {
                self.on_rto(now);
            }
            while self.can_send(now) {
                self.send_one(now);
            }
            match self.next_event(now) {
                Some(t) => now = t,
                None => break,
            }
        }
        self.finish()
    }

    fn finish(mut self) -> (Outcome, AnyCc) {
        let p = self.path;
        let cap = |d: SimDuration| p.rate.bps() as f64 * d.as_secs_f64() / 8.0;
        self.out.util_all = self.delivered_all as f64 / cap(p.duration);
        self.out.util_steady = self.delivered_steady as f64 / cap(p.duration - p.warmup);
        let mut q = std::mem::take(&mut self.qdelays);
        q.sort();
        if !q.is_empty() {
            let ms = |d: SimDuration| d.as_ms_f64();
            self.out.qdelay_mean_ms = q.iter().map(|&d| ms(d)).sum::<f64>() / q.len() as f64;
            self.out.qdelay_p50_ms = ms(q[q.len() / 2]);
            self.out.qdelay_p95_ms = ms(q[q.len() * 95 / 100]);
            self.out.qdelay_max_ms = ms(q[q.len() - 1]);
        }
        (self.out, self.cc)
    }
}

fn run(params: CcParams, bdp_multiple: u64) -> (Outcome, AnyCc) {
    let path = Path::new(bdp_multiple);
    let cc = params
        .build(MSS, SimTime::ZERO, Rng::derive(7, "sim/cc"))
        .expect("valid");
    let (out, cc) = Harness::new(&path, cc).run();
    println!(
        "{:<8} buffer {:>2} BDP: util {:.1} % (after 5 s {:.1} %), queue delay mean {:.1} ms, p50 {:.1}, \
         p95 {:.1}, max {:.1}; drops {} of {} ({:.2} %), RTOs {}; final {}",
        match &params {
            CcParams::NewReno(_) => "newreno",
            CcParams::Cubic(_) => "cubic",
            CcParams::Bbr(_) => "bbr",
            CcParams::Copa(_) => "copa",
            CcParams::Abc(_) => "abc",
        },
        bdp_multiple,
        out.util_all * 100.0,
        out.util_steady * 100.0,
        out.qdelay_mean_ms,
        out.qdelay_p50_ms,
        out.qdelay_p95_ms,
        out.qdelay_max_ms,
        out.drops,
        out.sent,
        out.drops as f64 * 100.0 / out.sent.max(1) as f64,
        out.rtos,
        cc.stats(),
    );
    (out, cc)
}

const RTT_MS: f64 = 40.0;

#[test]
fn cubic_fills_the_pipe_and_the_deep_buffer() {
    for bdp in [1, 10] {
        let (o, _) = run(CcParams::Cubic(CubicParams::default()), bdp);
        assert!(o.util_all >= 0.95, "{bdp} BDP: {o:?}");
        assert_eq!(o.rtos, 0, "{o:?}");
        if bdp == 10 {
            // A loss-based controller keeps the buffer mostly full: 10 BDP = 400 ms of queue.
            assert!(o.qdelay_mean_ms > 0.5 * 10.0 * RTT_MS, "{o:?}");
            assert!(o.qdelay_max_ms > 0.9 * 10.0 * RTT_MS, "{o:?}");
        }
    }
}

#[test]
fn newreno_fills_the_pipe_with_a_bdp_of_buffer() {
    let (o, _) = run(CcParams::NewReno(NewRenoParams::default()), 1);
    assert!(o.util_all >= 0.95, "{o:?}");
}

#[test]
fn bbr_fills_the_pipe_without_a_standing_queue() {
    for bdp in [1, 10] {
        let (o, cc) = run(CcParams::Bbr(BbrParams::default()), bdp);
        assert!(o.util_all >= 0.90, "{bdp} BDP: {o:?}");
        if bdp == 10 {
            assert!(o.qdelay_mean_ms < RTT_MS, "{o:?}");
            assert_eq!(
                o.drops, 0,
                "STARTUP's 2.89× overshoot fits in 10 BDP: {o:?}"
            );
        }
        let AnyCc::Bbr(b) = cc else { unreachable!() };
        let est = b.btl_bw().bps() as f64 / 20e6;
        assert!((0.95..1.05).contains(&est), "btl_bw {est:.3} of the link");
        let min_rtt = b.min_rtt().expect("samples").as_ms_f64();
        assert!((40.5..41.0).contains(&min_rtt), "min_rtt {min_rtt} ms");
        assert!(
            b.stats()["probe_rtt_count"].as_u64() >= Some(2),
            "{}",
            b.stats()
        );
    }
}

#[test]
fn copa_fills_the_pipe_with_little_delay() {
    for bdp in [1, 10] {
        let (o, _) = run(CcParams::Copa(CopaParams::default()), bdp);
        assert!(o.util_all >= 0.80, "{bdp} BDP: {o:?}");
        assert!(o.qdelay_mean_ms < 0.25 * RTT_MS, "{bdp} BDP: {o:?}");
    }
}

#[test]
fn the_harness_is_deterministic() {
    let a = run(CcParams::Bbr(BbrParams::default()), 1).1.stats();
    let b = run(CcParams::Bbr(BbrParams::default()), 1).1.stats();
    assert_eq!(a, b);
}
