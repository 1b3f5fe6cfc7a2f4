//! The Linux path's hardware queues, one per AC: their depth (ath9k's `axq_ampdu_depth`/`axq_depth`),
//! the head PSDU the medium takes, the optional hardware time limit per PSDU (Law's Limit_h on the
//! stock path), and what the path learns when the hardware is done with a PSDU (its per-frame delay
//! t_k and the TX status for the rate controller).

use super::LinuxPath;
use crate::mac::txpath::gate::TxEvent;
use crate::mac::txpath::{PathOut, Psdu, TxStatus};
use crate::ratectl::{RateControl, RateEntry, RateSet};
use crate::stats::Stage;
use crate::time::{SimDuration, SimTime};

impl LinuxPath {
    /// `ath_tx_sched_aggr`'s test: an AC with BlockAck sessions holds ATH_AGGR_MIN_QDEPTH (2)
    /// non-probe PSDUs, whether they carry one subframe or many (`ath_tx_form_aggr` marks both
    /// `BUF_AMPDU`); an AC without (VO, or A-MPDU off) holds ATH_NON_AGGR_MIN_QDEPTH (8) frames.
    /// With a budget shared over the ACs (`hw_shared`), every PSDU counts, whatever its AC.
    pub fn hw_has_room(&self, ac: usize) -> bool {
        if let Some(n) = self.p.hw_shared {
            return self.hw_count.iter().map(|c| c.1).sum::<usize>() < n;
        }
        let (ampdu_depth, depth) = self.hw_count[ac];
        if self.aggregate(ac) {
            ampdu_depth < self.p.hw_depth_aggr
        } else {
            depth < self.p.hw_depth_single
        }
    }

    /// Whether `psdu` counts in its AC's `axq_ampdu_depth` (`bf_is_ampdu_not_probing`).
    pub(super) fn counts_as_ampdu(&self, psdu: &Psdu) -> bool {
        self.aggregate(psdu.ac) && !psdu.probe
    }

    pub fn head(&mut self, now: SimTime, ac: usize, budget: Option<SimDuration>, out: &mut PathOut<'_>) -> Option<Psdu> {
        let psdu = self.hwq[ac].front()?;
        if budget.is_some_and(|b| psdu.exceeds(b, self.p.band, self.p.airtime)) {
            return None;
        }
        self.last_now = now;
        let mut psdu = self.hwq[ac].pop_front().expect("front");
        psdu.hw_deadline = self.head_deadline(ac);
        self.in_air[ac] = true;
        let access_delay = now.saturating_since(self.head_since[ac]);
        if let Some(l) = self.links.iter_mut().find(|l| l.id == psdu.link) {
            l.access_sample = Some(access_delay);
        }
        self.tx_event(now, TxEvent::AttemptStart { link: psdu.link, ac, bytes: psdu.psdu_len, access_delay });
        for m in &psdu.mpdus {
            out.log.stamp_first(m.pkt.id, Stage::HwHead, now);
        }
        Some(psdu)
    }

    /// PSDUs in hardware over all ACs (waiting, held by a release gate, or on the air).
    pub fn in_hardware(&self) -> usize {
        self.hw_count.iter().map(|c| c.1).sum()
    }

    /// A driver's retransmission of a PSDU the hardware returned (Law's): straight back to the *front*
    /// of its hardware queue, counted in the depth. It is not held by a release gate (it was released
    /// once), but the gate hears of it as of any PSDU entering the hardware.
    pub fn push_hw_front(&mut self, now: SimTime, li: usize, ac: usize, psdu: Psdu) {
        self.count_in_hw(&psdu);
        self.push_hw(now, li, ac, psdu, true);
    }

    /// `psdu` takes its place in its AC's hardware-queue depth (as ath9k counts it).
    pub(super) fn count_in_hw(&mut self, psdu: &Psdu) {
        let ampdu = self.counts_as_ampdu(psdu) as usize;
        let c = &mut self.hw_count[psdu.ac];
        c.0 += ampdu;
        c.1 += 1;
    }

    /// The PSDU at the head of AC `ac`'s hardware queue while it waits for the medium (`None` while the
    /// medium holds the AC's head).
    pub fn waiting_head(&self, ac: usize) -> Option<&Psdu> {
        if self.in_air[ac] {
            return None;
        }
        self.hwq[ac].front()
    }

    /// The hardware's time limit for the PSDUs that reach the head of a hardware queue from now on.
    pub fn set_hw_time_limit(&mut self, limit: Option<SimDuration>) {
        self.p.hw_time_limit = limit;
    }

    /// With a hardware time limit: the deadline of AC `ac`'s head PSDU, which became the head at
    /// `head_since[ac]`.
    pub(super) fn head_deadline(&self, ac: usize) -> Option<SimTime> {
        self.head_limit[ac].map(|l| self.head_since[ac] + l)
    }


    /// The TX status of `psdu` to link `li`'s rate controller (nothing when no attempt was made: a PSDU
    /// the hardware's time limit returned before it reached the air).
    pub(super) fn report_status(&mut self, now: SimTime, li: usize, psdu: &Psdu, st: &TxStatus<'_>) {
        if st.attempts == 0 {
            return;
        }
        if let Some(rc) = &mut self.links[li].rc {
            let mut rs = RateSet { entries: [None; 4], probe: psdu.probe };
            for (i, s) in psdu.chain.series.iter().enumerate() {
                rs.entries[i] = s.map(|(txv, tries)| RateEntry { txv, tries, rts: false });
            }
            let acked = st.received.iter().filter(|&&r| r).count() as u16;
            rc.on_tx_status(now, &rs.report(st.attempts, psdu.mpdus.len() as u16, acked));
        }
    }

    /// `psdu` left the head of its hardware queue: its per-frame delay t_k is counted if it was
    /// delivered, and the next PSDU of that queue is now at the head. Returns the completion event
    /// the driver's stages will see.
    pub(super) fn left_hardware(&mut self, now: SimTime, psdu: &Psdu, st: &TxStatus<'_>) -> TxEvent {
        let ac = psdu.ac;
        let head_to_done = now.saturating_since(self.head_since[ac]);
        if st.success {
            self.stats.delivered_psdus += 1;
            self.stats.per_frame_delay_ns += head_to_done.as_ns();
        }
        self.in_air[ac] = false;
        self.head_since[ac] = now;
        self.head_limit[ac] = self.p.hw_time_limit;
        let irq_delay = self.p.t_irq;
        TxEvent::Complete { link: psdu.link, ac, bytes: psdu.psdu_len, success: st.success, attempts: st.attempts, head_to_done, irq_delay }
    }
}

/// Whether the hardware handed `psdu` back at its time limit (at `now`, the hardware's completion):
/// unacknowledged, at or past its deadline, with tries of its rate chain left (a chain that ran out at
/// the deadline is an ordinary failure, as the medium counts it).
pub(super) fn returned_at_time_limit(now: SimTime, psdu: &Psdu, st: &TxStatus<'_>) -> bool {
    let tries = || psdu.chain.series.iter().flatten().map(|&(_, t)| t as u32).sum::<u32>();
    !st.success && psdu.hw_deadline.is_some_and(|d| now >= d) && st.attempts < tries()
}
