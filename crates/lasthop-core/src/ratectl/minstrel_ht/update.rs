//! Statistics updates and rate selection: `minstrel_ht_update_stats` and the helpers it calls
//! (`calc_rate_stats`, `get_tp_avg`, `sort_best_tp_rates`, `set_best_prob_rate`,
//! `prob_rate_reduce_streams`, `downgrade_rate`, `calc_retransmit`, `avg_ampdu_len`).
//!
//! All arithmetic is the kernel's integer arithmetic (Q12 probabilities, µs overheads, ns durations),
//! so rankings and ties come out as in Linux.

use super::table::{ewma, filter_avg_add, frac, SCALE};
use super::{MinstrelHt, MinstrelVariant, CW_MAX, CW_MIN, T_SLOT_US};
use crate::time::SimTime;

impl MinstrelHt {
    /// `minstrel_ht_avg_ampdu_len`: the A-MPDU length used for overhead sharing and retry counts.
    pub(super) fn avg_ampdu_len_pkts(&self) -> u32 {
        if self.avg_ampdu_len != 0 {
            return self.avg_ampdu_len >> SCALE;
        }
        if !self.is_modern() {
            return super::table::AVG_AMPDU_SIZE as u32;
        }
        let tp0 = &self.rates[self.max_tp[0]];
        if self.groups[tp0.group].legacy {
            return 1;
        }
        match tp0.duration_ns {
            d if d > 400_000 => 2,
            d if d > 250_000 => 4,
            d if d > 150_000 => 8,
            _ => 16,
        }
    }

    /// `minstrel_ht_get_tp_avg`: expected throughput of rate `idx` at probability `prob` (Q12), in the
    /// kernel's unit (100 × packets per ms, scaled by the probability, truncated).
    pub(super) fn tp_avg(&self, idx: usize, prob: u32) -> u32 {
        if prob < frac(10, 100) {
            return 0;
        }
        let rate = &self.rates[idx];
        let (overhead, ampdu_len) = if self.groups[rate.group].legacy {
            (self.ovh.legacy, 1)
        } else {
            (self.ovh.ht, self.avg_ampdu_len_pkts().max(1))
        };
        let nsecs = (1000 * overhead / ampdu_len) as u64 + rate.duration_ns as u64;
        let p = prob.min(frac(90, 100)) as u64;
        ((100 * (p * 1_000_000 / nsecs)) >> SCALE) as u32
    }

    fn tp_of(&self, idx: usize) -> u32 {
        self.tp_avg(idx, self.rates[idx].st.prob)
    }

    fn prob_of(&self, idx: usize) -> u32 {
        self.rates[idx].st.prob
    }

    fn dur(&self, idx: usize) -> u32 {
        self.rates[idx].duration_ns
    }

    /// `minstrel_ht_calc_rate_stats` (modern) / `minstrel_calc_rate_stats` (legacy): folds the
    /// interval's counters into the probability and clears them.
    fn calc_rate_stats(&mut self, idx: usize) {
        let (c2, c3, level) = (
            self.p.filter_c2_q12,
            self.p.filter_c3_q12,
            self.p.ewma_level,
        );
        let modern = self.is_modern();
        let st = &mut self.rates[idx].st;
        if st.attempts > 0 {
            let cur = frac(st.success.min(st.attempts), st.attempts);
            if modern {
                let mut taps = (st.prob, st.prob_1);
                filter_avg_add(&mut taps, cur, c2, c3);
                (st.prob, st.prob_1) = taps;
            } else {
                st.prob = if st.att_hist == 0 {
                    cur
                } else {
                    ewma(st.prob, cur, level)
                };
            }
            st.att_hist += st.attempts as u64;
            st.succ_hist += st.success as u64;
            st.sample_skipped = 0;
        } else {
            st.sample_skipped = st.sample_skipped.saturating_add(1);
        }
        st.last_success = st.success;
        st.last_attempts = st.attempts;
        st.success = 0;
        st.attempts = 0;
    }

