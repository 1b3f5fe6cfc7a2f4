//! Probing. Modern (Linux ≥ 5.12): time-based, one probe per `sample_interval` from three candidate
//! lists rebuilt at every stats update (`minstrel_ht_refill_sample_rates`, `next_inc_rate`,
//! `next_jump_rate`, `get_sample_rate`). Legacy (4.x): frame-count based, from the per-group sample
//! table (`minstrel_get_sample_rate`, `minstrel_set_next_sample_idx`, the sample_wait logic of
//! `minstrel_ht_tx_status`).
//!
//! The probe is sent as chain entry 0 with one try and flagged, so the driver sends it unaggregated;
//! the caller keeps the remaining series of the rate table (mac80211 fills the other slots from it).

use super::table::{frac, GROUP_SLOTS, SAMPLE_COLUMNS};
use super::MinstrelHt;
use crate::time::{SimDuration, SimTime};

/// Rates per candidate list (`MINSTREL_SAMPLE_RATES`).
const SAMPLE_RATES: usize = 5;
const INC: usize = 0;
const JUMP: usize = 1;
const SLOW: usize = 2;
/// Probe type sequence for MRR hardware (`minstrel_sample_seq`).
const SAMPLE_SEQ: [usize; 6] = [INC, JUMP, INC, JUMP, INC, SLOW];

/// Modern candidate lists (`mi->sample[type]`).
#[derive(Clone, Debug, Default)]
pub(super) struct SampleLists {
    rates: [[Option<usize>; SAMPLE_RATES]; 3],
    /// Group cursor per type (`sample_group`).
    group: [usize; 3],
    /// Position in [`SAMPLE_SEQ`] (`sample_seq`).
    seq: usize,
}

impl SampleLists {
    fn contains(&self, ty: usize, idx: usize) -> bool {
        self.rates[ty].iter().map_while(|r| *r).any(|r| r == idx)
    }

    fn pop(&mut self, ty: usize) -> Option<usize> {
        self.rates[ty].iter_mut().find_map(|r| r.take())
    }

    /// Current candidates of a type (for stats).
    pub(super) fn list(&self, ty: usize) -> Vec<usize> {
        self.rates[ty].iter().flatten().copied().collect()
    }
}

/// Legacy frame-count sampler state (`sample_wait`, `sample_tries`, `sample_count`, `sample_slow`,
/// `sample_group`).
#[derive(Clone, Debug, Default)]
pub(super) struct LegacySampler {
    wait: u32,
    tries: u32,
    count: u32,
    slow: u32,
    group: usize,
}

impl LegacySampler {
    /// `minstrel_ht_update_caps`: with MRR sample 16 times at once, else after 8 frames.
    pub(super) fn at_association(max_rates: u8) -> LegacySampler {
        let mrr = max_rates >= 4;
        LegacySampler {
            wait: if mrr { 0 } else { 8 },
            tries: 4,
            count: if mrr { 16 } else { 8 },
            slow: 0,
            group: 0,
        }
    }

    /// The sample_wait logic at the top of `minstrel_ht_tx_status`.
    pub(super) fn on_status(&mut self, wait_base: u32, avg_ampdu_len: u32) {
        if self.wait == 0 && self.tries == 0 && self.count > 0 {
            self.wait = wait_base + 2 * avg_ampdu_len;
            self.tries = 1;
            self.count -= 1;
        }
    }

    /// The per-interval budget set by `minstrel_ht_update_stats`.
    pub(super) fn on_update(&mut self, count: u32) {
        self.slow = 0;
        self.count = count;
    }
}

impl MinstrelHt {
    /// `minstrel_ht_group_min_rate_offset`: lowest slot of `g` strictly faster than `max_dur`.
    fn group_min_rate_offset(&self, g: usize, max_dur: u32) -> Option<usize> {
        (0..GROUP_SLOTS).find(|&s| {
            self.groups[g].slots[s].is_some_and(|idx| self.rates[idx].duration_ns < max_dur)
        })
    }

