//! FastAck, the "Copa+FastAck" baseline of Zhuge (zhuge.md §5.2, baselines.md §4.5): the AP
//! acknowledges TCP data to the sender as soon as its last hop has delivered it, instead of waiting for
//! the client's ACK, and keeps a copy of each segment to retransmit locally when the client reports a
//! last-hop loss.
//!
//! # Which ACK the AP emits, and when
//!
//! The AP records every downlink data segment of the flow. When the last hop reports one delivered
//! (802.11: acknowledged by a Normal or Block ACK; point-to-point: its transmission started), the
//! segment is collected at the next multiple of `collect_interval_us` (the code polls every 200 µs).
//! Collection advances the AP's **in-order delivered frontier** over every delivered segment that is
//! contiguous with it, and emits one pure ACK per segment it passes, `ack = seq + len`, echoing the
//! segment's send time; each leaves `fake_ack_delay_us` later (the code waits 16 ms on point-to-point
//! links; default 0). A segment delivered above a hole is not acknowledged until the hole is filled: a
//! cumulative ACK must not claim data the AP never delivered (the code acknowledges any recorded
//! segment, which would hide a loss upstream of the AP from the sender; we do not reproduce that).
//!
//! # What happens to the client's ACKs
//!
//! No ACK reaches the sender twice (zhuge.md §3.7, §5.2 \[LH\]); the client's pure ACKs of the flow are
//! intercepted and each gets an [`AckVerdict`]:
//! * `ack` above everything sent to the sender (the AP missed a delivery report): **forwarded**, and
//!   fake ACKs not yet released that it covers are discarded;
//! * a first ACK for data the AP already acknowledged: **suppressed** (it would duplicate a fake ACK);
//! * a duplicate ACK for a segment the AP delivered (lost on the last hop): **suppressed**, and the
//!   `dupack_threshold`-th one asks for a local retransmission of the cached segment;
//! * a duplicate ACK at the AP's own frontier (a hole the AP never delivered, lost before it):
//!   **forwarded**, so the sender's loss recovery sees the duplicate ACKs it would without FastAck;
//! * older (reordered) ACKs: suppressed.
//!
//! A client ACK purges the cache up to its cumulative point. The client's advertised window is not
//! modelled (lasthop's TCP has none); the code copies it into the fake ACKs.
//!
//! # API and wiring
//!
//! ```text
//!   downlink data segment of the flow at the AP:   fa.on_downlink_data(now, seq, len, pkt.sent)
//!   last hop delivered it (MAC ACK / tx start):    fa.on_delivered(now, seq)
//!   client's pure ACK of the flow at the AP:       match fa.on_receiver_ack(now, ack) { Forward => forward it,
//!                                                    Suppress => discard, Retransmit{seq, len} => discard and
//!                                                    re-send that segment to the client }
//!   at fa.next_wakeup():                            for a in fa.poll(now) { send pure ACK a.ack to the sender }
//! ```

use super::hold::Hold;
use super::{check, ParamError};
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `fastack = { fake_ack_delay_us = 0, collect_interval_us = 200, dupack_threshold = 3 }`; every field
/// is optional.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FastAckParams {
    /// Delay between collecting a delivered segment and sending its ACK, µs. Default 0; the code uses
    /// 16 000 on point-to-point links (its analysis scripts subtract 16 ms from the RTT threshold).
    pub fake_ack_delay_us: u32,
    /// Period of the delivered-segment collection, µs; 0 collects at once. Default 200 (the code).
    pub collect_interval_us: u32,
    /// Duplicate client ACKs that trigger a local retransmission. Default 3.
    pub dupack_threshold: u32,
}

impl Default for FastAckParams {
    fn default() -> Self {
        FastAckParams { fake_ack_delay_us: 0, collect_interval_us: 200, dupack_threshold: 3 }
    }
}

impl FastAckParams {
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.dupack_threshold >= 1, "dupack_threshold", "must be at least 1")
    }
}

/// A pure ACK the AP sends to the sender on the client's behalf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FakeAck {
    /// Cumulative acknowledgement.
    pub ack: u64,
    /// Send time of the segment it acknowledges (lasthop's timestamp echo).
    pub ts_echo: SimTime,
}

/// What to do with a client ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckVerdict {
    Forward,
    Suppress,
    /// Suppress it, and send the cached segment `[seq, seq + len)` to the client again.
    Retransmit { seq: u64, len: u32 },
}

/// Counters of FastAck.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FastAckStats {
    pub data_segments: u64,
    pub delivered: u64,
    pub fake_acks: u64,
    /// Fake ACKs discarded before release because a forwarded client ACK covered them.
    pub fake_acks_superseded: u64,
    pub client_acks: u64,
    pub forwarded: u64,
    /// Of `forwarded`: duplicate ACKs for a hole upstream of the AP.
    pub forwarded_dupacks: u64,
    pub suppressed: u64,
    pub local_retransmissions: u64,
}

#[derive(Clone, Copy, Debug)]
struct Seg {
    len: u32,
    sent: SimTime,
    delivered: bool,
}

