//! The Linux path's stages a mechanism installs: the release gate between the driver and the hardware
//! queues (formed PSDUs held at the `psdu` release point, released highest AC first) and the driver
//! policy's view of the hardware queue; and the transmit events both see.

use super::{data_airtime, LinuxPath, View};
use crate::mac::txpath::driver::{Driver, DriverPolicy, HwEnqueue};
use crate::mac::txpath::gate::{ReleaseGate, ReleasePoint, TxEvent};
use crate::mac::txpath::{PathOut, Psdu, TxStatus};
use crate::time::{SimDuration, SimTime};

/// A completion the hardware signalled, waiting t_irq for the driver.
#[derive(Debug)]
pub(super) struct Irq {
    pub due: SimTime,
    pub psdu: Psdu,
    pub received: Vec<bool>,
    pub success: bool,
    pub attempts: u32,
    /// The hardware's time limit returned the PSDU (judged when the hardware finished).
    pub timed_out: bool,
    pub ev: TxEvent,
}

impl LinuxPath {
    /// Puts a release gate between the driver and the hardware queues.
    pub fn set_release_gate(&mut self, gate: Box<dyn ReleaseGate>) {
        self.gate = Some(gate);
    }

    pub fn has_gate(&self) -> bool {
        self.gate.is_some()
    }

    /// Puts a driver policy into ath9k's driver.
    pub fn set_driver_policy(&mut self, policy: Box<dyn DriverPolicy>) {
        self.policy = Some(policy);
    }

    /// Puts `driver` in place of ath9k's (before the path's links are added).
    pub fn set_driver(&mut self, driver: Box<dyn Driver>) {
        self.driver = Some(driver);
    }

    /// The driver a mechanism put in place of ath9k's, if any.
    pub fn own_driver(&self) -> Option<&dyn Driver> {
        self.driver.as_deref()
    }

    /// The FQ tin of TXQ (`li`, `ac`) (a driver's view of the TXQs).
    pub fn tin(&self, li: usize, ac: usize) -> crate::queue::fq::TinId {
        self.links[li].txqs[ac].tin
    }

    /// The TXQs' shared FQ table.
    pub fn fq(&self) -> &crate::queue::fq::Fq {
        &self.fq
    }

    pub fn fq_mut(&mut self) -> &mut crate::queue::fq::Fq {
        &mut self.fq
    }

    /// The TXQ scheduler of AC `ac`.
    pub fn txq_scheduler(&mut self, ac: usize) -> &mut dyn crate::mac::txpath::scheduler::TxqScheduler {
        &mut *self.afs[ac]
    }

    /// The number of ACs (hardware queues): 4 with QoS, 1 without.
    pub fn num_acs(&self) -> usize {
        self.hwq.len()
    }

    /// The driver's scheduling rounds over every AC: the installed driver's, or ath9k's per AC.
    fn driver_rounds(&mut self, now: SimTime, out: &mut PathOut<'_>) {
        match self.driver.take() {
            Some(mut d) => {
                d.schedule(now, self, out);
                self.driver = Some(d);
            }
            None => {
                for ac in 0..self.hwq.len() {
                    self.schedule(now, ac, out);
                }
            }
        }
    }

    /// Whether any TXQ is eligible in its AC's scheduler.
    pub fn any_txq_active(&self) -> bool {
        self.afs.iter().any(|a| !a.is_empty())
    }

