//! What sits between a node's network layer and its EDCAFs: the queues that hold frames, how a PSDU is
//! formed, and what happens to its MPDUs after the hardware is done with it.
//!
//! The medium ([`super::medium`]) only contends and transmits: when an EDCAF wins it asks the node's
//! [`TxPath`] for the PSDU at the head of that AC's hardware queue ([`TxPath::head`]), transmits it at
//! the current series of its rate chain, retries it in hardware while the chain has tries left, and
//! hands it back with its status ([`TxPath::complete`]).
//!
//! * [`fifo::FifoPath`] — one MAC queue per (receiver, AC), PSDUs formed at channel access with
//!   per-MPDU retry counting, as ns-3's `WifiMacQueue`/`QosTxop` (the validation path).
//!
//! * [`linux::LinuxPath`] — the Linux AP path (qdisc → mac80211 txqs with FQ-CoDel and airtime
//!   fairness → ath9k driver with hardware queues and multi-rate retry).
//!
//! The Linux path is built of stages a mechanism can set or replace on a node:
//! ```text
//! qdisc ─▶ TXQs (FQ tins; their AQM) ─▶ TXQ scheduler ─▶ driver ─▶ release gate ─▶ hardware queues ─▶ medium
//! ```
//! * the TXQs' AQM (mac80211's per-flow CoDel; Law turns it off);
//! * the TXQ scheduler ([`scheduler::TxqScheduler`]; airtime fairness, or Law's round robin);
//! * the driver: ath9k's, with a policy hooked into it ([`driver::DriverPolicy`]: dedicated flow
//!   queues, a priority path ahead of the scheduler, aggregation caps; LAST-PQ), or a driver of a
//!   mechanism's own in its place ([`driver::Driver`]; Law's, [`crate::mech::law::driver`]);
//! * the release gate between driver and hardware queue ([`gate::ReleaseGate`]; QAir);
//! * the hardware queues ([`linux::HwQueueSetup`]): ath9k's depths per AC or one budget over all ACs,
//!   and an optional per-PSDU time limit ([`Psdu::hw_deadline`]) that the medium enforces (Law's
//!   Limit_h, or `hw_time_limit_us` on the stock path).

pub mod airtime;
pub mod ath9k_airtime;
pub mod driver;
pub mod fifo;
pub mod gate;
pub mod linux;
pub mod scheduler;
#[cfg(test)]
pub(crate) mod testkit;

use crate::packet::Packet;
use crate::phy::mcs::TxVector;
use crate::queue::Dropped;
use crate::stats::PacketLog;
use crate::time::SimTime;

/// An MPDU in a queue or in flight.
#[derive(Clone, Copy, Debug)]
pub struct Mpdu {
    pub pkt: Packet,
    /// Sequence number per (link, AC).
    pub seq: u64,
    /// MPDU length in bytes.
    pub len: u32,
    /// Transmission attempts so far.
    pub attempts: u32,
    /// When it entered the MAC.
    pub enq: SimTime,
}

/// A multi-rate retry chain: up to four (rate, tries) series, tried in order (`wifi-model.md` §3.6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateChain {
    pub series: [Option<(TxVector, u8)>; 4],
}

impl RateChain {
    /// One rate, `tries` attempts.
    pub fn single(txv: TxVector, tries: u8) -> Self {
        RateChain { series: [Some((txv, tries.max(1))), None, None, None] }
    }
    /// The (rate, tries) of series `i`, if present.
    pub fn get(&self, i: usize) -> Option<(TxVector, u8)> {
        self.series.get(i).copied().flatten()
    }
}

/// A PSDU handed to the hardware.
#[derive(Clone, Debug)]
pub struct Psdu {
    /// Medium link index (transmitter → receiver).
    pub link: u32,
    /// Queue index (the AC; 0 without QoS).
    pub ac: usize,
    pub mpdus: Vec<Mpdu>,
    pub chain: RateChain,
    /// Sent as an A-MPDU under BlockAck (the response is a BlockAck).
    pub aggregated: bool,
    /// A BlockAckReq instead of data.
    pub bar: bool,
    /// PSDU length in bytes (with A-MPDU framing).
    pub psdu_len: u32,
    /// A rate-control probe.
    pub probe: bool,
    /// When the hardware must stop working on this PSDU and return it (Law's Limit_h): the medium
    /// starts no attempt at or after it and returns the PSDU at exactly this time if it is waiting
    /// for the medium or backing off, or when the exchange on the air ends. `None`: no limit.
    pub hw_deadline: Option<SimTime>,
}

