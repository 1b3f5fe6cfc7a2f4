//! The driver policy: what a mechanism may decide inside the Linux path's driver (ath9k's
//! `ath_txq_schedule` / `ath_tx_form_aggr`) besides the TXQ scheduler and the release gate.
//!
//! Without a policy the driver is ath9k as it is. A mechanism installs one on a node
//! ([`crate::mech::NodeBuilder::set_driver_policy`]) to
//! * give chosen flows a flow queue of their own in their TXQ, so they never share a hashed FQ slot
//!   ([`DriverPolicy::dedicated`]);
//! * take a scheduling opportunity of an AC ahead of the TXQ scheduler, for a TXQ it names
//!   ([`DriverPolicy::priority_txq`]), and choose which of that TXQ's dedicated flows feeds the PSDU
//!   ([`DriverPolicy::priority_flow`]); the TXQ keeps its place in the scheduler's lists and is charged
//!   its airtime as usual;
//! * cap the airtime of the PSDUs formed on the normal path ([`DriverPolicy::aggregation_cap`]);
//! * watch the hardware queue (PSDUs pushed, transmit events) and the acknowledged MPDUs.
//!
//! LAST-PQ's latency-aware scheduler ([`crate::mech::lastpq`]) is the first policy.

use super::gate::TxEvent;
use crate::packet::Packet;
use crate::time::{SimDuration, SimTime};

/// A dedicated flow's queue: packets queued, the enqueue time of its head packet, its byte deficit.
pub type FlowHead = (u32, Option<SimTime>, i64);

/// What the driver shows a policy of its queues.
pub trait DriverView {
    /// Dedicated flow `flow` (scenario index) in TXQ (`txq`, `ac`); `None` if it has no queue there.
    fn flow_head(&self, flow: u32, txq: usize, ac: usize) -> Option<FlowHead>;
    /// The TXQ enqueue time of the oldest MPDU of scenario flow `flow` waiting in TXQ (`txq`, `ac`)'s
    /// software retry queue (ath9k's `tid->retry_q`, sent before the TXQ's new packets: subframes
    /// missing from a BlockAck, and a packet dequeued for a PSDU it did not fit); `None` if none.
    fn flow_retry_head(&self, _flow: u32, _txq: usize, _ac: usize) -> Option<SimTime> {
        None
    }
    /// TXQ (`txq`, `ac`)'s airtime deficit in the TXQ scheduler, µs.
    fn txq_deficit(&self, txq: usize, ac: usize) -> i64;
    /// How long the release gate would hold a PSDU formed now (zero without a gate).
    fn gate_hold(&self) -> SimDuration {
        SimDuration::ZERO
    }
}

/// A PSDU the driver pushed into a hardware queue, as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwEnqueue {
    /// The station link's local index (its TXQ) and the AC.
    pub txq: usize,
    pub ac: usize,
    pub bytes: u32,
    /// 8·bytes / rate at the first series of its rate chain.
    pub air: SimDuration,
    /// PHY preamble + SIFS + its ACK or BlockAck at the control rate.
    pub mac: SimDuration,
}