    /// `minstrel_ht_next_group_sample_rate`: next sample-table entry of `g` at or above slot `offset`.
    fn next_group_sample_rate(&mut self, g: usize, offset: usize) -> Option<usize> {
        let n_slots = self.n_slots;
        for _ in 0..n_slots {
            let grp = &mut self.groups[g];
            let slot = self.sample_table[grp.column][grp.index] as usize;
            grp.index += 1;
            if grp.index >= n_slots {
                grp.index = 0;
                grp.column = (grp.column + 1) % SAMPLE_COLUMNS;
            }
            if slot < offset || slot >= GROUP_SLOTS {
                continue;
            }
            if let Some(idx) = grp.slots[slot] {
                return Some(idx);
            }
        }
        None
    }

    /// `minstrel_ht_next_inc_rate`: cycling through groups, the slowest rate faster than `tp_dur`.
    fn next_inc_rate(&mut self, tp_dur: u32) -> Option<usize> {
        let n = self.groups.len();
        let mut g = self.lists.group[INC];
        let mut found = None;
        for _ in 0..n {
            g = (g + 1) % n;
            let Some(slot) = self.group_min_rate_offset(g, tp_dur) else {
                continue;
            };
            let idx = self.groups[g].slots[slot].expect("offset is supported");
            if !self.lists.contains(INC, idx) {
                found = Some(idx);
                break;
            }
        }
        self.lists.group[INC] = g;
        found
    }

    /// `minstrel_ht_next_jump_rate`: random rates faster than `fast`; slower ones (below `slow`, with
    /// probability ≤ 95 %) go to the SLOW list while it has room.
    fn next_jump_rate(&mut self, fast: u32, slow: u32, slow_ofs: &mut usize) -> Option<usize> {
        let n = self.groups.len();
        let mut max_dur = if *slow_ofs >= SAMPLE_RATES {
            fast
        } else {
            slow
        };
        let mut g = self.lists.group[JUMP];
        let mut found = None;
        for _ in 0..n {
            g = (g + 1) % n;
            let Some(offset) = self.group_min_rate_offset(g, max_dur) else {
                continue;
            };
            let Some(idx) = self.next_group_sample_rate(g, offset) else {
                continue;
            };
            let dur = self.rates[idx].duration_ns;
            let ty = if dur < fast { JUMP } else { SLOW };
            if self.lists.contains(ty, idx) {
                continue;
            }
            if ty == JUMP {
                found = Some(idx);
                break;
            }
            if *slow_ofs >= SAMPLE_RATES || dur >= slow || self.rates[idx].st.prob > frac(95, 100) {
                continue;
            }
            self.lists.rates[SLOW][*slow_ofs] = Some(idx);
            *slow_ofs += 1;
            if *slow_ofs >= SAMPLE_RATES {
                max_dur = fast;
            }
        }
        self.lists.group[JUMP] = g;
        found
    }

    /// `minstrel_ht_move_sample_rates`: drops stale entries of a list and compacts it.
    fn move_sample_rates(&mut self, ty: usize, fast: u32, slow: u32) -> usize {
        let kept: Vec<usize> = self.lists.rates[ty]
            .iter()
            .flatten()
            .copied()
            .filter(|&idx| {
                let d = self.rates[idx].duration_ns;
                match ty {
                    SLOW => d > fast && d < slow,
                    _ => d < fast,
                }
            })
            .collect();
        self.lists.rates[ty] = [None; SAMPLE_RATES];
        for (i, idx) in kept.iter().enumerate() {
            self.lists.rates[ty][i] = Some(*idx);
        }
        kept.len()
    }

    /// `minstrel_ht_refill_sample_rates`.
    pub(super) fn refill_sample_rates(&mut self) {
        let d = |i: usize| self.rates[i].duration_ns;
        let (prob_dur, tp_dur, tp2_dur) = (d(self.max_prob), d(self.max_tp[0]), d(self.max_tp[1]));
        let fast = tp_dur.min(tp2_dur).min(prob_dur);
        let slow = tp_dur.max(tp2_dur).max(prob_dur);
        let mut i = self.move_sample_rates(INC, fast, slow);
        while i < SAMPLE_RATES {
            let Some(idx) = self.next_inc_rate(tp_dur) else {
                break;
            };
            self.lists.rates[INC][i] = Some(idx);
            i += 1;
        }
        let mut i = self.move_sample_rates(JUMP, fast, slow);
        let mut j = self.move_sample_rates(SLOW, fast, slow);
        while i < SAMPLE_RATES {
            let Some(idx) = self.next_jump_rate(fast, slow, &mut j) else {
                break;
            };
            self.lists.rates[JUMP][i] = Some(idx);
            i += 1;
        }
    }

