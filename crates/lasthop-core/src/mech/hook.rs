//! The hook points a mechanism has at an AP, and the install surface that puts mechanisms there.
//!
//! A mechanism is a bundle of role implementations plus optional hooks (STYLE.md §9). It installs
//! itself on a node through [`NodeBuilder`]: it may claim a role slot that only one mechanism may fill
//! (the transmit path, the downlink rate control, the flows' feedback, ECN marking) and add an
//! [`ApHook`] that sees the AP's traffic. Two mechanisms that claim one role are refused
//! ([`InstallError::Conflict`]); the scenario reports it at the second one's path.
//!
//! An [`ApHook`] sees, for a downlink packet, in this order:
//! 1. [`ApHook::on_downlink`]: the packet reached the AP on its way to a station, before it is queued;
//! 2. [`ApHook::on_egress`]: the egress events of the AP's last-hop queue (admitted, moved to the
//!    driver, left the driver for the link, dropped), for the packets it was shown in step 1;
//! 3. [`ApHook::on_delivered`]: the packet reached its station.
//!
//! Over 802.11, [`ApHook::on_air`] also sees every transmit event of the AP (each attempt's start with
//! its access delay, each PSDU's completion), as the medium reports them.
//!
//! For an uplink packet from one of the AP's stations, [`ApHook::on_uplink`] decides: forward, hold
//! until a release time, consume, or forward the client's congestion feedback for RTT samples only.
//! The first hook (in installation order) that does not forward decides. [`ApHook::poll`] runs at the
//! hook's [`ApHook::next_wakeup`] and emits packets from the AP toward the flows' senders (rewritten
//! feedback, generated ACKs). Every method defaults to doing nothing.

pub use crate::mac::medium::{AirEvent, AirReport};
use crate::packet::{Hdr, NodeId, Packet};
use crate::payload::Payloads;
use crate::time::SimTime;

pub use crate::mech::zhuge::LinkKind;

/// One egress event of the AP's last-hop queue, for a packet a hook was shown by `on_downlink`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EgressEvent {
    /// Admitted to the egress (a refusal comes as a `Drop` at the same instant).
    Enqueue { id: u64, bytes: u32, flow: u32, dst: NodeId, stage: crate::mech::zhuge::Stage },
    /// Moved from the qdisc to the driver (the stand-in link started serializing it).
    ToDriver { id: u64, dst: NodeId },
    /// Left the driver for the link: transmission start on a stand-in, the first transmission attempt
    /// over 802.11, or delivery if it had not left before.
    Dequeue { id: u64, dst: NodeId },
    /// Dropped; `in_egress`: it had not left the driver yet.
    Drop { id: u64, dst: NodeId, flow: u32, hdr: Hdr, in_egress: bool },
}

/// What to do with an uplink packet at the AP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uplink {
    Forward,
    /// Forward it at this time (in order with the others held).
    Hold(SimTime),
    /// Take it out: the hook answers in its place.
    Consume,
    /// Consume it and send this TCP segment again from the AP to the packet's sender (FastAck's local
    /// retransmission).
    Retransmit { seq: u64, len: u32 },
    /// Forward the client's congestion feedback for RTT samples only (its rate feedback is the AP's).
    StripCc,
}

/// A packet a hook sends from the AP toward a flow's sender.
#[derive(Clone, Debug)]
pub struct Generated {
    pub flow: u32,
    pub hdr: Hdr,
    pub size: u32,
    /// The RTCP message it carries, if any.
    pub rtcp: Option<crate::app::rtc::Rtcp>,
}