    /// When the path needs [`Self::on_wakeup`]: the release gate opens again after refusing, the
    /// driver handles a completion t_irq after the hardware signalled it, or the shaper's next packet
    /// can leave.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        SimTime::earliest([self.gate_wakeup, self.irq.front().map(|i| i.due), self.tbf_wakeup])
    }

    /// The time came: the driver handles the completions due, in the order the hardware signalled
    /// them; and if the gate's time came, it releases what it holds and the driver runs its scheduling
    /// round on every AC.
    pub fn on_wakeup(&mut self, now: SimTime, out: &mut PathOut<'_>) {
        // The medium requests access for every AC after a wakeup: no PSDU released now needs another.
        self.waking = true;
        while self.irq.front().is_some_and(|i| i.due <= now) {
            let i = self.irq.pop_front().expect("due");
            self.tx_event(now, i.ev);
            self.driver_complete(now, i.psdu, TxStatus { success: i.success, received: &i.received, attempts: i.attempts }, i.timed_out, out);
        }
        if self.tbf_wakeup.is_some_and(|t| t <= now) {
            self.release_tbf(now, out);
        }
        if self.gate_wakeup.is_some_and(|t| t <= now) {
            self.gate_wakeup = None;
            self.release_held(now);
            self.driver_rounds(now, out);
        }
        self.waking = false;
    }

    pub(super) fn tx_event(&mut self, now: SimTime, ev: TxEvent) {
        if let Some(g) = &mut self.gate {
            g.on_tx_event(now, &ev);
        }
        if let Some(p) = &mut self.policy {
            p.on_tx_event(now, &ev);
        }
    }

    /// Whether the gate holds formed PSDUs (the `psdu` release point) rather than their formation.
    fn holds_psdus(&self) -> bool {
        self.gate.as_ref().is_some_and(|g| g.release_point() == ReleasePoint::Psdu)
    }

    /// Whether the driver may form a PSDU now: always when the gate holds formed PSDUs instead.
    pub fn may_form(&mut self, now: SimTime) -> bool {
        self.holds_psdus() || self.gate_open(now)
    }

    /// A formed PSDU of TXQ (`li`, `ac`) takes its place in the hardware queue's depth, and enters the
    /// hardware queue now or waits in the gate. One formed on a driver policy's priority path
    /// (`priority`: LAST-PQ's) with a packet of a flow the policy prioritizes waits as an explicitly
    /// tagged one does, released first (spec §17.6); retries or top-up packets of other flows alone do
    /// not make it so.
    pub fn hand_to_hw(&mut self, now: SimTime, li: usize, ac: usize, psdu: Psdu, priority: bool) {
        self.count_in_hw(&psdu);
        if self.holds_psdus() {
            let prioritized = priority && self.policy.as_ref().is_some_and(|p| psdu.mpdus.iter().any(|m| p.dedicated(m.pkt.flow)));
            let tagged = prioritized || self.gate.as_ref().is_some_and(|g| psdu.mpdus.iter().any(|m| g.explicit_tag(&m.pkt)));
            self.held.push(li, psdu, tagged);
            self.release_held_for(now, ac);
        } else {
            self.push_hw(now, li, ac, psdu, false);
        }
    }

    /// Releases held PSDUs, highest AC first, while the gate lets them through; returns the ACs that
    /// got one, as a bit set.
    pub(super) fn release_held(&mut self, now: SimTime) -> u8 {
        let mut acs = 0;
        while !self.held.is_empty() && self.gate_open(now) {
            let (li, psdu) = self.held.pop_highest().expect("not empty");
            acs |= 1 << psdu.ac;
            self.push_hw(now, li, psdu.ac, psdu, false);
        }
        acs
    }

    /// [`Self::release_held`] while the medium attends to AC `ac` only (a packet of `ac` arrived or
    /// one of its PSDUs completed): if a PSDU of another AC entered its hardware queue, the path asks
    /// to be woken at once, so that the medium requests access for every AC.
    pub fn release_held_for(&mut self, now: SimTime, ac: usize) {
        let others = self.release_held(now) & !(1 << ac);
        if others != 0 && !self.waking {
            // Held PSDUs are released only here and in `on_wakeup`, which re-derives the gate's time.
            self.gate_wakeup = Some(now);
        }
    }

    /// Whether the gate lets a PSDU through now (remembering when it opens if not).
    pub(super) fn gate_open(&mut self, now: SimTime) -> bool {
        let Some(g) = &mut self.gate else { return true };
        match g.may_release(now) {
            Ok(()) => true,
            Err(t) => {
                self.gate_wakeup = Some(self.gate_wakeup.map_or(t, |w| w.min(t)).max(now));
                false
            }
        }
    }

    /// The policy's TXQ for this opportunity of `ac`, if any.
    pub(super) fn priority_txq(&mut self, now: SimTime, ac: usize) -> Option<usize> {
        let policy = self.policy.as_mut()?;
        // The priority path's PSDU waits in the gate as a tagged one: behind the tagged PSDUs only.
        let gate_hold = self.gate.as_ref().map_or(SimDuration::ZERO, |g| g.expected_hold(now, self.held.tagged_len()));
        policy.priority_txq(now, ac, &View { fq: &self.fq, dedicated: &self.dedicated, afs: &self.afs, links: &self.links, gate_hold })
    }

    /// Pushes a formed PSDU of TXQ (`li`, `ac`) into its hardware queue (counted in its depth already):
    /// at its back, or with `front` at its front (a driver's retransmission).
    pub(super) fn push_hw(&mut self, now: SimTime, li: usize, ac: usize, psdu: Psdu, front: bool) {
        if let Some(g) = &mut self.gate {
            g.on_release(now, psdu.link, ac, psdu.psdu_len, psdu.mpdus.len() as u32);
        }
        if let Some(policy) = &mut self.policy {
            let (txv, _) = psdu.chain.get(0).expect("chain");
            let air = data_airtime(&psdu.chain, psdu.psdu_len);
            let response = if psdu.aggregated { crate::phy::airtime::BlockAckBitmap::Compressed64.frame_len() } else { crate::phy::airtime::ACK_LEN };
            let resp = crate::phy::airtime::response_duration(&txv, &[], self.p.band, response);
            let mac = SimDuration::from_ns(txv.preamble_header_ns(self.p.airtime.ns3_compat_vht_sigb)) + crate::phy::timing::PhyTimings::for_band(self.p.band).sifs + resp;
            policy.on_hw_enqueue(now, &HwEnqueue { txq: li, ac, bytes: psdu.psdu_len, air, mac });
        }
        self.stats.psdus += 1;
        if (front || self.hwq[ac].is_empty()) && !self.in_air[ac] {
            self.head_since[ac] = now;
            self.head_limit[ac] = self.p.hw_time_limit;
        }
        if front {
            self.hwq[ac].push_front(psdu);
        } else {
            self.hwq[ac].push_back(psdu);
        }
    }
}