/// The FastAck state of one TCP flow at the AP.
#[derive(Clone, Debug)]
pub struct FastAck {
    params: FastAckParams,
    /// Segments seen at the AP and not yet acknowledged by the client, by first byte.
    segs: BTreeMap<u64, Seg>,
    /// End of the in-order data the AP has delivered (and acknowledged to the sender).
    frontier: Option<u64>,
    /// Highest cumulative ACK the sender was sent or is about to be sent.
    to_sender: Option<u64>,
    /// Highest client ACK forwarded: fake ACKs at or below it are stale.
    forwarded_max: Option<u64>,
    /// The client's latest cumulative ACK and how many duplicates of it followed.
    client_ack: Option<u64>,
    dups: u32,
    collect_at: Option<SimTime>,
    out: Hold<FakeAck>,
    stats: FastAckStats,
}

impl FastAck {
    pub fn new(params: FastAckParams) -> Self {
        debug_assert!(params.validate().is_ok());
        FastAck {
            params,
            segs: BTreeMap::new(),
            frontier: None,
            to_sender: None,
            forwarded_max: None,
            client_ack: None,
            dups: 0,
            collect_at: None,
            out: Hold::new(),
            stats: FastAckStats::default(),
        }
    }

    /// A downlink data segment `[seq, seq + len)` of the flow, sent at `sent`, reached the AP.
    pub fn on_downlink_data(&mut self, _now: SimTime, seq: u64, len: u32, sent: SimTime) {
        if len == 0 {
            return;
        }
        self.stats.data_segments += 1;
        let frontier = *self.frontier.get_or_insert(seq);
        if seq + len as u64 <= frontier && !self.segs.contains_key(&seq) {
            return; // a retransmission of data already acknowledged and purged
        }
        let s = self.segs.entry(seq).or_insert(Seg { len, sent, delivered: false });
        s.sent = sent;
    }

    /// The last hop delivered the segment starting at `seq`.
    pub fn on_delivered(&mut self, now: SimTime, seq: u64) {
        let Some(s) = self.segs.get_mut(&seq) else { return };
        if !s.delivered {
            s.delivered = true;
            self.stats.delivered += 1;
        }
        let iv = self.params.collect_interval_us as u64 * 1_000;
        let at = if iv == 0 { now } else { SimTime::from_ns(now.as_ns().div_ceil(iv) * iv) };
        self.collect_at = Some(self.collect_at.map_or(at, |c| c.min(at)));
    }

    /// Advances the frontier over delivered contiguous segments, one fake ACK per segment.
    fn collect(&mut self, now: SimTime) {
        self.collect_at = None;
        let Some(mut f) = self.frontier else { return };
        let delay = SimDuration::from_us(self.params.fake_ack_delay_us as u64);
        while let Some(s) = self.segs.get(&f).filter(|s| s.delivered).copied() {
            f += s.len as u64;
            if self.to_sender.is_none_or(|a| f > a) {
                self.to_sender = Some(f);
                self.out.push(now + delay, FakeAck { ack: f, ts_echo: s.sent });
            }
        }
        self.frontier = Some(f);
    }

    /// When [`poll`](Self::poll) next has something to do.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        match (self.collect_at, self.out.next_wakeup()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The fake ACKs to send to the sender at `now`, in order.
    pub fn poll(&mut self, now: SimTime) -> Vec<FakeAck> {
        if self.collect_at.is_some_and(|c| c <= now) {
            self.collect(now);
        }
        let mut acks = vec![];
        while let Some(a) = self.out.poll(now) {
            if self.forwarded_max.is_some_and(|m| a.ack <= m) {
                self.stats.fake_acks_superseded += 1;
            } else {
                self.stats.fake_acks += 1;
                acks.push(a);
            }
        }
        acks
    }

    /// A pure ACK from the client reached the AP.
    pub fn on_receiver_ack(&mut self, _now: SimTime, ack: u64) -> AckVerdict {
        self.stats.client_acks += 1;
        let v = self.judge(ack);
        match v {
            AckVerdict::Forward => self.stats.forwarded += 1,
            AckVerdict::Suppress => self.stats.suppressed += 1,
            AckVerdict::Retransmit { .. } => {
                self.stats.suppressed += 1;
                self.stats.local_retransmissions += 1;
            }
        }
        v
    }

    fn judge(&mut self, ack: u64) -> AckVerdict {
        let dup = match self.client_ack {
            Some(a) if ack < a => return AckVerdict::Suppress,
            Some(a) if ack == a => {
                self.dups += 1;
                true
            }
            _ => {
                self.client_ack = Some(ack);
                self.dups = 0;
                false
            }
        };
        self.segs.retain(|&s, seg| s + seg.len as u64 > ack);
        if self.frontier.is_none_or(|f| f < ack) {
            self.frontier = Some(ack);
        }
        if self.to_sender.is_none_or(|a| ack > a) {
            self.to_sender = Some(ack);
            self.forwarded_max = Some(ack);
            return AckVerdict::Forward;
        }
        if !dup {
            return AckVerdict::Suppress;
        }
        match self.segs.get(&ack) {
            Some(s) if s.delivered => {
                if self.dups == self.params.dupack_threshold {
                    AckVerdict::Retransmit { seq: ack, len: s.len }
                } else {
                    AckVerdict::Suppress
                }
            }
            _ if self.to_sender == Some(ack) => {
                self.stats.forwarded_dupacks += 1;
                AckVerdict::Forward
            }
            _ => AckVerdict::Suppress,
        }
    }

    pub fn stats(&self) -> FastAckStats {
        self.stats
    }
}