/// A mechanism's hooks at an AP. Each method takes `now`; all default to no-ops. `Send + Sync` so that a
/// stepped model can move between threads (the Python API releases the GIL while it runs).
pub trait ApHook: Send + Sync {
    /// A downlink packet of this AP, before it is queued; the hook may rewrite header fields. Returns
    /// the hook's forecast of the packet's delay through the egress (ns), if it makes one; the world
    /// compares it with the delay the packet then sees.
    fn on_downlink(&mut self, _now: SimTime, _pkt: &mut Packet, _payloads: &Payloads) -> Option<u64> {
        None
    }
    /// An egress event for a packet it was shown.
    fn on_egress(&mut self, _now: SimTime, _ev: EgressEvent) {}
    /// A transmit event of this AP on the air: an attempt start (with its access delay) or a
    /// completion, with its MPDUs as (packet id, destination; empty for a BlockAckReq); for every PSDU
    /// the AP sends, not only the packets shown to `on_downlink`.
    fn on_air(&mut self, _now: SimTime, _ev: &AirEvent, _mpdus: &[(u64, NodeId)]) {}
    /// A downlink packet of this AP reached its station.
    fn on_delivered(&mut self, _now: SimTime, _pkt: &Packet) {}
    /// An uplink packet from one of this AP's stations.
    fn on_uplink(&mut self, _now: SimTime, _pkt: &Packet, _payloads: &Payloads) -> Uplink {
        Uplink::Forward
    }
    /// Packets to send now toward the flows' senders.
    fn poll(&mut self, _now: SimTime, _out: &mut Vec<Generated>) {}
    /// When [`ApHook::poll`] next has something to do.
    fn next_wakeup(&self) -> Option<SimTime> {
        None
    }
    /// A run-time command (`commands = [...]` in the scenario, `Sim::command`): apply `set`, or say which
    /// key is wrong and why.
    fn on_command(&mut self, _now: SimTime, set: &serde_json::Map<String, serde_json::Value>) -> Result<(), (String, String)> {
        match set.keys().next() {
            Some(k) => Err((k.clone(), "this mechanism takes no run-time commands".into())),
            None => Ok(()),
        }
    }
    /// `type` and per-flow counters for `summary.json`.
    fn stats(&self) -> (&'static str, Vec<serde_json::Value>);
}

/// A flow that ends at one of the node's stations, as a mechanism chooses which flows it manages.
#[derive(Clone, Debug)]
pub struct FlowInfo {
    /// Index in the scenario's `flows`.
    pub index: u32,
    pub name: String,
    /// The flow's `type` (`rtc`, `tcp`, `tcp_video`, ...).
    pub kind: &'static str,
    /// The station it ends at.
    pub station: NodeId,
}

/// A role only one mechanism on a node may fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// The choice of downlink rates.
    RateControl,
    /// The uplink feedback (TCP ACKs, RTCP) of the flows it manages.
    Feedback,
    /// The ECN codepoint of downlink packets.
    EcnMarking,
    /// The gate between the node's driver and its hardware queue.
    ReleaseGate,
    /// Which station's TXQ the driver serves next.
    TxqScheduler,
    /// The driver's policy: hooks into ath9k's driver (dedicated flow queues, a priority path,
    /// aggregation caps), or a driver of the mechanism's own in its place (Law's).
    DriverPolicy,
    /// The hardware queues' depth and per-PSDU time limit.
    HwQueue,
    /// The TXQs' AQM (mac80211's per-flow CoDel by default).
    TxqAqm,
}

impl Role {
    /// How an error message names what the role sets.
    pub fn what(self) -> &'static str {
        match self {
            Role::RateControl => "choose the downlink rates",
            Role::Feedback => "act on the flows' feedback",
            Role::EcnMarking => "mark ECN",
            Role::ReleaseGate => "gate the driver's release to the hardware",
            Role::TxqScheduler => "schedule the TXQs",
            Role::DriverPolicy => "set the driver's policy",
            Role::HwQueue => "set the hardware queues",
            Role::TxqAqm => "set the TXQs' AQM",
        }
    }
}

/// A mechanism installed on a node and the roles it claimed (as [`Role::what`] words).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MechanismInfo {
    pub name: String,
    pub roles: Vec<&'static str>,
}

/// Why a mechanism could not be installed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InstallError {
    #[error("{first} and {second} both {}", .role.what())]
    Conflict { role: Role, first: String, second: String },
    #[error("{mechanism} needs {needs}")]
    Unsupported { mechanism: String, needs: String },
}