    /// `minstrel_ht_get_rate` (modern): a probe rate if one is due at `now`.
    pub(super) fn modern_sample(&mut self, now: SimTime) -> Option<usize> {
        if now < self.sample_time {
            return None;
        }
        self.sample_time = now + SimDuration::from_ms(self.p.sample_interval_ms as u64);
        let ty = if self.p.max_rates > 1 {
            let ty = SAMPLE_SEQ[self.lists.seq];
            self.lists.seq = (self.lists.seq + 1) % SAMPLE_SEQ.len();
            ty
        } else {
            INC
        };
        self.lists.pop(ty)
    }

    /// `minstrel_set_next_sample_idx`: advance to the next group and its next sample-table slot.
    fn next_sample_idx(&mut self) {
        let n = self.groups.len();
        self.legacy.group = (self.legacy.group + 1) % n;
        let n_slots = self.n_slots;
        let grp = &mut self.groups[self.legacy.group];
        grp.index += 1;
        if grp.index >= n_slots {
            grp.index = 0;
            grp.column = (grp.column + 1) % SAMPLE_COLUMNS;
        }
    }

    /// `minstrel_get_sample_rate` (legacy): a probe rate if the frame counter allows one now.
    pub(super) fn legacy_sample(&mut self) -> Option<usize> {
        if self.legacy.wait > 0 {
            self.legacy.wait -= 1;
            return None;
        }
        if self.legacy.tries == 0 {
            return None;
        }
        let g = self.legacy.group;
        let slot = self.sample_table[self.groups[g].column][self.groups[g].index] as usize;
        self.next_sample_idx();
        let idx = self.groups[g].slots.get(slot).copied().flatten()?;
        if !self.legacy_sample_ok(g, idx) {
            return None;
        }
        self.legacy.tries -= 1;
        Some(idx)
    }

    /// The filters of `minstrel_get_sample_rate` after the candidate is drawn.
    fn legacy_sample_ok(&mut self, g: usize, idx: usize) -> bool {
        let d = |i: usize| self.rates[i].duration_ns;
        let st = self.rates[idx].st;
        let sample_dur = d(idx);
        if idx == self.max_tp[0] || idx == self.max_prob {
            return false;
        }
        if st.prob > frac(95, 100) || (d(self.max_prob) as u64) * 3 < sample_dur as u64 {
            return false;
        }
        if self.p.max_rates == 1
            && (d(self.groups[g].max_group_tp[0]) < sample_dur || st.attempts > 0)
        {
            return false;
        }
        let (t0, t1) = (self.max_tp[0], self.max_tp[1]);
        let (tp_rate1, tp_rate2) = if d(t0) > d(t1) { (t1, t0) } else { (t0, t1) };
        if sample_dur >= d(tp_rate1) && st.attempts > 0 {
            return false;
        }
        let cur_max_streams = self.groups[self.rates[tp_rate1].group].key.nss;
        if sample_dur >= d(tp_rate2)
            && (cur_max_streams.saturating_sub(1) < self.groups[g].key.nss
                || sample_dur >= d(self.max_prob))
        {
            if st.sample_skipped < 20 {
                return false;
            }
            let slow = self.legacy.slow;
            self.legacy.slow += 1;
            if slow > 2 {
                return false;
            }
        }
        true
    }

    /// Candidate lists for stats: (INC, JUMP, SLOW).
    pub(super) fn sample_lists(&self) -> [Vec<usize>; 3] {
        [
            self.lists.list(INC),
            self.lists.list(JUMP),
            self.lists.list(SLOW),
        ]
    }
}
