//! Queue disciplines. Each is a state machine: `enqueue(now, pkt)` returns the packets it refused or
//! dropped, `dequeue(now)` returns the next packet to send (and any it dropped on the way, for AQMs).
//! The set is closed, so dispatch goes through [`AnyQueue`].

pub mod codel;
pub mod config;
mod error;
mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod pie;
pub mod tbf;

pub use codel::{Codel, CodelParams, CodelQdiscParams, CodelStats, CodelVars};
pub use error::ParamError;
pub use fifo::Fifo;
pub use fq::{Fq, FqParams, FqStats, TinId, TinStats};
pub use fq_codel::{FqCodel, FqCodelParams, FqCodelStats};
pub use pie::{Pie, PieParams, PieStats};

use crate::packet::Packet;
use crate::rng::Rng;
pub use config::QueueConfig;
use crate::stats::DropReason;
use crate::time::SimTime;

/// Counters every queue keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueStats {
    pub enqueued: u64,
    pub dequeued: u64,
    pub dropped: u64,
    pub max_packets: u64,
    pub max_bytes: u64,
}

/// Appends an admitted packet to a tail-drop queue's backlog: stamps its enqueue time and keeps the
/// byte count and the counters every queue reports (shared by fifo, codel and pie).
pub(crate) fn admit(q: &mut std::collections::VecDeque<Packet>, bytes: &mut u64, stats: &mut QueueStats, now: SimTime, mut p: Packet) {
    p.enqueued = now;
    *bytes += p.size as u64;
    q.push_back(p);
    stats.enqueued += 1;
    stats.max_packets = stats.max_packets.max(q.len() as u64);
    stats.max_bytes = stats.max_bytes.max(*bytes);
}

/// A packet the queue dropped, with the reason.
pub type Dropped = (Packet, DropReason);

/// The parameters of any queue discipline but the FIFO (whose config is the scenario's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueParams {
    /// Linux `codel` qdisc.
    Codel(CodelQdiscParams),
    /// Linux `fq_codel` qdisc.
    FqCodel(FqCodelParams),
    /// Linux `pie` qdisc.
    Pie(PieParams),
}

impl QueueParams {
    pub fn validate(&self) -> Result<(), ParamError> {
        match self {
            QueueParams::Codel(p) => p.validate(),
            QueueParams::FqCodel(p) => p.validate(),
            QueueParams::Pie(p) => p.validate(),
        }
    }
}

/// Algorithm-specific counters of a queue, for results.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AqmStats {
    Fifo,
    Codel(CodelStats),
    FqCodel(FqCodelStats),
    Pie(PieStats),
}

/// Any queue discipline.
#[derive(Debug)]
pub enum AnyQueue {
    Fifo(Fifo),
    Codel(Codel),
    FqCodel(Box<FqCodel>),
    Pie(Box<Pie>),
}

impl AnyQueue {
    /// A queue as a scenario configures it; `rng` as in [`AnyQueue::from_params`].
    pub fn from_config(cfg: &QueueConfig, rng: Rng) -> Self {
        match cfg {
            QueueConfig::Fifo { packets, bytes } => AnyQueue::Fifo(Fifo::new(*packets, *bytes)),
            QueueConfig::Codel(p) => Self::from_params(&QueueParams::Codel(*p), rng),
            QueueConfig::FqCodel(p) => Self::from_params(&QueueParams::FqCodel(*p), rng),
            QueueConfig::Pie(p) => Self::from_params(&QueueParams::Pie(*p), rng),
        }
    }

    /// A queue from its parameters. `rng` is the queue's own generator, by convention
    /// `Rng::derive(master_seed, "<link>/queue")`: `fq_codel` draws its hash perturbation from it,
    /// PIE keeps it for its drop decisions, CoDel ignores it.
    pub fn from_params(params: &QueueParams, mut rng: Rng) -> Self {
        match params {
            QueueParams::Codel(p) => Self::codel(*p),
            QueueParams::FqCodel(p) => Self::fq_codel(*p, &mut rng),
            QueueParams::Pie(p) => Self::pie(*p, rng),
        }
    }

    /// The `codel` qdisc.
    pub fn codel(params: CodelQdiscParams) -> Self {
        AnyQueue::Codel(Codel::new(params))
    }