/// A node under construction, as mechanisms see it: what it is, and its role slots.
pub struct NodeBuilder {
    /// The node's name (for RNG paths and reports).
    pub name: String,
    pub link: LinkKind,
    /// The flows to the node's stations, in scenario order.
    pub flows: Vec<FlowInfo>,
    /// The name of every flow of the scenario, by index (a mechanism resolves the flows it names).
    pub flow_names: Vec<String>,
    /// The run's master seed, for RNGs derived from a path.
    pub seed: u64,
    /// On Wi-Fi, T_cycle of the node's PHY (QAir spec §4.3: one successful exchange of its largest
    /// PSDU at its fastest rate in AC_BE, [`crate::mac::config::BssParams::exchange_cycle`]).
    pub t_cycle: Option<crate::time::SimDuration>,
    claims: Vec<(Role, String)>,
    pub(crate) hooks: Vec<(String, Box<dyn ApHook>)>,
    pub(crate) release_gate: Option<(String, Box<dyn crate::mac::txpath::gate::ReleaseGate>)>,
    pub(crate) txq_scheduler: Option<(String, MakeScheduler)>,
    pub(crate) driver_policy: Option<(String, Box<dyn crate::mac::txpath::driver::DriverPolicy>)>,
    pub(crate) driver: Option<(String, MakeDriver)>,
    pub(crate) hw_queue: Option<(String, crate::mac::txpath::linux::HwQueueSetup)>,
    pub(crate) txq_aqm: Option<(String, crate::queue::codel::CodelParams)>,
}

