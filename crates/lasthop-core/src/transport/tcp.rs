//! A minimal faithful TCP: MSS-sized segments, cumulative ACKs with SACK, a loss-recovery scoreboard
//! after RFC 6675 (a segment with three segments' worth of SACKed data above it is lost; "pipe"
//! counts what is really in the network), RTO per RFC 6298 with exponential backoff, delayed ACKs
//! (every second segment or 40 ms), and pacing when the congestion controller asks for it or the
//! socket has a maximum pacing rate (`SO_MAX_PACING_RATE`), at the lower of the two.
//! Congestion control is any [`cc::AnyCc`](super::cc::AnyCc): it sees one loss event per recovery
//! episode and every ACK with a delivery-rate sample.
//!
//! Both ends are pure state machines: the world feeds them packets and timer expiries, and asks
//! `poll_send(now)` / `next_wakeup()` (STYLE 13's catch-up interface).
//!
//! Approximations: pacing spaces single segments (Linux paces TSO chunks of about 1 ms of data); ACKs
//! carry every SACK block (not just 3–4); no receive-window limit; no handshake
//! (the connection starts established); no Nagle (the sender always has full segments); no PRR.

use super::cc::{AckEvent, AnyCc, CcParams, CongestionControl, DeliveryRateEstimator, LossEvent, PacketDeliveryState, SentEvent};
use crate::rng::Rng;
use crate::units::BitRate;
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// IP + TCP header bytes on the wire (with the timestamp option).
pub const HEADER_BYTES: u32 = 52;

fn d_mss() -> u32 {
    1448
}
fn d_true() -> bool {
    true
}
fn d_delack() -> f64 {
    40.0
}
fn d_rto_min() -> f64 {
    200.0
}

/// TCP settings (Linux defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpParams {
    /// Payload bytes per segment; default 1448.
    #[serde(default = "d_mss")]
    pub mss: u32,
    /// Delayed ACKs (every second segment or after `delack_ms`); default true.
    #[serde(default = "d_true")]
    pub delayed_ack: bool,
    /// Delayed-ACK timeout in ms; default 40 (Linux's minimum).
    #[serde(default = "d_delack")]
    pub delack_ms: f64,
    /// Minimum RTO in ms; default 200 (Linux).
    #[serde(default = "d_rto_min")]
    pub rto_min_ms: f64,
    /// Congestion control; default Cubic.
    #[serde(default)]
    pub cc: CcParams,
    /// The socket's maximum pacing rate, Mbit/s (Linux's `SO_MAX_PACING_RATE`, or the `fq` qdisc's
    /// `maxrate` at the sender): segments leave at most at this rate, headers included. With a
    /// congestion controller that paces (BBR, Copa, ABC, Cubic with `pacing = true`), at the lower of
    /// the two rates; with one that does not, at this rate alone (Linux would pace at the lower of it
    /// and TCP's own rate, 2·cwnd/srtt in slow start and 1.2·cwnd/srtt after). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pacing_rate_mbps: Option<f64>,
}

impl Default for TcpParams {
    fn default() -> Self {
        TcpParams { mss: 1448, delayed_ack: true, delack_ms: 40.0, rto_min_ms: 200.0, cc: CcParams::default(), max_pacing_rate_mbps: None }
    }
}

/// A segment to put on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub seq: u64,
    pub len: u32,
}

/// Counters of a sender.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct TcpSenderStats {
    pub segments_sent: u64,
    pub retransmissions: u64,
    /// Loss-recovery episodes entered from SACK information.
    pub fast_recoveries: u64,
    pub rtos: u64,
    pub bytes_acked: u64,
}

#[derive(Clone, Copy, Debug)]
struct Sent {
    len: u32,
    sent: SimTime,
    retransmitted: bool,
    sacked: bool,
    lost: bool,
    state: PacketDeliveryState,
}

/// The scoreboard's entries in sequence order. New segments only ever come at the end (at `snd_nxt`)
/// and a retransmission replaces its own entry, so a sorted ring does what a `BTreeMap` did, without
/// a tree walk per segment and per ACK.
#[derive(Debug, Default)]
struct Scoreboard(std::collections::VecDeque<(u64, Sent)>);