    /// The `fq_codel` qdisc; its flow-hash perturbation is drawn from `rng`.
    pub fn fq_codel(params: FqCodelParams, rng: &mut Rng) -> Self {
        AnyQueue::FqCodel(Box::new(FqCodel::new(params, rng)))
    }

    /// The `pie` qdisc, drawing its drop decisions from `rng`.
    pub fn pie(params: PieParams, rng: Rng) -> Self {
        AnyQueue::Pie(Box::new(Pie::new(params, rng)))
    }

    /// Offers a packet; a refused packet comes back as `Err` (`QueueFull` at a limit, `Aqm` for a
    /// PIE early drop). `fq_codel` may instead cut other packets: collect them with
    /// [`AnyQueue::drain_drops`] right after (else the next `dequeue` reports them).
    #[inline]
    pub fn enqueue(&mut self, now: SimTime, p: Packet) -> Result<(), Dropped> {
        match self {
            AnyQueue::Fifo(q) => q.enqueue(now, p),
            AnyQueue::Codel(q) => q.enqueue(now, p),
            AnyQueue::FqCodel(q) => q.enqueue(now, p),
            AnyQueue::Pie(q) => q.enqueue(now, p),
        }
    }

    /// Moves packets dropped by the last enqueues, other than the offered one, to `out` (reason
    /// `QueueFull`). Only `fq_codel` has any.
    #[inline]
    pub fn drain_drops(&mut self, out: &mut Vec<Dropped>) {
        if let AnyQueue::FqCodel(q) = self {
            q.drain_drops(out);
        }
    }

    /// Takes the next packet to send. AQM drops on the way (`Aqm`), and enqueue-time drops not yet
    /// drained (`QueueFull`), are pushed to `drops`.
    #[inline]
    pub fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Dropped>) -> Option<Packet> {
        match self {
            AnyQueue::Fifo(q) => q.dequeue(now),
            AnyQueue::Codel(q) => q.dequeue(now, drops),
            AnyQueue::FqCodel(q) => q.dequeue(now, drops),
            AnyQueue::Pie(q) => q.dequeue(now),
        }
    }

    /// When the queue next needs [`AnyQueue::advance_to`] (PIE's probability update); `None` for
    /// queues without timers and for an idle PIE.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        match self {
            AnyQueue::Pie(q) => q.next_wakeup(),
            _ => None,
        }
    }

    /// Runs the timers due at or before `now`. `enqueue` and `dequeue` do this themselves, so calling
    /// it only keeps reported state (PIE's probability) current between packets.
    pub fn advance_to(&mut self, now: SimTime) {
        if let AnyQueue::Pie(q) = self {
            q.advance_to(now);
        }
    }

    pub fn len_packets(&self) -> usize {
        match self {
            AnyQueue::Fifo(q) => q.len_packets(),
            AnyQueue::Codel(q) => q.len_packets(),
            AnyQueue::FqCodel(q) => q.len_packets(),
            AnyQueue::Pie(q) => q.len_packets(),
        }
    }

    pub fn len_bytes(&self) -> u64 {
        match self {
            AnyQueue::Fifo(q) => q.len_bytes(),
            AnyQueue::Codel(q) => q.len_bytes(),
            AnyQueue::FqCodel(q) => q.len_bytes(),
            AnyQueue::Pie(q) => q.len_bytes(),
        }
    }

    /// The qdisc's Linux name.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyQueue::Fifo(_) => "pfifo",
            AnyQueue::Codel(_) => "codel",
            AnyQueue::FqCodel(_) => "fq_codel",
            AnyQueue::Pie(_) => "pie",
        }
    }

    pub fn stats(&self) -> QueueStats {
        match self {
            AnyQueue::Fifo(q) => q.stats,
            AnyQueue::Codel(q) => q.stats,
            AnyQueue::FqCodel(q) => q.stats,
            AnyQueue::Pie(q) => q.stats,
        }
    }

    /// The algorithm's own counters.
    pub fn aqm_stats(&self) -> AqmStats {
        match self {
            AnyQueue::Fifo(_) => AqmStats::Fifo,
            AnyQueue::Codel(q) => AqmStats::Codel(q.codel_stats()),
            AnyQueue::FqCodel(q) => AqmStats::FqCodel(q.fq_codel_stats()),
            AnyQueue::Pie(q) => AqmStats::Pie(q.pie_stats()),
        }
    }
}

#[cfg(test)]
#[path = "any_tests.rs"]
mod tests;