/// Builds a mechanism's driver for the node's BSS (with the node's transmit path).
pub type MakeDriver = Box<dyn FnOnce(&crate::mac::txpath::driver::DriverSetup<'_>) -> Result<Box<dyn crate::mac::txpath::driver::Driver>, String> + Send + Sync>;

/// Builds the TXQ scheduler of one AC (its index).
pub type MakeScheduler = Box<dyn Fn(usize) -> Box<dyn crate::mac::txpath::scheduler::TxqScheduler> + Send + Sync>;

impl NodeBuilder {
    pub fn new(name: String, link: LinkKind, flows: Vec<FlowInfo>, flow_names: Vec<String>, seed: u64) -> Self {
        NodeBuilder { name, link, flows, flow_names, seed, t_cycle: None, claims: Vec::new(), hooks: Vec::new(), release_gate: None, txq_scheduler: None, driver_policy: None, driver: None, hw_queue: None, txq_aqm: None }
    }

    /// Claims `role` for mechanism `by`; refused if another mechanism holds it.
    pub fn claim(&mut self, role: Role, by: &str) -> Result<(), InstallError> {
        if let Some((_, first)) = self.claims.iter().find(|(r, _)| *r == role) {
            return Err(InstallError::Conflict { role, first: first.clone(), second: by.to_string() });
        }
        self.claims.push((role, by.to_string()));
        Ok(())
    }

    /// The mechanisms installed on the node, in install order, with what each took over (the run's
    /// "what actually ran").
    pub fn installed(&self) -> Vec<MechanismInfo> {
        let mut out: Vec<MechanismInfo> = Vec::new();
        let owners = self.claims.iter().map(|(r, by)| (Some(*r), by)).chain(self.hooks.iter().map(|(by, _)| (None, by)));
        for (role, by) in owners {
            let i = out.iter().position(|m| m.name == *by).unwrap_or_else(|| {
                out.push(MechanismInfo { name: by.clone(), roles: Vec::new() });
                out.len() - 1
            });
            out[i].roles.extend(role.map(Role::what));
        }
        out
    }

    /// Whether a mechanism holds `role`.
    pub fn claimed(&self, role: Role) -> bool {
        self.claims.iter().any(|(r, _)| *r == role)
    }

    /// Adds mechanism `by`'s hooks; hooks see traffic in the order they were added.
    pub fn add_hook(&mut self, by: &str, hook: Box<dyn ApHook>) {
        self.hooks.push((by.to_string(), hook));
    }

    /// Puts mechanism `by`'s gate between the node's driver and its hardware queue (claims
    /// [`Role::ReleaseGate`]). The `linux` path has it between ath9k's driver (or a mechanism's) and the
    /// hardware queues; the `fifo` path at channel access, where its PSDUs form (the `formation` release
    /// point only).
    pub fn set_release_gate(&mut self, by: &str, gate: Box<dyn crate::mac::txpath::gate::ReleaseGate>) -> Result<(), InstallError> {
        self.claim(Role::ReleaseGate, by)?;
        self.release_gate = Some((by.to_string(), gate));
        Ok(())
    }

    /// Replaces the node's TXQ scheduler of every AC with mechanism `by`'s (`make(ac)`; claims
    /// [`Role::TxqScheduler`]). The node's transmit path must have TXQs (the `linux` path).
    pub fn set_txq_scheduler(&mut self, by: &str, make: MakeScheduler) -> Result<(), InstallError> {
        self.claim(Role::TxqScheduler, by)?;
        self.txq_scheduler = Some((by.to_string(), make));
        Ok(())
    }

    /// Puts mechanism `by`'s policy into the node's driver (claims [`Role::DriverPolicy`]). The node's
    /// transmit path must have an ath9k-style driver (the `linux` path).
    pub fn set_driver_policy(&mut self, by: &str, policy: Box<dyn crate::mac::txpath::driver::DriverPolicy>) -> Result<(), InstallError> {
        self.claim(Role::DriverPolicy, by)?;
        self.driver_policy = Some((by.to_string(), policy));
        Ok(())
    }

    /// Puts mechanism `by`'s driver in place of ath9k's (claims [`Role::DriverPolicy`]: the driver's
    /// decisions are its). The node gets the Linux path's stages around it: its `linux` path as
    /// configured, or the Linux profile's default one in place of a `fifo` path.
    pub fn set_driver(&mut self, by: &str, make: MakeDriver) -> Result<(), InstallError> {
        self.claim(Role::DriverPolicy, by)?;
        self.driver = Some((by.to_string(), make));
        Ok(())
    }

    /// Sets the hardware queues of the node's Linux path (claims [`Role::HwQueue`]).
    pub fn set_hw_queue(&mut self, by: &str, hw: crate::mac::txpath::linux::HwQueueSetup) -> Result<(), InstallError> {
        self.claim(Role::HwQueue, by)?;
        self.hw_queue = Some((by.to_string(), hw));
        Ok(())
    }

    /// Sets the AQM of the TXQs' flow queues on the node's Linux path (claims [`Role::TxqAqm`]).
    pub fn set_txq_aqm(&mut self, by: &str, codel: crate::queue::codel::CodelParams) -> Result<(), InstallError> {
        self.claim(Role::TxqAqm, by)?;
        self.txq_aqm = Some((by.to_string(), codel));
        Ok(())
    }

    /// Whether a mechanism set Linux-path stages the node's configured path may not have (a driver,
    /// hardware queues, the TXQs' AQM): the node then runs the Linux path.
    pub(crate) fn needs_linux_path(&self) -> bool {
        self.driver.is_some() || self.hw_queue.is_some() || self.txq_aqm.is_some()
    }

    /// The node's Linux path settings with what mechanisms set in them.
    pub(crate) fn adjust_linux(&self, p: &mut crate::mac::txpath::linux::LinuxParams) {
        if let Some((_, hw)) = &self.hw_queue {
            hw.apply(p);
        }
        if let Some((_, codel)) = &self.txq_aqm {
            p.codel = *codel;
        }
    }

    /// On a station only the stages a station has can be installed (hooks see an AP's traffic; Law's
    /// driver is an AP's): refuses what mechanism `by` put here otherwise.
    pub(crate) fn only_path_stages(&self, by: &str) -> Result<(), InstallError> {
        if self.hooks.is_empty() && self.driver.is_none() {
            return Ok(());
        }
        Err(InstallError::Unsupported { mechanism: by.to_string(), needs: format!("an access point ('{}' is a station)", self.name) })
    }

}

/// A mechanism: what it claims and adds on a node.
pub trait Mechanism {
    /// Its name in messages (`law`, `zhuge`, ...).
    fn name(&self) -> &'static str;
    /// The roles it claims on every node it is installed on.
    fn roles(&self) -> &'static [Role];
    /// Claims its roles and adds its parts.
    fn install(&self, node: &mut NodeBuilder) -> Result<(), InstallError>;
    /// The keys a run-time command to it may set (`commands = [{ target = "aps.<ap>.<name>", set }]`);
    /// its hook's [`ApHook::on_command`] (or the component it installed) applies them.
    fn command_keys(&self) -> &'static [&'static str] {
        &[]
    }
}