impl Scoreboard {
    fn find(&self, seq: u64) -> Result<usize, usize> {
        self.0.binary_search_by_key(&seq, |e| e.0)
    }
    fn get(&self, seq: u64) -> Option<&Sent> {
        self.find(seq).ok().map(|i| &self.0[i].1)
    }
    fn contains(&self, seq: u64) -> bool {
        self.find(seq).is_ok()
    }
    /// Inserts or replaces `seq`'s entry; returns the replaced one.
    fn insert(&mut self, seq: u64, s: Sent) -> Option<Sent> {
        match self.find(seq) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, s)),
            Err(i) => {
                self.0.insert(i, (seq, s));
                None
            }
        }
    }
    fn first(&self) -> Option<(u64, Sent)> {
        self.0.front().copied()
    }
    fn pop_first(&mut self) {
        self.0.pop_front();
    }
    /// The entries whose first byte is in `[a, b)`.
    fn range_mut(&mut self, a: u64, b: u64) -> impl DoubleEndedIterator<Item = &mut (u64, Sent)> {
        let lo = self.0.partition_point(|e| e.0 < a);
        let hi = self.0.partition_point(|e| e.0 < b).max(lo);
        self.0.range_mut(lo..hi)
    }
    fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut (u64, Sent)> {
        self.0.iter_mut()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The sending end of a bulk transfer (`limit` bytes, or unlimited).
#[derive(Debug)]
pub struct TcpSender {
    mss: u32,
    rto_min: SimDuration,
    cc: AnyCc,
    rate: DeliveryRateEstimator,
    limit: Option<u64>,
    snd_una: u64,
    snd_nxt: u64,
    /// The scoreboard: every unacknowledged segment by its first byte.
    in_flight: Scoreboard,
    /// Scoreboard entries marked lost, SACKed, and retransmitted: with none SACKed or retransmitted no
    /// segment can be judged lost, and with none lost there is nothing to repair, so the per-ACK scans
    /// are skipped (they are O(window)).
    n_lost: usize,
    /// First bytes of the entries marked lost (the next to repair is the lowest).
    lost_set: std::collections::BTreeSet<u64>,
    n_sacked: usize,
    n_retx: usize,
    /// RFC 6675 "pipe": bytes sent and neither acknowledged, SACKed nor marked lost.
    pipe: u64,
    /// Recovery ends when `snd_una` reaches this.
    recover: Option<u64>,
    /// RFC 6675 §5 (C): the first retransmission of an episode goes out whatever the window.
    fast_rtx: bool,
    /// RACK (RFC 8985): the latest send time of any segment (S)ACKed so far.
    rack_sent: SimTime,
    srtt: Option<SimDuration>,
    rttvar: SimDuration,
    rto: SimDuration,
    rto_deadline: Option<SimTime>,
    min_rtt: Option<SimDuration>,
    next_send: SimTime,
    /// `SO_MAX_PACING_RATE`.
    max_pacing: Option<BitRate>,
    pub stats: TcpSenderStats,
}

impl TcpSender {
    pub fn new(p: &TcpParams, now: SimTime, rng: Rng, limit: Option<u64>) -> Result<Self, String> {
        let cc = p.cc.build(p.mss as u64, now, rng).map_err(|e| e.to_string())?;
        Ok(TcpSender {
            mss: p.mss,
            rto_min: SimDuration::from_secs_f64(p.rto_min_ms * 1e-3).unwrap_or(SimDuration::from_ms(200)),
            cc,
            rate: DeliveryRateEstimator::new(now),
            limit,
            snd_una: 0,
            snd_nxt: 0,
            in_flight: Scoreboard::default(),
            n_lost: 0,
            lost_set: std::collections::BTreeSet::new(),
            n_sacked: 0,
            n_retx: 0,
            pipe: 0,
            recover: None,
            fast_rtx: false,
            rack_sent: SimTime::ZERO,
            srtt: None,
            rttvar: SimDuration::ZERO,
            rto: SimDuration::from_secs(1),
            rto_deadline: None,
            min_rtt: None,
            next_send: now,
            max_pacing: p.max_pacing_rate_mbps.and_then(BitRate::from_mbps_f64),
            stats: TcpSenderStats::default(),
        })
    }

    pub fn cc(&self) -> &AnyCc {
        &self.cc
    }

    /// The application writes `bytes` more into the socket (a transfer created with a limit).
    pub fn write(&mut self, bytes: u64) {
        self.limit = Some(self.limit.unwrap_or(0) + bytes);
    }

    /// Bytes written and not yet sent once.
    pub fn unsent(&self) -> u64 {
        self.limit.map_or(0, |l| l.saturating_sub(self.snd_nxt))
    }

    /// The ACK just passed to [`on_ack`](Self::on_ack) echoed ECN codepoint `ecn` (ABC's marks).
    pub fn on_ecn_echo(&mut self, now: SimTime, ecn: crate::packet::Ecn) {
        self.cc.on_ecn_echo(now, ecn);
    }

    /// All data acknowledged (a limited transfer is complete).
    pub fn done(&self) -> bool {
        self.limit.is_some_and(|l| self.snd_una >= l)
    }

    fn window_open(&self) -> bool {
        self.pipe + self.mss as u64 <= self.cc.cwnd().max(self.mss as u64)
    }

    /// The lowest segment marked lost and not yet retransmitted.
    fn next_lost(&self) -> Option<u64> {
        debug_assert_eq!(self.n_lost, self.lost_set.len());
        self.lost_set.first().copied()
    }

    /// The next segment to send now, if the window and the pacer allow: lost segments first.
    pub fn poll_send(&mut self, now: SimTime) -> Option<Segment> {
        if now < self.next_send || !(self.window_open() || (self.fast_rtx && self.next_lost().is_some())) {
            return None;
        }
        self.fast_rtx = false;
        let seg = if let Some(seq) = self.next_lost() {
            Segment { seq, len: self.in_flight.get(seq).expect("a lost segment is on the scoreboard").len }
        } else {
            let left = self.limit.map_or(u64::MAX, |l| l.saturating_sub(self.snd_nxt));
            if left == 0 {
                self.rate.on_app_limited(self.pipe);
                return None;
            }
            let seg = Segment { seq: self.snd_nxt, len: left.min(self.mss as u64) as u32 };
            self.snd_nxt += seg.len as u64;
            seg
        };
        self.on_transmit(now, seg);
        Some(seg)
    }

    fn on_transmit(&mut self, now: SimTime, seg: Segment) {
        let prior = self.pipe;
        let state = self.rate.on_sent(now, prior);
        let retransmitted = self.in_flight.contains(seg.seq);
        if retransmitted {
            self.stats.retransmissions += 1;
        }
        self.pipe += seg.len as u64;
        let old = self.in_flight.insert(seg.seq, Sent { len: seg.len, sent: now, retransmitted, sacked: false, lost: false, state });
        if let Some(o) = old {
            self.forget(seg.seq, &o);
        }
        self.n_retx += retransmitted as usize;
        self.stats.segments_sent += 1;
        self.cc.on_sent(now, &SentEvent { bytes: seg.len as u64, prior_in_flight: prior, app_limited: false });
        // The congestion controller's pacing rate and the socket's maximum, the lower of those set.
        let cc_rate = self.cc.pacing_rate().filter(|r| r.bps() > 0);
        if let Some(rate) = cc_rate.into_iter().chain(self.max_pacing).min() {
            self.next_send = now + rate.tx_time((seg.len + HEADER_BYTES) as u64);
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto);
        }
    }

    /// When the sender next needs attention after `now`: the pacer (only if it is what holds back a
    /// sendable segment) or the RTO.
    pub fn next_wakeup(&self, now: SimTime) -> Option<SimTime> {
        let sendable = (self.fast_rtx && self.next_lost().is_some())
            || (self.window_open() && (self.next_lost().is_some() || self.limit.is_none_or(|l| self.snd_nxt < l)));
        let pace = (self.next_send > now && sendable).then_some(self.next_send);
        match (pace, self.rto_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// An ACK: cumulative `ack`, the receiver's SACK blocks `[start, end)`, and the echoed send time.
    pub fn on_ack(&mut self, now: SimTime, ack: u64, sack: &[(u64, u64)], ts_echo: SimTime) {
        let prior = self.pipe;
        let mut acked = Vec::new();
        let mut bytes = 0u64;
        let mut rtt = None;
        while let Some((seq, s)) = self.in_flight.first() {
            if seq + s.len as u64 > ack {
                break;
            }
            self.in_flight.pop_first();
            self.forget(seq, &s);
            if s.sacked {
                continue; // already counted as delivered when it was SACKed
            }
            if !s.lost {
                self.pipe -= s.len as u64;
            }
            bytes += s.len as u64;
            if !s.retransmitted {
                rtt = Some(now.saturating_since(s.sent));
            }
            self.rack_sent = self.rack_sent.max(s.sent);
            acked.push((s.state, s.len as u64));
        }
        self.snd_una = self.snd_una.max(ack);
        for &(a, b) in sack {
            for (seq, s) in self.in_flight.range_mut(a, b.max(a)) {
                let seq = *seq;
                if !s.sacked && seq + s.len as u64 <= b {
                    s.sacked = true;
                    self.n_sacked += 1;
                    if s.lost {
                        self.n_lost -= 1;
                        self.lost_set.remove(&seq);
                    } else {
                        self.pipe -= s.len as u64;
                    }
                    s.lost = false;
                    bytes += s.len as u64;
                    self.rack_sent = self.rack_sent.max(s.sent);
                    acked.push((s.state, s.len as u64));
                }
            }
        }
        // Karn: only unambiguous samples; the timestamp echo makes retransmitted ones usable too.
        let rtt = rtt.or_else(|| (ts_echo > SimTime::ZERO && bytes > 0).then(|| now.saturating_since(ts_echo)));
        if let Some(r) = rtt {
            self.update_rtt(r);
        }
        self.stats.bytes_acked += bytes;
        self.detect_losses(now);
        if self.recover.is_some_and(|r| self.snd_una >= r) {
            self.recover = None;
        }
        if let Some(rate) = self.rate.on_ack(now, acked, self.min_rtt) {
            self.cc.on_ack(now, &AckEvent { bytes_acked: bytes, rtt, prior_in_flight: prior, bytes_in_flight: self.pipe, rate });
        }
        if bytes > 0 || ack > self.snd_una {
            self.rto_deadline = (!self.in_flight.is_empty()).then(|| now + self.rto);
        }
    }

    /// RFC 6675 `IsLost`: an unSACKed segment with at least three segments' worth of SACKed bytes above
    /// it is lost. A retransmission is judged by RACK instead (RFC 8985): lost once a segment sent more
    /// than a quarter of min RTT after it has been delivered. The first loss outside recovery starts
    /// an episode (one congestion event).
    fn detect_losses(&mut self, now: SimTime) {
        if self.n_sacked == 0 && self.n_retx == 0 {
            return; // nothing above a hole, and no retransmission for RACK to judge
        }
        let thresh = 3 * self.mss as u64;
        let reo = self.min_rtt.unwrap_or(SimDuration::ZERO) / 4;
        let rack_sent = self.rack_sent;
        let mut above = 0u64;
        let mut newly = None;
        for (seq, s) in self.in_flight.iter_mut().rev() {
            let seq = *seq;
            let lost = if s.retransmitted { s.sent + reo < rack_sent } else { above >= thresh };
            if s.sacked {
                above += s.len as u64;
            } else if lost && !s.lost {
                s.lost = true;
                self.n_lost += 1;
                self.lost_set.insert(seq);
                self.pipe -= s.len as u64;
                newly = Some(newly.map_or(s.sent, |t: SimTime| t.max(s.sent)));
            }
        }
        if let (Some(largest_lost_sent), None) = (newly, self.recover) {
            self.recover = Some(self.snd_nxt);
            self.fast_rtx = true;
            self.stats.fast_recoveries += 1;
            self.cc.on_loss(now, &LossEvent { bytes_lost: self.mss as u64, largest_lost_sent });
        }
    }

    /// A scoreboard entry is gone (acknowledged, or replaced by its retransmission): uncount it.
    fn forget(&mut self, seq: u64, s: &Sent) {
        if s.lost {
            self.lost_set.remove(&seq);
        }
        self.n_lost -= s.lost as usize;
        self.n_sacked -= s.sacked as usize;
        self.n_retx -= s.retransmitted as usize;
    }

    fn update_rtt(&mut self, r: SimDuration) {
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        // RFC 6298: RTTVAR = 3/4 RTTVAR + 1/4 |SRTT − R|, SRTT = 7/8 SRTT + 1/8 R, RTO = SRTT + 4 RTTVAR.
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = if s > r { s - r } else { r - s };
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((s * 7 + r) / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        self.rto = (srtt + self.rttvar * 4).max(self.rto_min).min(SimDuration::from_secs(120));
    }

    /// A timer fired at `now`: on RTO, every unSACKed segment is marked lost and the timer backs off.
    pub fn on_timer(&mut self, now: SimTime) {
        if self.rto_deadline.is_none_or(|d| now < d) {
            return;
        }
        self.stats.rtos += 1;
        self.cc.on_rto(now);
        self.rto = (self.rto * 2).min(SimDuration::from_secs(120));
        self.recover = Some(self.snd_nxt);
        for (seq, s) in self.in_flight.iter_mut() {
            let seq = *seq;
            if !s.sacked && !s.lost {
                s.lost = true;
                self.n_lost += 1;
                self.lost_set.insert(seq);
                self.pipe -= s.len as u64;
            }
        }
        self.rto_deadline = Some(now + self.rto);
        self.next_send = now;
    }

    pub fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "tcp": self.stats,
            "srtt_ms": self.srtt.map(|s| s.as_ms_f64()),
            "rto_ms": self.rto.as_ms_f64(),
            "cc": self.cc.stats(),
        })
    }
}

