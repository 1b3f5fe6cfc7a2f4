//! mac80211's airtime-fairness scheduler (AFS), Linux ≥ 6.0 (`wifi-model.md` §5.4): per AC a list of
//! active TXQs; per (station, AC) an airtime deficit in µs starting at the station weight (256 µs) and
//! refilled by `weight << 3` (2048 µs) when it goes negative; a TXQ that still has frames returns to the
//! *head* of the list, so a station keeps being served until its deficit runs out. With fairness off
//! the list is plain round robin.

use super::scheduler::TxqScheduler;
use crate::time::SimTime;
use std::collections::VecDeque;

/// Default station weight, µs (IEEE80211_DEFAULT_AIRTIME_WEIGHT).
pub const DEFAULT_WEIGHT_US: i64 = 256;

/// The scheduler of one AC over `n` TXQs (one per station link).
#[derive(Clone, Debug)]
pub struct AirtimeScheduler {
    enabled: bool,
    active: VecDeque<usize>,
    listed: Vec<bool>,
    deficit: Vec<i64>,
    weight: Vec<i64>,
    /// Airtime charged per TXQ (µs), for reporting shares.
    pub charged_us: Vec<u64>,
}

impl AirtimeScheduler {
    pub fn new(n: usize, enabled: bool) -> Self {
        AirtimeScheduler {
            enabled,
            active: VecDeque::new(),
            listed: vec![false; n],
            deficit: vec![DEFAULT_WEIGHT_US; n],
            weight: vec![DEFAULT_WEIGHT_US; n],
            charged_us: vec![0; n],
        }
    }

    /// Sets a station's weight (µs); its refill quantum is `weight << 3`.
    pub fn set_weight(&mut self, txq: usize, weight_us: i64) {
        self.weight[txq] = weight_us.max(1);
    }

    /// Marks a TXQ as having frames (appended to the tail if not listed).
    pub fn activate(&mut self, txq: usize) {
        if !self.listed[txq] {
            self.listed[txq] = true;
            self.active.push_back(txq);
        }
    }

    /// Whether no TXQ has frames to serve.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    /// The next TXQ to serve, removed from the list (`ieee80211_next_txq`); `None` if none is active.
    pub fn next_txq(&mut self) -> Option<usize> {
        // Terminates: every pass over a negative head adds a positive quantum to its deficit.
        loop {
            let q = *self.active.front()?;
            if self.enabled && self.deficit[q] < 0 {
                self.deficit[q] += self.weight[q] << 3;
                self.active.rotate_left(1);
                continue;
            }
            self.active.pop_front();
            self.listed[q] = false;
            return Some(q);
        }
    }

    /// Gives a TXQ back after serving it (`ieee80211_return_txq`): to the head if it still has frames.
    pub fn return_txq(&mut self, txq: usize, has_frames: bool) {
        if has_frames && !self.listed[txq] {
            self.listed[txq] = true;
            if self.enabled {
                self.active.push_front(txq);
            } else {
                self.active.push_back(txq);
            }
        }
    }

    /// Charges airtime (µs) to a station (`ieee80211_sta_register_airtime`).
    pub fn charge(&mut self, txq: usize, airtime_us: u64) {
        self.charged_us[txq] += airtime_us;
        if self.enabled {
            self.deficit[txq] -= airtime_us as i64;
        }
    }

    pub fn deficit(&self, txq: usize) -> i64 {
        self.deficit[txq]
    }
}

impl TxqScheduler for AirtimeScheduler {
    fn resize(&mut self, n: usize) {
        *self = AirtimeScheduler::new(n, self.enabled);
    }
    fn set_weight(&mut self, txq: usize, weight_us: i64) {
        AirtimeScheduler::set_weight(self, txq, weight_us);
    }
    fn activate(&mut self, _now: SimTime, txq: usize) {
        AirtimeScheduler::activate(self, txq);
    }
    fn is_empty(&self) -> bool {
        AirtimeScheduler::is_empty(self)
    }
    fn next_txq(&mut self, _now: SimTime) -> Option<usize> {
        AirtimeScheduler::next_txq(self)
    }
    fn return_txq(&mut self, txq: usize, has_frames: bool) {
        AirtimeScheduler::return_txq(self, txq, has_frames);
    }
    fn charge(&mut self, txq: usize, airtime_us: u64) {
        AirtimeScheduler::charge(self, txq, airtime_us);
    }
    fn deficit(&self, txq: usize) -> i64 {
        AirtimeScheduler::deficit(self, txq)
    }
    fn charged_us(&self) -> &[u64] {
        &self.charged_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two backlogged stations, one using 4× the airtime per PSDU: with fairness the slow one is served
    /// a quarter as often, so both get equal airtime.
    #[test]
    fn drr_equalises_airtime() {
        let mut s = AirtimeScheduler::new(2, true);
        let cost = [2000u64, 500];
        let mut served = [0u64; 2];
        s.activate(0);
        s.activate(1);
        for _ in 0..10_000 {
            let q = s.next_txq().unwrap();
            served[q] += 1;
            s.charge(q, cost[q]);
            s.return_txq(q, true);
        }
        let air = [served[0] * cost[0], served[1] * cost[1]];
        let share = air[0] as f64 / (air[0] + air[1]) as f64;
        assert!((share - 0.5).abs() < 0.02, "{share} {served:?}");
    }

    /// A lone station far in debt is still served (after as many refills as it takes).
    #[test]
    fn a_single_station_in_debt_is_served() {
        let mut s = AirtimeScheduler::new(1, true);
        s.activate(0);
        assert_eq!(s.next_txq(), Some(0));
        s.charge(0, 10_000);
        s.return_txq(0, true);
        assert_eq!(s.next_txq(), Some(0));
        assert!(s.deficit(0) >= 0);
    }

    #[test]
    fn without_fairness_it_is_round_robin() {
        let mut s = AirtimeScheduler::new(2, false);
        s.activate(0);
        s.activate(1);
        let mut order = vec![];
        for _ in 0..4 {
            let q = s.next_txq().unwrap();
            order.push(q);
            s.charge(q, if q == 0 { 5000 } else { 10 });
            s.return_txq(q, true);
        }
        assert_eq!(order, vec![0, 1, 0, 1]);
    }

    #[test]
    fn a_returned_txq_stays_at_the_head_until_its_deficit_runs_out() {
        let mut s = AirtimeScheduler::new(2, true);
        s.activate(0);
        s.activate(1);
        let q = s.next_txq().unwrap();
        assert_eq!(q, 0);
        s.charge(0, 100); // deficit 256 → 156: still ≥ 0
        s.return_txq(0, true);
        assert_eq!(s.next_txq(), Some(0));
        s.charge(0, 200); // → −44
        s.return_txq(0, true);
        assert_eq!(s.next_txq(), Some(1), "negative deficit: refilled and moved behind station 1");
        assert_eq!(s.deficit(0), -44 + 2048);
    }
}
