//! RTS/CTS (dot11RTSThreshold, `rts_threshold_bytes`; `wifi-model.md` §3.4, §3.6): a node that wins
//! the medium with a PSDU longer than the threshold (BlockAckReqs excepted) first sends an RTS (20 B)
//! at the control rate of the PSDU's rate; the receiver answers with a CTS (14 B) SIFS later, and the
//! PSDU goes out SIFS after the CTS. Everyone who hears the sender defers from the RTS on, everyone who
//! hears the receiver from the RTS's end (the CTS follows SIFS later; the NAV of each covers the
//! exchange), which is what protects the PSDU from hidden terminals (`hidden.rs`). The receiver sends
//! no CTS if it missed the RTS's preamble (below the detection SNR) or its NAV is set (it senses
//! another exchange): the sender then waits out its CTS timeout, a failed attempt.
//! ```text
//! Access ─▶ RTS ──(RTS end)─▶ collided, corrupted or unanswered: a failed attempt of the PSDU (CTS
//!   │                         timeout = the ACK timeout), retried with a new RTS and the CW doubled
//!   │                 └─▶ answered (a CTS is error-free, as an ACK): RtsData at + SIFS + CTS + SIFS
//!   ▼
//! RtsData ─▶ the PSDU's PPDU (no new contention), then its ACK/BlockAck as usual
//! ```
//! The attempt starts with the RTS: the hooks' `AttemptStart` and its access delay are the RTS's, and
//! a failed RTS counts as one of the PSDU's tries. Within a TXOP the next PSDUs go without RTS. The
//! RTS and CTS are not in the transmission log (`tx.parquet` has data PPDUs and BlockAckReqs; an
//! attempt that failed at its RTS has no row) nor in the link's airtime or failed-PPDU count (so a
//! saturation run's `p_fail` reads data PPDUs only); `rts_sent` counts RTSs per node, `collisions` and
//! `ack_timeouts` include the failed ones.

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
        let received = n.begin_attempt(now, ac, out.air.as_deref_mut());
        let end = now + duration;
        n.exchange = Some(Exchange { eidx, ac, txv, start: now, end, received, success: false, rts: true });
        n.stats.rts_sent += 1;
        let node = n.node;
        self.record(MediumTrace::Rts { t: now, node, duration });
        end
    }

    /// Node `ni`'s RTS ended without colliding. The receiver answers with a CTS SIFS later, and the PSDU
    /// goes SIFS after that, unless it did not detect the RTS's preamble or its NAV is set (with hidden
    /// terminals: it senses another exchange), in which case the sender waits out its CTS timeout. In
    /// one collision domain the medium stays busy; with hidden terminals whoever hears the receiver now
    /// senses the exchange too (the CTS's NAV, from the RTS's end).
    pub(super) fn rts_answered<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S) {
        let n = &self.nodes[ni as usize];
        let ex = n.exchange.as_ref().expect("RTS exchange");
        let hw = n.hw[ex.ac].as_ref().expect("the PSDU behind the RTS");
        let bss = &self.bss[n.bss];
        let cts = response_duration(&ex.txv, &bss.basic_rates_mbps, bss.timings.band, CTS_LEN);
        let link = &mut self.links[hw.psdu.link as usize];
        let rx = link.rx;
        let sample = link.channel.sample(ex.start);
        let detected = crate::phy::error::preamble_detected(link.preamble_snr_db(&sample));
        // The receiver hears the sender, so the sender's own activity is one of those it senses.
        let receiver = &self.nodes[rx as usize];
        if !detected || receiver.sensed > 1 || receiver.exchange.is_some() {
            return self.rts_unanswered(now, ni, cts, sched);
        }
        sched.schedule(now + self.sifs + cts + self.sifs, WifiEvent::RtsData { node: ni });
        if self.hidden.is_some() {
            self.listen(now, ni, rx);
            self.rearm_access(now, sched);
        }
    }

    /// No CTS (of `cts` length) came to node `ni`'s RTS: a failed attempt after the CTS timeout (the
    /// ACK timeout). Those who heard the RTS reset the NAV it set when no frame follows: 2 · SIFS + CTS +
    /// 2 slots after its end (`wifi-model.md` §3.4, ns-3's NAVTimeout).
    fn rts_unanswered<S: Scheduler>(&mut self, now: SimTime, ni: u32, cts: SimDuration, sched: &mut S) {
        let timeout = now + self.ack_timeout;
        let nav_reset = now + self.sifs * 2 + cts + self.slot * 2;
        for i in 0..self.nodes.len() {
            if i != ni as usize && hidden::in_audience(&self.hidden, ni, i) {
                let r = &mut self.nodes[i].ref_time;
                *r = hidden::later_ref(&self.hidden, *r, nav_reset);
            }
        }
        let n = &mut self.nodes[ni as usize];
        n.ref_time = timeout;
        n.stats.ack_timeouts += 1;
        let node = n.node;
        self.record(MediumTrace::PpduEnd { t: now, node, ok: 0, collided: false });
        self.on_air = false;
        self.end_activity(ni);
        sched.schedule(timeout, WifiEvent::ExchangeEnd { node: ni });
        self.rearm_access(now, sched);
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