/// SACK blocks per ACK: the 40-byte option space holds 3 beside the timestamps option (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// The receiving end: cumulative ACKs with delayed ACKs; out-of-order data is kept and ACKed at once.
#[derive(Debug)]
pub struct TcpReceiver {
    delayed: bool,
    delack: SimDuration,
    rcv_nxt: u64,
    /// Out-of-order data held, as disjoint, non-adjacent ranges `start → end`.
    ooo: BTreeMap<u64, u64>,
    /// Sequence numbers of the latest out-of-order arrivals, newest first: the order SACK blocks are
    /// reported in (RFC 2018 §4).
    recent: std::collections::VecDeque<u64>,
    unacked: u32,
    delack_deadline: Option<SimTime>,
    last_ts: SimTime,
    /// In-order bytes delivered to the application.
    pub delivered_bytes: u64,
}

/// An ACK to send: cumulative `ack`, echoing `ts_echo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub ack: u64,
    pub ts_echo: SimTime,
}

impl TcpReceiver {
    pub fn new(p: &TcpParams) -> Self {
        TcpReceiver {
            delayed: p.delayed_ack,
            delack: SimDuration::from_secs_f64(p.delack_ms * 1e-3).unwrap_or(SimDuration::from_ms(40)),
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            recent: std::collections::VecDeque::new(),
            unacked: 0,
            delack_deadline: None,
            last_ts: SimTime::ZERO,
            delivered_bytes: 0,
        }
    }