/// A mechanism's decisions inside a node's driver. Every method defaults to ath9k's own behaviour.
pub trait DriverPolicy: Send + Sync + std::fmt::Debug {
    /// Whether packets of scenario flow `flow` get a dedicated flow queue in their TXQ.
    fn dedicated(&self, _flow: u32) -> bool {
        false
    }
    /// A packet of a dedicated flow entered TXQ (`txq`, `ac`).
    fn on_enqueue(&mut self, _now: SimTime, _pkt: &Packet, _txq: usize, _ac: usize) {}
    /// A scheduling opportunity of AC `ac` (the hardware queue has room): the TXQ to serve on the
    /// priority path, or `None` for the TXQ scheduler's choice.
    fn priority_txq(&mut self, _now: SimTime, _ac: usize, _view: &dyn DriverView) -> Option<usize> {
        None
    }
    /// While a priority PSDU of TXQ (`txq`, `ac`) has room: the dedicated flow to dequeue from next;
    /// `None` tops the PSDU up in FQ order.
    fn priority_flow(&mut self, _now: SimTime, _txq: usize, _ac: usize, _view: &dyn DriverView) -> Option<u32> {
        None
    }
    /// A packet of a dedicated flow left its TXQ, on the priority path or the normal one.
    fn on_dequeue(&mut self, _now: SimTime, _pkt: &Packet, _priority: bool) {}
    /// The most data airtime (8·length / rate) a PSDU formed on the normal path for TXQ (`txq`, `ac`)
    /// may carry, beyond the driver's own limits.
    fn aggregation_cap(&self, _now: SimTime, _txq: usize, _ac: usize) -> Option<SimDuration> {
        None
    }
    /// The driver pushed a PSDU into the hardware queue.
    fn on_hw_enqueue(&mut self, _now: SimTime, _psdu: &HwEnqueue) {}
    /// A transmit event of one of the node's PSDUs.
    fn on_tx_event(&mut self, _now: SimTime, _ev: &TxEvent) {}
    /// An MPDU of `pkt` was acknowledged (its `enqueued` is its TXQ enqueue time).
    fn on_acked(&mut self, _now: SimTime, _pkt: &Packet) {}
    /// A packet of a dedicated flow was dropped at the node: by the qdisc (if any), in the TXQ (CoDel,
    /// FQ overlimit) or by the driver (retry limits).
    fn on_dropped(&mut self, _now: SimTime, _pkt: &Packet) {}
    /// A run-time command (`set`, resolved against the scenario beforehand).
    fn on_command(&mut self, _now: SimTime, set: &serde_json::Map<String, serde_json::Value>) -> Result<(), (String, String)> {
        match set.keys().next() {
            Some(k) => Err((k.clone(), "this driver policy takes no run-time commands".into())),
            None => Ok(()),
        }
    }
    /// Counters for `summary.json`.
    fn stats(&self) -> serde_json::Value;
}

/// The driver stage itself, when a mechanism replaces ath9k's (Law's driver, seed 000: the flow queues
/// read straight into PSDUs, its own rate and retry decisions, retransmissions back at the front of the
/// hardware queue). It works on the Linux path's other stages through the path
/// ([`super::linux::LinuxPath`]'s stage methods: the TXQs' FQ tins, the TXQ schedulers, the release gate
/// and the hardware queues); ath9k's driver is the path's own when none is installed.
///
/// The path calls it with itself, the driver taken out for the call: a driver must not call back into
/// the path's scheduling round.
pub trait Driver: Send + Sync + std::fmt::Debug {
    /// The path added station link `id` as local link `li` (its TXQs exist now).
    fn add_link(&mut self, path: &super::linux::LinuxPath, li: usize, id: u32);
    /// A packet entered TXQ (`li`, `ac`): the driver's scheduling round.
    fn on_txq_enqueue(&mut self, now: SimTime, path: &mut super::linux::LinuxPath, li: usize, ac: usize, out: &mut super::PathOut<'_>);
    /// A scheduling round over every AC the path asks for (the release gate opened).
    fn schedule(&mut self, now: SimTime, path: &mut super::linux::LinuxPath, out: &mut super::PathOut<'_>);
    /// The hardware is done with `psdu` (its place in the hardware queue's depth is free already).
    fn complete(&mut self, now: SimTime, path: &mut super::linux::LinuxPath, psdu: super::Psdu, st: super::TxStatus<'_>, out: &mut super::PathOut<'_>);
    /// Counters for `summary.json` (the path's `fq` among them), at the path's last event `now`.
    fn stats(&self, now: SimTime, path: &super::linux::LinuxPath) -> serde_json::Value;
    /// What the path is, as built with this driver.
    fn info(&self, path: &super::linux::LinuxPath) -> super::PathInfo;
    /// The driver itself (tests and tools read its state).
    fn as_any(&self) -> &dyn std::any::Any;
    /// A run-time command (`set`, resolved against the scenario beforehand).
    fn on_command(&mut self, now: SimTime, path: &mut super::linux::LinuxPath, set: &serde_json::Map<String, serde_json::Value>) -> Result<(), (String, String)>;
}

/// What a driver is built for: the BSS's PHY and aggregation settings and the rates its links may use.
pub struct DriverSetup<'a> {
    pub bss: &'a crate::mac::config::BssParams,
    pub rates: Vec<crate::phy::mcs::TxVector>,
}
