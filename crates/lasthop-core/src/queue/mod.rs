//! Queue disciplines. Each is a state machine: `enqueue(now, pkt)` returns the packets it refused or
//! dropped, `dequeue(now)` returns the next packet to send (and any it dropped on the way, for AQMs).
//! The set is closed, so dispatch goes through [`AnyQueue`].

pub mod codel;
mod error;
mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod pie;

pub use codel::{Codel, CodelParams, CodelQdiscParams, CodelStats, CodelVars};
pub use error::ParamError;
pub use fifo::Fifo;
pub use fq::{Fq, FqParams, FqStats, TinId, TinStats};
pub use fq_codel::{FqCodel, FqCodelParams, FqCodelStats};
pub use pie::{Pie, PieParams, PieStats};

use crate::packet::Packet;
use crate::scenario::QueueConfig;
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

/// A packet the queue dropped, with the reason.
pub type Dropped = (Packet, DropReason);

/// Any queue discipline.
#[derive(Debug)]
pub enum AnyQueue {
    Fifo(Fifo),
}

impl AnyQueue {
    pub fn from_config(cfg: &QueueConfig) -> Self {
        match cfg {
            QueueConfig::Fifo { packets, bytes } => AnyQueue::Fifo(Fifo::new(*packets, *bytes)),
        }
    }

    /// Offers a packet; a refused packet comes back as `Err`.
    #[inline]
    pub fn enqueue(&mut self, now: SimTime, p: Packet) -> Result<(), Dropped> {
        match self {
            AnyQueue::Fifo(q) => q.enqueue(now, p),
        }
    }

    /// Takes the next packet to send. AQM drops on the way are pushed to `drops`.
    #[inline]
    pub fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Dropped>) -> Option<Packet> {
        let _ = drops;
        match self {
            AnyQueue::Fifo(q) => q.dequeue(now),
        }
    }

    pub fn len_packets(&self) -> usize {
        match self {
            AnyQueue::Fifo(q) => q.len_packets(),
        }
    }

    pub fn len_bytes(&self) -> u64 {
        match self {
            AnyQueue::Fifo(q) => q.len_bytes(),
        }
    }

    pub fn stats(&self) -> QueueStats {
        match self {
            AnyQueue::Fifo(q) => q.stats,
        }
    }
}