    /// A data segment arrived; returns an ACK to send now, if any.
    pub fn on_segment(&mut self, now: SimTime, seq: u64, len: u32, sent: SimTime) -> Option<Ack> {
        self.last_ts = sent;
        let end = seq + len as u64;
        let in_order = seq <= self.rcv_nxt;
        let had_holes = !self.ooo.is_empty();
        if end > self.rcv_nxt {
            if in_order {
                self.rcv_nxt = end;
                while let Some((&s, &e)) = self.ooo.first_key_value() {
                    if s > self.rcv_nxt {
                        break;
                    }
                    self.rcv_nxt = self.rcv_nxt.max(e);
                    self.ooo.remove(&s);
                }
            } else {
                self.hold_out_of_order(seq, end);
            }
        }
        let before = self.delivered_bytes;
        self.delivered_bytes = self.rcv_nxt;
        let filled_hole = in_order && had_holes;
        // Out of order, a duplicate, or filling a hole: ACK at once (RFC 5681 §4.2).
        if !in_order || self.delivered_bytes == before || filled_hole || !self.delayed {
            return Some(self.ack_now());
        }
        self.unacked += 1;
        if self.unacked >= 2 {
            return Some(self.ack_now());
        }
        self.delack_deadline.get_or_insert(now + self.delack);
        None
    }

