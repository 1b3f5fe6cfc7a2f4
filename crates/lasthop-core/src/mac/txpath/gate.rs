//! The release gate: the stage between a node's driver and its hardware queue.
//!
//! The driver forms a PSDU only when the gate lets it through to the hardware queue; by default there
//! is no gate (the stage is open). A mechanism installs one on a node
//! ([`crate::mech::NodeBuilder::set_release_gate`]) to pace what enters the hardware — QAir's
//! per-node rate regulator is the first user. The gate sees the node's typed transmit events, so it can
//! measure the channel as the hardware experiences it. On the `fifo` (ns-3) path, whose PSDUs form at
//! channel access, the gate decides when an AC may contend for its next PSDU ([`super::fifo`]).
//!
//! A gate that refuses names the time it opens again; the medium wakes the node's transmit path then
//! ([`crate::mac::medium::WifiEvent::NodeWakeup`]), which runs the driver's scheduling round again.
//!
//! Where it gates ([`ReleasePoint`]): at PSDU *formation* (a closed gate stops the driver forming the
//! next PSDU, so it is built from the backlog at release time), or at the formed *PSDU* (the driver
//! forms PSDUs as ath9k would; they wait in [`HeldPsdus`], counting toward the hardware-queue depth, and
//! the gate releases the highest-priority one when it opens).

use super::Psdu;
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Where a release gate holds the driver back (QAir's `release_point`, spec `qair-lastpq.md` §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReleasePoint {
    /// The driver forms no PSDU while the gate is closed.
    Formation,
    /// Formed PSDUs wait in the gate (and count toward their AC's hardware-queue depth).
    Psdu,
}

/// PSDUs formed and waiting for the gate, each with its TXQ: those carrying an explicitly tagged
/// packet first ([`ReleaseGate::explicit_tag`]), then per AC (index as
/// [`crate::mac::edca::AccessCategory`]: VO first), highest AC first; in formation order within each.
#[derive(Debug, Default)]
pub struct HeldPsdus {
    tagged: VecDeque<(usize, Psdu)>,
    by_ac: Vec<VecDeque<(usize, Psdu)>>,
    len: usize,
}

impl HeldPsdus {
    pub fn push(&mut self, txq: usize, psdu: Psdu, tagged: bool) {
        if tagged {
            self.tagged.push_back((txq, psdu));
        } else {
            if self.by_ac.len() <= psdu.ac {
                self.by_ac.resize_with(psdu.ac + 1, VecDeque::new);
            }
            self.by_ac[psdu.ac].push_back((txq, psdu));
        }
        self.len += 1;
    }

    /// The held PSDU to release next, with its TXQ.
    pub fn pop_highest(&mut self) -> Option<(usize, Psdu)> {
        let next = self.tagged.pop_front().or_else(|| self.by_ac.iter_mut().find_map(VecDeque::pop_front))?;
        self.len -= 1;
        Some(next)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Held PSDUs that leave before a tagged one formed now: the tagged ones.
    pub fn tagged_len(&self) -> usize {
        self.tagged.len()
    }

    /// Held PSDUs that leave before an untagged one of AC `ac` formed now: the tagged ones and those of
    /// `ac` and of higher ACs.
    pub fn ahead_of(&self, ac: usize) -> usize {
        self.tagged.len() + self.by_ac.iter().take(ac + 1).map(VecDeque::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What happened to one of the node's PSDUs in hardware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxEvent {
    /// The PSDU left the hardware queue for its first attempt on the air; `access_delay`: since it
    /// became the head of its hardware queue.
    AttemptStart { link: u32, ac: usize, bytes: u32, access_delay: SimDuration },
    /// The hardware is done with it; `head_to_done`: from becoming the head of its hardware queue to
    /// the hardware's completion (the per-frame channel delay QAir's Delay Monitor measures);
    /// `irq_delay`: how long before the driver sees this event the hardware completed (t_irq).
    Complete { link: u32, ac: usize, bytes: u32, success: bool, attempts: u32, head_to_done: SimDuration, irq_delay: SimDuration },
}

/// The stage between the driver and the hardware queue of one node.
pub trait ReleaseGate: Send + Sync + std::fmt::Debug {
    /// Whether the driver may push a PSDU to the hardware now; `Err(t)`: not before `t` (> `now`).
    fn may_release(&mut self, now: SimTime) -> Result<(), SimTime>;
    /// The driver pushed a PSDU of `bytes` and `mpdus` MPDUs for medium link `link` and AC `ac`.
    fn on_release(&mut self, _now: SimTime, _link: u32, _ac: usize, _bytes: u32, _mpdus: u32) {}
    /// A transmit event of one of the node's PSDUs.
    fn on_tx_event(&mut self, _now: SimTime, _ev: &TxEvent) {}
    /// Where the gate holds the driver back.
    fn release_point(&self) -> ReleasePoint {
        ReleasePoint::Formation
    }
    /// Whether a packet is explicitly tagged delay-sensitive (by its DSCP, or its flow): a held PSDU
    /// carrying one is released before every other (at the `psdu` release point).
    fn explicit_tag(&self, _pkt: &crate::packet::Packet) -> bool {
        false
    }
    /// How long a PSDU the driver offered now would be held before it enters the hardware queue, with
    /// `held` formed PSDUs already waiting in the gate (LAST-PQ adds it to its hardware-queue estimate,
    /// spec §17.6).
    fn expected_hold(&self, _now: SimTime, _held: usize) -> SimDuration {
        SimDuration::ZERO
    }
    /// Counters for `summary.json`.
    fn stats(&self) -> serde_json::Value;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mac::txpath::RateChain;
    use crate::phy::mcs::{ChannelWidth, GuardInterval, TxVector};

    fn psdu(ac: usize, link: u32) -> Psdu {
        let txv = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
        Psdu { link, ac, mpdus: Vec::new(), chain: RateChain::single(txv, 1), aggregated: false, bar: false, psdu_len: 100, probe: false, hw_deadline: None }
    }

    /// Spec §5's priority release: explicitly tagged PSDUs first (in formation order), then VO > VI >
    /// BE > BK, FIFO within an AC; `ahead_of` counts what leaves before an untagged PSDU of an AC.
    #[test]
    fn held_psdus_release_tagged_first_then_by_ac() {
        let (vo, vi, be) = (0, 1, 2);
        let mut h = HeldPsdus::default();
        h.push(0, psdu(be, 1), false);
        h.push(0, psdu(vo, 2), false);
        h.push(1, psdu(be, 3), true);
        h.push(1, psdu(vi, 4), true);
        h.push(0, psdu(be, 5), false);
        assert_eq!((h.len(), h.ahead_of(vo), h.ahead_of(vi), h.ahead_of(be)), (5, 3, 3, 5));
        let order: Vec<u32> = std::iter::from_fn(|| h.pop_highest().map(|(_, p)| p.link)).collect();
        assert_eq!(order, vec![3, 4, 2, 1, 5]);
        assert!(h.is_empty());
    }
}