impl Psdu {
    /// Whether its PPDU at the first rate of its chain would not fit in a TXOP continuation's `budget`
    /// (for paths whose hardware queue holds PSDUs formed before the TXOP: they are sent as they are).
    pub fn exceeds(&self, budget: crate::time::SimDuration, band: crate::phy::mcs::Band, airtime: crate::phy::airtime::AirtimeOptions) -> bool {
        self.chain.get(0).is_none_or(|(txv, _)| crate::phy::airtime::ppdu_duration_with(&txv, self.psdu_len, band, airtime) > budget)
    }
}

/// How the hardware process of a PSDU ended.
#[derive(Clone, Copy, Debug)]
pub struct TxStatus<'a> {
    /// An ACK/BlockAck was received.
    pub success: bool,
    /// Per MPDU: acknowledged.
    pub received: &'a [bool],
    /// Hardware attempts made.
    pub attempts: u32,
}

/// Side effects of a transmit path: drops, and the receiver windows to move when MPDUs are abandoned.
pub struct PathOut<'a> {
    pub log: &'a mut PacketLog,
    pub dropped: &'a mut Vec<Dropped>,
    /// (link, ac, upto): the originator gave up on every sequence number below `upto`.
    pub releases: &'a mut Vec<(u32, usize, u64)>,
}

/// How a node's link is set up on its transmit path.
pub struct LinkSetup {
    /// Medium link index.
    pub id: u32,
    /// The link's fixed rate (the start of an adaptive controller's chain otherwise).
    pub txv: TxVector,
    /// An adaptive rate controller (paths that take one, [`TransmitPath::takes_rate_control`]).
    pub rc: Option<crate::ratectl::AnyRateControl>,
    /// Durations of the link's ACK and BlockAck responses.
    pub ack: crate::time::SimDuration,
    pub block_ack: crate::time::SimDuration,
}

/// What a transmit path is, as built: its type, its queues and each link's rate control.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PathInfo {
    /// `fifo` or `linux` (with the stages mechanisms set in it: `queues` says which).
    pub path: String,
    /// Its queues and their limits, in a few words.
    pub queues: String,
    /// Per local link, in link order: the rate control that chose its rates.
    pub rate_control: Vec<crate::ratectl::RateControlInfo>,
}

impl PathInfo {
    /// A link's controller, or its fixed rate when it has none.
    pub fn link_rate_control(rc: Option<&crate::ratectl::AnyRateControl>, txv: &TxVector) -> crate::ratectl::RateControlInfo {
        use crate::ratectl::RateControl;
        rc.map_or_else(|| crate::ratectl::RateControlInfo::new("fixed", crate::ratectl::rate_name(txv), [*txv]), |r| r.info())
    }
}