    fn ack_now(&mut self) -> Ack {
        self.unacked = 0;
        self.delack_deadline = None;
        Ack { ack: self.rcv_nxt, ts_echo: self.last_ts }
    }

    /// Adds `[seq, end)` to the out-of-order ranges, merging it with those it overlaps or touches.
    fn hold_out_of_order(&mut self, seq: u64, end: u64) {
        let (mut start, mut stop) = (seq, end);
        if let Some((&s, &e)) = self.ooo.range(..=seq).next_back() {
            if e >= seq {
                start = s;
                stop = stop.max(e);
            }
        }
        while let Some((&s, &e)) = self.ooo.range(start..).next() {
            if s > stop {
                break;
            }
            stop = stop.max(e);
            self.ooo.remove(&s);
        }
        self.ooo.insert(start, stop);
        // One remembered arrival per block, newest first, as many as Linux caches (4).
        let rcv_nxt = self.rcv_nxt;
        self.recent.retain(|&x| x >= rcv_nxt && !(start..stop).contains(&x));
        self.recent.push_front(seq);
        self.recent.truncate(MAX_SACK_BLOCKS + 1);
    }

    /// The SACK blocks `[start, end)` the next ACK carries: at most [`MAX_SACK_BLOCKS`], the block of
    /// the latest out-of-order arrival first, then those of the arrivals before it (RFC 2018 §4), as
    /// Linux's `tcp_sack_new_ofo_skb` keeps them.
    pub fn sack_blocks(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(MAX_SACK_BLOCKS);
        for &x in &self.recent {
            let Some((&s, &e)) = self.ooo.range(..=x).next_back() else { continue };
            if e > x && !out.iter().any(|b| b.0 == s) {
                out.push((s, e));
                if out.len() == MAX_SACK_BLOCKS {
                    break;
                }
            }
        }
        out
    }

    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.delack_deadline
    }

    /// The delayed-ACK timer fired.
    pub fn on_timer(&mut self, now: SimTime) -> Option<Ack> {
        match self.delack_deadline {
            Some(d) if now >= d => Some(self.ack_now()),
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
