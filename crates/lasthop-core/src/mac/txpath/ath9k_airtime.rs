//! ath9k's own airtime-fairness scheduler, Linux ≈ 4.11–4.x, before mac80211 took scheduling over
//! (`wifi-model.md` §5.4 "older form"; the DRR++ the LAST-PQ paper describes; `afs_variant =
//! "ath9k-drr++"`). `ath_txq_schedule` of that driver, per AC:
//!
//! * two lists of TXQs, *new* and *old* (`acq_new` / `acq_old`); one airtime deficit per (station, AC),
//!   starting at the quantum, 300 µs (ATH_AIRTIME_QUANTUM), and charged the PSDUs' airtime;
//! * a TXQ that becomes backlogged joins the tail of *new* if its station's deficit is positive, else
//!   of *old* (`__ath_tx_queue_tid`): a sparse station is served ahead of the backlogged ones, as FQ
//!   serves its new flows first;
//! * the head of *new* (of *old* when *new* is empty) is served; a head whose deficit is ≤ 0 first gets
//!   a quantum and goes to the tail of *old*; a served TXQ that is still backlogged stays at the head
//!   of its list (with fairness off it goes to the tail of *old*: round robin); one with nothing left
//!   leaves, except that from *new* it goes to the tail of *old* while *old* holds others (so it cannot
//!   come back into *new* at once).
//!
//! Against mac80211's ≥ 6.0 scheduler ([`super::airtime::AirtimeScheduler`]): the quantum is 300 µs
//! (not 2048 = weight << 3), there are no station weights, and the *new* list gives a station that
//! was idle precedence.

use super::scheduler::TxqScheduler;
use crate::time::SimTime;
use std::collections::VecDeque;

/// The deficit refill and a station's starting deficit, µs (ATH_AIRTIME_QUANTUM).
pub const ATH_AIRTIME_QUANTUM_US: i64 = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// In no list.
    Idle,
    New,
    Old,
    /// Handed to the driver by `next_txq`, from *new* or not.
    Serving { from_new: bool },
}

/// The scheduler of one AC over `n` TXQs (one per station link).
#[derive(Clone, Debug)]
pub struct Ath9kAirtimeScheduler {
    enabled: bool,
    new: VecDeque<usize>,
    old: VecDeque<usize>,
    at: Vec<At>,
    deficit: Vec<i64>,
    charged_us: Vec<u64>,
}

impl Ath9kAirtimeScheduler {
    /// `enabled`: airtime fairness (deficits); without it the lists are served round robin.
    pub fn new(n: usize, enabled: bool) -> Self {
        Ath9kAirtimeScheduler {
            enabled,
            new: VecDeque::new(),
            old: VecDeque::new(),
            at: vec![At::Idle; n],
            deficit: vec![ATH_AIRTIME_QUANTUM_US; n],
            charged_us: vec![0; n],
        }
    }

    fn push_old(&mut self, q: usize) {
        self.old.push_back(q);
        self.at[q] = At::Old;
    }
}