    /// `minstrel_ht_sort_best_tp_rates`: inserts `idx` into a best-4 list (ties → higher probability).
    fn sort_best_tp(&self, idx: usize, list: &mut [usize; 4]) {
        let (cur_prob, cur_tp) = (self.prob_of(idx), self.tp_of(idx));
        let mut j = 4;
        while j > 0 {
            let tmp = list[j - 1];
            let (tmp_prob, tmp_tp) = (self.prob_of(tmp), self.tp_of(tmp));
            if cur_tp < tmp_tp || (cur_tp == tmp_tp && cur_prob <= tmp_prob) {
                break;
            }
            j -= 1;
        }
        if j < 4 {
            list.copy_within(j..3, j + 1);
            list[j] = idx;
        }
    }

    /// `minstrel_ht_set_best_prob_rate`: the 75 % rule for the global `dest` and the group's best.
    fn set_best_prob(&mut self, dest: &mut usize, idx: usize) {
        let g = self.rates[idx].group;
        let (tmp_prob, tmp_tp) = (self.prob_of(*dest), self.tp_of(*dest));
        let tp0 = self.max_tp[0];
        if self.groups[g].legacy && !self.groups[self.rates[tp0].group].legacy {
            return;
        }
        // 6.18 only: skip rates faster than max_tp[0] whose probability is lower.
        if self.is_modern()
            && self.dur(tp0) > self.dur(idx)
            && self.prob_of(idx) < self.prob_of(tp0)
        {
            return;
        }
        let gpr = self.groups[g].max_group_prob;
        let prob = self.prob_of(idx);
        if prob > frac(75, 100) {
            let cur_tp = self.tp_of(idx);
            if cur_tp > tmp_tp {
                *dest = idx;
            }
            if cur_tp > self.tp_of(gpr) {
                self.groups[g].max_group_prob = idx;
            }
        } else {
            if prob > tmp_prob {
                *dest = idx;
            }
            if prob > self.prob_of(gpr) {
                self.groups[g].max_group_prob = idx;
            }
        }
    }

    /// One group's pass of the ranking loop: updates its rates' statistics (modern: fastest first, with
    /// unsampled rates inheriting the best probability of faster sampled ones) and ranks them.
    fn rank_group(&mut self, g: usize, tp_list: &mut [usize; 4], prob_dest: &mut usize) {
        let mut group_tp = [self.groups[g].first(); 4];
        let slots: Vec<usize> = self.groups[g].slots.iter().flatten().copied().collect();
        let order: Vec<usize> = match self.p.variant {
            MinstrelVariant::Modern => slots.into_iter().rev().collect(),
            MinstrelVariant::Legacy => slots,
        };
        let mut last_prob = 0;
        for idx in order {
            self.calc_rate_stats(idx);
            if self.is_modern() {
                let st = &mut self.rates[idx].st;
                if st.att_hist > 0 {
                    last_prob = last_prob.max(st.prob);
                } else {
                    st.prob = st.prob.max(last_prob);
                }
            }
            if self.tp_of(idx) == 0 {
                continue;
            }
            self.sort_best_tp(idx, tp_list);
            self.sort_best_tp(idx, &mut group_tp);
            if !self.is_modern() {
                self.set_best_prob(prob_dest, idx);
            }
        }
        self.groups[g].max_group_tp = group_tp;
    }

