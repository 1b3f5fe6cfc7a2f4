//! The TXQ scheduler: which station's TXQ of an AC the driver serves next (mac80211's
//! `ieee80211_next_txq` / `ieee80211_return_txq` / airtime accounting).
//!
//! The Linux path keeps one scheduler per AC over its station TXQs (index = the station link's local
//! index). mac80211's airtime-fairness DRR ([`super::airtime::AirtimeScheduler`]) is the default; a
//! mechanism replaces it on a node with [`crate::mech::NodeBuilder::set_txq_scheduler`] (LAST-PQ's
//! latency-aware scheduler goes here).

use crate::time::SimTime;

/// The scheduler of one AC over a node's station TXQs.
pub trait TxqScheduler: Send + Sync + std::fmt::Debug {
    /// The node now has `n` station links: forget every TXQ's state and cover `0..n`.
    fn resize(&mut self, n: usize);
    /// A station's airtime weight, µs (mac80211's default 256).
    fn set_weight(&mut self, _txq: usize, _weight_us: i64) {}
    /// TXQ `txq` has frames: it becomes eligible.
    fn activate(&mut self, now: SimTime, txq: usize);
    /// No TXQ is eligible.
    fn is_empty(&self) -> bool;
    /// The TXQ to serve now, taken off the eligible set; `None` if none is eligible.
    fn next_txq(&mut self, now: SimTime) -> Option<usize>;
    /// Gives back the TXQ [`TxqScheduler::next_txq`] returned, after the driver served it;
    /// `has_frames`: it is still backlogged.
    fn return_txq(&mut self, txq: usize, has_frames: bool);
    /// Airtime (µs) the TXQ's last PSDU used, all attempts.
    fn charge(&mut self, txq: usize, airtime_us: u64);
    /// A TXQ's airtime deficit, µs (0 for schedulers without one).
    fn deficit(&self, _txq: usize) -> i64 {
        0
    }
    /// Airtime charged per TXQ so far (µs), for `summary.json`.
    fn charged_us(&self) -> &[u64];
}