impl TxqScheduler for Ath9kAirtimeScheduler {
    fn resize(&mut self, n: usize) {
        *self = Ath9kAirtimeScheduler::new(n, self.enabled);
    }
    fn activate(&mut self, _now: SimTime, q: usize) {
        if self.at[q] != At::Idle {
            return;
        }
        if self.deficit[q] > 0 {
            self.new.push_back(q);
            self.at[q] = At::New;
        } else {
            self.push_old(q);
        }
    }
    fn is_empty(&self) -> bool {
        self.new.is_empty() && self.old.is_empty()
    }
    fn next_txq(&mut self, _now: SimTime) -> Option<usize> {
        // Terminates: every pass over a head in debt adds a positive quantum to its deficit.
        loop {
            let from_new = !self.new.is_empty();
            let list = if from_new { &mut self.new } else { &mut self.old };
            let q = list.pop_front()?;
            if self.enabled && self.deficit[q] <= 0 {
                self.deficit[q] += ATH_AIRTIME_QUANTUM_US;
                self.push_old(q);
                continue;
            }
            self.at[q] = At::Serving { from_new };
            return Some(q);
        }
    }
    fn return_txq(&mut self, q: usize, has_frames: bool) {
        let At::Serving { from_new } = self.at[q] else { return };
        match (has_frames, self.enabled) {
            (true, true) if from_new => {
                self.new.push_front(q);
                self.at[q] = At::New;
            }
            (true, true) => {
                self.old.push_front(q);
                self.at[q] = At::Old;
            }
            (true, false) => self.push_old(q),
            (false, _) if from_new && !self.old.is_empty() => self.push_old(q),
            (false, _) => self.at[q] = At::Idle,
        }
    }
    fn charge(&mut self, q: usize, airtime_us: u64) {
        self.charged_us[q] += airtime_us;
        if self.enabled {
            self.deficit[q] -= airtime_us as i64;
        }
    }
    fn deficit(&self, q: usize) -> i64 {
        self.deficit[q]
    }
    fn charged_us(&self) -> &[u64] {
        &self.charged_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: SimTime = SimTime::ZERO;

    /// Serves `s` once: the TXQ it picks, charged `cost[q]`, returned backlogged.
    fn serve(s: &mut Ath9kAirtimeScheduler, cost: &[u64]) -> usize {
        let q = s.next_txq(T).unwrap();
        s.charge(q, cost[q]);
        s.return_txq(q, true);
        q
    }

    /// By hand: A (0) costs 200 µs per PSDU, B (1) 100 µs; both backlogged from the start, on *new* at
    /// 300. A is served at 300 and 100 (→ −100), refilled to 200 and sent to *old*; B is served at 300,
    /// 200, 100 (→ 0), refilled to 300 and sent to *old* behind A; A is served at 200 (→ 0), refilled to
    /// 300 behind B; B at 300, 200, 100; then A again. Over a long run both use ≈ equal airtime.
    #[test]
    fn deficits_by_hand_and_equal_airtime() {
        let mut s = Ath9kAirtimeScheduler::new(2, true);
        s.activate(T, 0);
        s.activate(T, 1);
        let cost = [200, 100];
        let order: Vec<usize> = (0..10).map(|_| serve(&mut s, &cost)).collect();
        assert_eq!(order, vec![0, 0, 1, 1, 1, 0, 1, 1, 1, 0]);
        for _ in 0..10_000 {
            serve(&mut s, &cost);
        }
        let air = s.charged_us();
        let share = air[0] as f64 / (air[0] + air[1]) as f64;
        assert!((share - 0.5).abs() < 0.02, "{share} {air:?}");
    }

    /// A station that was idle joins *new* and is served before the backlogged one at the head of *old*;
    /// once it empties it does not stay in *new*.
    #[test]
    fn a_sparse_station_goes_first() {
        let mut s = Ath9kAirtimeScheduler::new(2, true);
        s.activate(T, 0);
        let cost = [1000, 100];
        assert_eq!(serve(&mut s, &cost), 0); // 300 → −700: refilled on its next turn, to old
        assert_eq!(s.next_txq(T), Some(0), "alone: refilled until positive, then served");
        s.charge(0, 1000);
        s.return_txq(0, true);
        s.activate(T, 1);
        assert_eq!(s.next_txq(T), Some(1), "the newly backlogged station first");
        s.charge(1, 100);
        s.return_txq(1, false); // emptied from new while old holds A: to old's tail
        assert_eq!(s.at[1], At::Old);
        s.activate(T, 1); // listed already: stays in old
        assert_eq!(s.at[1], At::Old);
    }

    /// A TXQ emptied from *new* with nothing in *old*, or from *old*, leaves the lists.
    #[test]
    fn an_empty_txq_leaves() {
        let mut s = Ath9kAirtimeScheduler::new(1, true);
        s.activate(T, 0);
        assert_eq!(s.next_txq(T), Some(0));
        s.return_txq(0, false);
        assert!(s.is_empty());
        assert_eq!(s.next_txq(T), None);
    }

    #[test]
    fn without_fairness_it_is_round_robin() {
        let mut s = Ath9kAirtimeScheduler::new(3, false);
        for q in 0..3 {
            s.activate(T, q);
        }
        let cost = [5000, 10, 10];
        let order: Vec<usize> = (0..6).map(|_| serve(&mut s, &cost)).collect();
        assert_eq!(order, vec![0, 1, 2, 0, 1, 2]);
    }
}