    /// `minstrel_ht_update_stats`.
    pub(super) fn update_stats(&mut self, now: SimTime) {
        if self.ampdu_packets > 0 {
            self.avg_ampdu_len = if self.ampdu_len_reported {
                let cur = frac(self.ampdu_len_sum, self.ampdu_packets);
                ewma(self.avg_ampdu_len, cur, self.p.ewma_level)
            } else {
                0
            };
            self.ampdu_len_sum = 0;
            self.ampdu_packets = 0;
        }
        let first = self.groups[0].first();
        let mut tp_list = [first; 4];
        // Modern starts max_prob from scratch; legacy keeps the previous one (4.19).
        let mut prob_dest = if self.is_modern() {
            first
        } else {
            self.max_prob
        };
        for g in 0..self.groups.len() {
            if self.is_modern() {
                self.groups[g].max_group_prob = self.groups[g].first();
            }
            self.rank_group(g, &mut tp_list, &mut prob_dest);
        }
        self.max_tp = tp_list;
        if self.is_modern() {
            for g in 0..self.groups.len() {
                let slots: Vec<usize> = self.groups[g].slots.iter().flatten().copied().collect();
                for idx in slots {
                    self.set_best_prob(&mut prob_dest, idx);
                }
            }
        }
        self.max_prob = prob_dest;
        self.reduce_streams();
        match self.p.variant {
            MinstrelVariant::Modern => self.refill_sample_rates(),
            MinstrelVariant::Legacy => {
                let n_groups = self.groups.len() as u32;
                self.legacy.on_update(n_groups * self.p.samples_per_group);
            }
        }
        self.last_stats_update = now;
        self.sample_time = now;
        self.n.stats_updates += 1;
    }

    /// `minstrel_ht_prob_rate_reduce_streams`: prefer a max_prob rate with fewer streams than max_tp[0].
    fn reduce_streams(&mut self) {
        if self.groups[0].legacy {
            return;
        }
        let max_streams = self.groups[self.rates[self.max_tp[0]].group].key.nss;
        let mut best_tp = 0;
        for g in 0..self.groups.len() {
            let cand = self.groups[g].max_group_prob;
            let tp = self.tp_of(cand);
            if best_tp < tp && self.groups[g].key.nss < max_streams {
                self.max_prob = cand;
                best_tp = tp;
            }
        }
    }

    /// `minstrel_downgrade_rate`: the best (or second-best) rate of the nearest lower group with at
    /// most as many streams; unchanged if there is none.
    pub(super) fn downgrade(&self, idx: usize, primary: bool) -> usize {
        let orig = self.rates[idx].group;
        let streams = self.groups[orig].key.nss;
        for g in (0..orig).rev() {
            if self.groups[g].key.nss > streams {
                continue;
            }
            return self.groups[g].max_group_tp[if primary { 0 } else { 1 }];
        }
        idx
    }

    /// `minstrel_calc_retransmit`: `(count, count_rtscts)` that fit the segment budget.
    pub(super) fn calc_retransmit(&self, idx: usize) -> (u8, u8) {
        let rate = &self.rates[idx];
        if rate.st.prob < frac(1, 10) {
            return (1, 1);
        }
        let next_cw = |cw: u32| ((cw << 1) | 1).min(CW_MAX);
        let mut cw = CW_MIN;
        let mut ctime = (T_SLOT_US * cw) >> 1;
        cw = next_cw(cw);
        ctime += (T_SLOT_US * cw) >> 1;
        cw = next_cw(cw);
        let data = (rate.duration_ns as u64 * self.avg_ampdu_len_pkts() as u64 / 1000) as u32;
        let (ovh, ovh_rts) = if self.groups[rate.group].legacy {
            (self.ovh.legacy, self.ovh.legacy_rts)
        } else {
            (self.ovh.ht, self.ovh.ht_rts)
        };
        let seg = self.p.segment_size_us;
        let mut tx_time = ctime + 2 * (ovh + data);
        let mut tx_time_rts = ctime + 2 * (ovh_rts + data);
        let (mut count, mut count_rts) = (2u8, 2u8);
        loop {
            let ctime = (T_SLOT_US * cw) >> 1;
            cw = next_cw(cw);
            tx_time += ctime + ovh + data;
            tx_time_rts += ctime + ovh_rts + data;
            if tx_time_rts < seg {
                count_rts = count_rts.saturating_add(1);
            }
            if tx_time >= seg {
                break;
            }
            count = count.saturating_add(1);
            if count >= self.p.max_retry {
                break;
            }
        }
        (count, count_rts)
    }
}
