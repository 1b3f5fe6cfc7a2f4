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
//! The Linux AP path (qdisc → mac80211 txqs with FQ-CoDel and airtime fairness → ath9k driver with
//! hardware queues and multi-rate retry) is the second variant.
//!
//! * [`law::LawPath`] — Law's AP path (seed 000): one driver queue, at most two PSDUs in hardware over
//!   all ACs, Limit_q drops, and a per-PSDU hardware time limit ([`Psdu::hw_deadline`]) that the
//!   medium enforces.

pub mod airtime;
pub mod fifo;
pub mod gate;
pub mod law;
pub mod linux;
pub mod scheduler;

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

/// Any transmit path.
#[derive(Debug)]
pub enum TxPath {
    Fifo(fifo::FifoPath),
    Linux(Box<linux::LinuxPath>),
    Law(Box<law::LawPath>),
}

impl TxPath {
    /// Accepts a packet for local link `link` (index among this node's links) and queue `ac`.
    pub fn enqueue(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>) {
        match self {
            TxPath::Fifo(p) => p.enqueue(now, link, ac, pkt, out),
            TxPath::Linux(p) => p.enqueue(now, link, ac, pkt, out),
            TxPath::Law(p) => p.enqueue(now, link, ac, pkt, out),
        }
    }

    /// Whether queue `ac` has something to send.
    pub fn pending(&self, ac: usize) -> bool {
        match self {
            TxPath::Fifo(p) => p.pending(ac),
            TxPath::Linux(p) => p.pending(ac),
            TxPath::Law(p) => p.pending(ac),
        }
    }

    /// The PSDU to transmit now for `ac`. `budget`: when `Some`, the PSDU plus SIFS and its response
    /// must fit in it (TXOP continuation); `None` otherwise `None` is returned without side effects.
    pub fn head(&mut self, now: SimTime, ac: usize, budget: Option<crate::time::SimDuration>, out: &mut PathOut<'_>) -> Option<Psdu> {
        match self {
            TxPath::Fifo(p) => p.head(now, ac, budget, out),
            TxPath::Linux(p) => p.head(now, ac, budget, out),
            TxPath::Law(p) => p.head(now, ac, budget, out),
        }
    }

    /// The hardware is done with `psdu`.
    pub fn complete(&mut self, now: SimTime, psdu: Psdu, status: TxStatus<'_>, out: &mut PathOut<'_>) {
        match self {
            TxPath::Fifo(p) => p.complete(now, psdu, status, out),
            TxPath::Linux(p) => p.complete(now, psdu, status, out),
            TxPath::Law(p) => p.complete(now, psdu, status, out),
        }
    }

    /// Counters for `summary.json`.
    pub fn stats(&self) -> serde_json::Value {
        match self {
            TxPath::Fifo(p) => p.stats(),
            TxPath::Linux(p) => p.stats(),
            TxPath::Law(p) => p.stats(),
        }
    }

    /// The deadline of the PSDU at the head of AC `ac`'s hardware queue that the medium has not taken
    /// yet (`None` for paths without hardware time limits).
    pub fn hw_deadline(&self, ac: usize) -> Option<SimTime> {
        match self {
            TxPath::Law(p) => p.hw_deadline(ac),
            _ => None,
        }
    }

    /// Puts a release gate between the path's driver and its hardware queues; refused (given back) by
    /// paths without that boundary (`fifo` forms PSDUs at channel access; Law has its own driver).
    pub fn set_release_gate(&mut self, gate: Box<dyn gate::ReleaseGate>) -> Result<(), Box<dyn gate::ReleaseGate>> {
        match self {
            TxPath::Linux(p) => {
                p.set_release_gate(gate);
                Ok(())
            }
            _ => Err(gate),
        }
    }

    /// Replaces the TXQ scheduler of every AC (`make(ac)`); returns false (and changes nothing) on paths
    /// without mac80211 TXQs.
    #[must_use]
    pub fn set_txq_scheduler(&mut self, make: &dyn Fn(usize) -> Box<dyn scheduler::TxqScheduler>) -> bool {
        match self {
            TxPath::Linux(p) => {
                p.set_txq_scheduler(make);
                true
            }
            _ => false,
        }
    }

    /// When the path needs [`TxPath::on_wakeup`] (its release gate opens again).
    pub fn next_wakeup(&self) -> Option<SimTime> {
        match self {
            TxPath::Linux(p) => p.next_wakeup(),
            _ => None,
        }
    }

    /// The time [`TxPath::next_wakeup`] named has come.
    pub fn on_wakeup(&mut self, now: SimTime, out: &mut PathOut<'_>) {
        if let TxPath::Linux(p) = self {
            p.on_wakeup(now, out);
        }
    }

    /// Whether the path has timers of its own ([`TxPath::next_wakeup`]): a release gate is installed.
    pub fn has_timers(&self) -> bool {
        matches!(self, TxPath::Linux(p) if p.has_gate())
    }

    /// Whether completing a PSDU of one AC may queue PSDUs for other ACs (one hardware budget over all
    /// ACs), and PSDUs may carry hardware deadlines.
    pub fn shares_hardware(&self) -> bool {
        matches!(self, TxPath::Law(_))
    }
}