/// A node's transmit path as the medium and the builder see it: `fifo` (ns-3's) or `linux` (mac80211 +
/// ath9k, with the stages mechanisms set in it).
pub trait TransmitPath: Send + Sync + std::fmt::Debug {
    /// Adds a link (in the node's local link order).
    fn add_link(&mut self, link: LinkSetup);
    /// Accepts a packet for local link `link` (index among this node's links) and queue `ac`.
    fn enqueue(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>);
    /// Whether queue `ac` has something to send.
    fn pending(&self, ac: usize) -> bool;
    /// The PSDU to transmit now for `ac`. `budget`: when `Some`, the PSDU plus SIFS and its response
    /// must fit in it (TXOP continuation); `None` otherwise `None` is returned without side effects.
    fn head(&mut self, now: SimTime, ac: usize, budget: Option<crate::time::SimDuration>, out: &mut PathOut<'_>) -> Option<Psdu>;
    /// The hardware is done with `psdu`.
    fn complete(&mut self, now: SimTime, psdu: Psdu, status: TxStatus<'_>, out: &mut PathOut<'_>);
    /// Counters for `summary.json`.
    fn stats(&self) -> serde_json::Value;
    /// What this path is, as built (the run's "what actually ran", `summary.json` `setup`).
    fn info(&self) -> PathInfo;
    /// The deadline of the PSDU at the head of AC `ac`'s hardware queue that the medium has not taken
    /// yet (`None` for paths without hardware time limits).
    fn hw_deadline(&self, _ac: usize) -> Option<SimTime> {
        None
    }
    /// Whether the medium must look at every AC of the node after each of its events: completing a PSDU
    /// of one AC may queue PSDUs for others (Law's one hardware budget over all ACs), or PSDUs carry
    /// hardware deadlines it enforces (Law; the Linux path with a time limit).
    fn shares_hardware(&self) -> bool {
        false
    }
    /// The hardware deadline ([`TransmitPath::hw_deadline`]) of AC `ac`'s head PSDU has passed before
    /// the medium took it: the PSDU, out of the hardware queue as if taken, with no attempt made (the
    /// medium completes it unacknowledged at once). By default the head as [`TransmitPath::head`]
    /// gives it.
    fn expire_head(&mut self, now: SimTime, ac: usize, out: &mut PathOut<'_>) -> Option<Psdu> {
        self.head(now, ac, None, out)
    }
    /// Whether the path drives an adaptive rate controller given in [`LinkSetup::rc`].
    fn takes_rate_control(&self) -> bool {
        false
    }
    /// A station link's airtime weight (µs), for paths with airtime fairness.
    fn set_airtime_weight(&mut self, _link: usize, _weight_us: i64) {}
    /// Puts a release gate between the path's driver and its hardware queues (`linux`), or at channel
    /// access where PSDUs form (`fifo`, the `formation` release point only); a path that cannot take it
    /// gives it back.
    fn set_release_gate(&mut self, gate: Box<dyn gate::ReleaseGate>) -> Result<(), Box<dyn gate::ReleaseGate>> {
        Err(gate)
    }
    /// Replaces the TXQ scheduler of every AC (`make(ac)`); false (nothing changed) on paths without
    /// mac80211 TXQs.
    #[must_use]
    fn set_txq_scheduler(&mut self, _make: &dyn Fn(usize) -> Box<dyn scheduler::TxqScheduler>) -> bool {
        false
    }
    /// Puts a driver policy into the path's driver; paths without mac80211 TXQs and an ath9k-style
    /// driver give it back.
    fn set_driver_policy(&mut self, policy: Box<dyn driver::DriverPolicy>) -> Result<(), Box<dyn driver::DriverPolicy>> {
        Err(policy)
    }
    /// Puts a mechanism's driver in place of the path's own (before any link is added); paths without
    /// a driver stage (`fifo`) give it back.
    fn set_driver(&mut self, driver: Box<dyn driver::Driver>) -> Result<(), Box<dyn driver::Driver>> {
        Err(driver)
    }
    /// Whether the path has timers of its own ([`TransmitPath::next_wakeup`]).
    fn has_timers(&self) -> bool {
        false
    }
    /// When the path needs [`TransmitPath::on_wakeup`].
    fn next_wakeup(&self) -> Option<SimTime> {
        None
    }
    /// The time [`TransmitPath::next_wakeup`] named has come.
    fn on_wakeup(&mut self, _now: SimTime, _out: &mut PathOut<'_>) {}
    /// A run-time command to the path (`set`, resolved against the scenario beforehand).
    fn on_command(&mut self, _now: SimTime, set: &serde_json::Map<String, serde_json::Value>) -> Result<(), (String, String)> {
        match set.keys().next() {
            Some(k) => Err((k.clone(), "this transmit path takes no run-time commands".into())),
            None => Ok(()),
        }
    }
}

/// A node's transmit path.
pub type TxPath = Box<dyn TransmitPath>;
