//! The sender's answer to NACKs: a history of sent media packets and RTX retransmissions
//! (libwebrtc `RtpPacketHistory` and `RTPSender::ReSendPacket`, baselines.md §5.4).
//!
//! Every media packet the pacer releases is kept for `history_ms` (1 s). A NACKed packet still in the
//! history is copied as a retransmission (2 bytes more payload, the RTX original sequence number of
//! RFC 4588), unless it was sent or resent less than one RTT ago (libwebrtc's `min_elapsed_time`); the
//! copy goes to the pacer's priority queue. Packets no longer in the history are not resent. The RTT is
//! the path RTT the sender learns from RTCP reports, not GCC's feedback RTT (which includes up to a
//! feedback interval of waiting at the receiver and would suppress most retransmissions).

use super::rtp::RtpPacket;
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// RTX original-sequence-number field, bytes (RFC 4588 §4).
pub const RTX_OSN_BYTES: u32 = 2;

/// `rtx = { history_ms = 1000 }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RtxParams {
    /// How long sent media packets stay available for retransmission, ms. Default 1000 (baselines.md
    /// §5.4, "history ≥ 1 s").
    pub history_ms: u32,
}

impl Default for RtxParams {
    fn default() -> Self {
        RtxParams { history_ms: 1_000 }
    }
}

/// Counters of the retransmission sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RtxStats {
    pub nacked: u64,
    pub retransmitted: u64,
    /// NACKed packets resent less than one RTT ago.
    pub too_soon: u64,
    /// NACKed packets no longer (or never) in the history.
    pub not_in_history: u64,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    packet: RtpPacket,
    first_sent: SimTime,
    last_sent: SimTime,
}

/// Sent-packet history and NACK handling.
#[derive(Clone, Debug, Default)]
pub struct RtxSender {
    params: RtxParams,
    history: crate::seqmap::SeqMap<Entry>,
    stats: RtxStats,
}

impl RtxSender {
    pub fn new(params: RtxParams) -> Self {
        RtxSender { params, history: crate::seqmap::SeqMap::new(), stats: RtxStats::default() }
    }

    /// A packet left the pacer at `now`; media packets (and their retransmissions) are remembered.
    pub fn on_sent(&mut self, now: SimTime, p: &RtpPacket) {
        if p.media().is_none() {
            return;
        }
        let horizon = SimDuration::from_ms(self.params.history_ms as u64);
        while self.history.first().is_some_and(|(_, e)| now.saturating_since(e.first_sent) > horizon) {
            self.history.pop_first();
        }
        match self.history.get_mut(p.seq) {
            Some(e) => e.last_sent = now,
            None => {
                self.history.insert(p.seq, Entry { packet: *p, first_sent: now, last_sent: now });
            }
        }
    }

    /// A NACK for `seqs` arrived at `now`; returns the retransmissions to queue.
    pub fn on_nack(&mut self, now: SimTime, seqs: &[u64], rtt: SimDuration) -> Vec<RtpPacket> {
        let mut out = vec![];
        for seq in seqs {
            self.stats.nacked += 1;
            let Some(e) = self.history.get_mut(*seq) else {
                self.stats.not_in_history += 1;
                continue;
            };
            if now.saturating_since(e.last_sent) < rtt {
                self.stats.too_soon += 1;
                continue;
            }
            e.last_sent = now;
            let mut copy = e.packet;
            copy.retransmission = true;
            copy.transport_seq = None;
            copy.probe_cluster = None;
            copy.payload_bytes += RTX_OSN_BYTES;
            self.stats.retransmitted += 1;
            out.push(copy);
        }
        out
    }

    pub fn stats(&self) -> RtxStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtc::frames::packetize;

    #[test]
    fn resends_once_per_rtt_while_in_history() {
        let mut seq = 0;
        let pkts = packetize(0, 3_000, false, SimTime::ZERO, 1_200, 48, &mut seq);
        let mut rtx = RtxSender::new(RtxParams::default());
        for (i, p) in pkts.iter().enumerate() {
            rtx.on_sent(SimTime::from_ms(i as u64), p);
        }
        let rtt = SimDuration::from_ms(50);
        // Seq 1 was sent at 1 ms: a NACK at 40 ms is too soon, at 60 ms it is answered.
        assert!(rtx.on_nack(SimTime::from_ms(40), &[1], rtt).is_empty());
        let copies = rtx.on_nack(SimTime::from_ms(60), &[1, 9], rtt);
        assert_eq!(copies.len(), 1);
        assert!(copies[0].retransmission);
        assert_eq!((copies[0].seq, copies[0].payload_bytes), (1, 1_002));
        // Resent at 60 ms: the next NACK must wait until 110 ms.
        assert!(rtx.on_nack(SimTime::from_ms(100), &[1], rtt).is_empty());
        assert_eq!(rtx.on_nack(SimTime::from_ms(110), &[1], rtt).len(), 1);
        // After a second without sending anything newer, the history has moved on.
        rtx.on_sent(SimTime::from_ms(1_500), &packetize(1, 100, false, SimTime::ZERO, 1_200, 48, &mut seq)[0]);
        assert!(rtx.on_nack(SimTime::from_ms(1_600), &[1], rtt).is_empty());
        let s = rtx.stats();
        assert_eq!((s.nacked, s.retransmitted, s.too_soon, s.not_in_history), (6, 2, 2, 2));
    }
}
