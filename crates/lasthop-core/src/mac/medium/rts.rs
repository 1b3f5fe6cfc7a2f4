//! RTS/CTS (dot11RTSThreshold, `rts_threshold_bytes`; `wifi-model.md` §3.4, §3.6): a node that wins
//! the medium with a PSDU longer than the threshold first sends an RTS (20 B) at the control rate of
//! the PSDU's rate; the receiver answers with a CTS (14 B) SIFS later, and the PSDU goes out SIFS after
//! the CTS. Everyone who hears the sender defers from the RTS on, everyone who hears the receiver from
//! the CTS on (the NAV of each covers the exchange), which is what protects the PSDU from hidden
//! terminals (`hidden.rs`).
//! ```text
//! Access ─▶ RTS ──(RTS end)─▶ collided or corrupted: a failed attempt of the PSDU (CTS timeout =
//!   │                         the ACK timeout), retried with a new RTS and the CW doubled
//!   │                 └─▶ received (control frames are error-free): RtsData at + SIFS + CTS + SIFS
//!   ▼
//! RtsData ─▶ the PSDU's PPDU (no new contention), then its ACK/BlockAck as usual
//! ```
//! The attempt starts with the RTS: the hooks' `AttemptStart` and its access delay are the RTS's, and
//! a failed RTS counts as one of the PSDU's tries. Within a TXOP the next PSDUs go without RTS. The
//! RTS and CTS are not in the transmission log (`tx.parquet` has data PPDUs and BlockAckReqs) nor in
//! the link's airtime; `rts_sent` counts them per node.

use super::*;
use crate::phy::airtime::{CTS_LEN, RTS_LEN};

/// Whether a counter is zero (left out of `summary.json`).
pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Medium {
    /// Whether node `ni`'s head PSDU for EDCAF `eidx` goes after an RTS/CTS exchange.
    #[inline]
    pub(super) fn wants_rts(&self, ni: u32, eidx: usize) -> bool {
        let n = &self.nodes[ni as usize];
        let ac = if n.qos { eidx } else { 0 };
        let Some(threshold) = self.bss[n.bss].rts_threshold else { return false };
        n.hw[ac].as_ref().is_some_and(|hw| !hw.psdu.bar && hw.psdu.psdu_len > threshold)
    }

    /// Starts the RTS of node `ni`'s attempt for EDCAF `eidx` (its PSDU is in hardware); returns its end.
    pub(super) fn transmit_rts(&mut self, now: SimTime, ni: u32, eidx: usize, out: &mut Outputs<'_>) -> SimTime {
        let n = &mut self.nodes[ni as usize];
        let ac = if n.qos { eidx } else { 0 };
        let bss = &self.bss[n.bss];
        let hw = n.hw[ac].as_ref().expect("hardware queue loaded");
        let (txv, _) = hw.psdu.chain.get(hw.series).expect("a PSDU in hardware has a series left");
        let duration = response_duration(&txv, &bss.basic_rates_mbps, bss.timings.band, RTS_LEN);
        if let Some(r) = out.air.as_deref_mut() {
            let mpdus = r.span(hw.psdu.mpdus.iter().map(|m| (m.pkt.id, m.pkt.dst)));
            let (ac, attempt, access_delay) = (ac as u8, hw.attempts + 1, now - hw.waiting_since);
            r.push(AirEvent::AttemptStart { node: n.node, ac, attempt, access_delay, mpdus });
        }
        let mut received = std::mem::take(&mut n.spare);
        received.clear();
        received.resize(hw.psdu.mpdus.len(), false);
        let end = now + duration;
        n.exchange = Some(Exchange { eidx, ac, txv, start: now, end, received, success: false, rts: true });
        n.stats.rts_sent += 1;
        let node = n.node;
        self.record(MediumTrace::Rts { t: now, node, duration });
        end
    }

    /// Node `ni`'s RTS was received: the CTS comes SIFS later and the PSDU SIFS after it. In one
    /// collision domain the medium stays busy; with hidden terminals whoever hears the receiver now
    /// senses the exchange too (the CTS's NAV).
    pub(super) fn rts_answered<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S) {
        let n = &self.nodes[ni as usize];
        let ex = n.exchange.as_ref().expect("RTS exchange");
        let hw = n.hw[ex.ac].as_ref().expect("the PSDU behind the RTS");
        let bss = &self.bss[n.bss];
        let cts = response_duration(&ex.txv, &bss.basic_rates_mbps, bss.timings.band, CTS_LEN);
        let rx = self.links[hw.psdu.link as usize].rx;
        sched.schedule(now + self.sifs + cts + self.sifs, WifiEvent::RtsData { node: ni });
        if self.hidden.is_some() {
            self.listen(now, ni, rx);
            self.rearm_access(now, sched);
        }
    }

    /// Node `ni` got its CTS: its PSDU goes on the air.
    pub(super) fn after_cts<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S, out: &mut Outputs<'_>) {
        let eidx = self.nodes[ni as usize].exchange.as_ref().expect("RTS exchange").eidx;
        let end = self.transmit(now, ni, eidx, out).expect("the PSDU waits in hardware behind its RTS");
        self.on_air_alone(now, ni, end, sched);
    }

    /// Node `ni`'s PPDU, started now without contention (after a CTS, or continuing a TXOP), ends at
    /// `end`.
    #[inline]
    pub(super) fn on_air_alone<S: Scheduler>(&mut self, now: SimTime, ni: u32, end: SimTime, sched: &mut S) {
        if self.hidden.is_some() {
            self.air_start(now, ni, true);
            sched.schedule(end, WifiEvent::AirEnd { node: ni });
        } else {
            self.in_flight.clear();
            self.in_flight.push(ni);
            sched.schedule(end, WifiEvent::PpduEnd);
        }
    }
}
