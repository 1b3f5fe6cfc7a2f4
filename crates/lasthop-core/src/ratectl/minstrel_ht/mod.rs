//! Minstrel-HT (Linux mac80211), in its modern (≥ 5.12) and legacy (4.x, ns-3) variants.
//!
//! Sources read: `net/mac80211/rc80211_minstrel_ht.[ch]` of Linux 6.18 (modern) and of
//! backports-4.19 (legacy sampling, EWMA, 3-entry chain); ns-3 `minstrel-ht-wifi-manager.cc` for the
//! legacy defaults. Spec: `wifi-model.md` §6.1–6.3 and §3.6; `baselines.md` §1.1.
//!
//! ```text
//! on_tx_status ─ per used series: attempts += tries·ampdu_len; last series: success += acked
//!      │        ─ sudden death (max_rates > 1): max_tp[0|1] > 30 attempts, < 25 % success → downgrade
//!      └─ every update_interval: update_stats → probabilities, max_tp[0..3], max_prob, sample lists
//!                                → rate table [max_tp[0], max_tp[1], max_tp[2], max_prob] (+ retry counts)
//! rate_set ─ rate table, or (probe due) [sample ×1, table[1..]] flagged probe
//! ```
//!
//! Submodules: [`table`] (groups, airtimes, fixed point), `update` (statistics and rate selection),
//! `sample` (both sampling schemes), `stats` (the `rc_stats` table).
//!
//! Choices where the sources are silent or disagree (each also noted where it is implemented):
//! * **Probability input.** Linux 6.18 filters the *current* interval's success ratio
//!   (`minstrel_ht_calc_rate_stats`); the spec's "(succ + last_succ)/(att + last_att)" is not in the
//!   source read, so we follow the source.
//! * **max_prob rule.** The spec's "19/16 × duration" condition is in neither Linux 6.18 nor ns-3; we
//!   implement 6.18's rule (skip rates faster than `max_tp[0]` with a lower probability, then the 75 %
//!   rule) for the modern variant and 4.19's (75 % rule only, max_prob kept across updates) for legacy.
//! * **Sudden death** follows the code (checks `max_tp[0]` and `max_tp[1]`, downgrades to the previous
//!   group's `max_group_tp[0|1]`), not the spec's wording about `max_prob_rate`.
//! * **Update timing.** An update runs on the first status at or after `last_update + update_interval`
//!   (the kernel's `time_after` is strict, but on a jiffies grid).
//! * **Dynamic SMPS** (RTS on entry 0 for multi-stream rates) is not modelled: the peer is never in SMPS.
//! * **Groups** come from the link's supported TxVectors of its highest amendment (HE > VHT > HT > OFDM);
//!   HE groups are an extension (Linux's Minstrel-HT has none). CCK is not modelled.
//! * **Legacy variant** = the 4.x algorithm without OpenWrt's later `sample_switch`/`new_avg` patches:
//!   EWMA 75 %, no probability inheritance, ascending rate order when ranking, frame-count sampling
//!   (`sample_wait = 16 + 2·avg_ampdu_len`, budget 8 probes per group per interval, 16 at association
//!   with MRR hardware), chain `[max_tp[0], max_tp[1], max_prob]`, `avg_ampdu_len` fallback 16.

mod sample;
mod stats;
pub mod table;
mod update;

#[cfg(test)]
mod tests;

use super::{check, highest_family, LinkRates, RateControl, RateControlError, RateEntry, RateSet};
use super::{RateControlInfo, TxReport, MAX_CHAIN};
use crate::phy::{PhyStandard, TxVector};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use sample::{LegacySampler, SampleLists};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use table::{Group, Overheads, Rate, GROUP_SLOTS, ONE, SAMPLE_COLUMNS};

/// Which Minstrel-HT. TOML: `variant = "modern" | "legacy"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MinstrelVariant {
    /// Linux ≥ 5.12: 2nd-order probability filter, time-based INC/JUMP/SLOW sampling (default).
    #[default]
    Modern,
    /// Linux 4.x / ns-3 MinstrelHtWifiManager: EWMA, frame-count sampling from a sample table.
    Legacy,
}

/// `rate_control = { type = "minstrel_ht", … }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MinstrelHtParams {
    /// Algorithm generation. Default `modern`.
    pub variant: MinstrelVariant,
    /// Statistics period, ms. Default 50 (modern: `HZ/20`; legacy: Linux 4.x checks `HZ/10` at half
    /// the interval, and ns-3's UpdateStatistics is 50 ms).
    pub update_interval_ms: u32,
    /// Modern: at most one probe per this many ms (`MINSTREL_SAMPLE_INTERVAL` = `HZ/50`). Default 20.
    pub sample_interval_ms: u32,
    /// Legacy: status reports to wait between probes = this + 2·avg A-MPDU length. Default 16.
    pub sample_wait_base: u32,
    /// Legacy: probes allowed per group per stats interval (`sample_count *= 8`). Default 8.
    pub samples_per_group: u32,
    /// Weight of the old value, in 1/128, of the A-MPDU-length EWMA and of the legacy probability EWMA
    /// (`EWMA_LEVEL`). Default 96 (= 75 %).
    pub ewma_level: u32,
    /// Modern filter coefficient c2 in Q12 (`MINSTREL_AVG_COEFF2`). Default 0x1499 = 5273 (≈ 1.2874).
    pub filter_c2_q12: i32,
    /// Modern filter coefficient c3 in Q12 (`MINSTREL_AVG_COEFF3`). Default −0x092e = −2350
    /// (≈ −0.5737); c1 = 4096 − c2 − c3 = 1173 (≈ 0.2864).
    pub filter_c3_q12: i32,
    /// Series the hardware accepts (`hw->max_rates`): 4 for ath9k (default), 1 for OpenWiFi.
    pub max_rates: u8,
    /// Largest retry count per series (`hw->max_rate_tries`): 10 for ath9k (default); mac80211 uses 7
    /// when the driver leaves it unset (OpenWiFi).
    pub max_retry: u8,
    /// Airtime budget per MRR series for the retry count, µs (`segment_size`). Default 6000.
    pub segment_size_us: u32,
}

impl Default for MinstrelHtParams {
    fn default() -> Self {
        MinstrelHtParams {
            variant: MinstrelVariant::Modern,
            update_interval_ms: 50,
            sample_interval_ms: 20,
            sample_wait_base: 16,
            samples_per_group: 8,
            ewma_level: 96,
            filter_c2_q12: table::DEFAULT_C2,
            filter_c3_q12: table::DEFAULT_C3,
            max_rates: 4,
            max_retry: 10,
            segment_size_us: 6000,
        }
    }
}

impl MinstrelHtParams {
    pub fn validate(&self) -> Result<(), RateControlError> {
        check(
            self.update_interval_ms >= 1,
            "update_interval_ms",
            "must be at least 1",
        )?;
        check(
            self.sample_interval_ms >= 1,
            "sample_interval_ms",
            "must be at least 1",
        )?;
        check(self.ewma_level <= 128, "ewma_level", "must be in 0..=128")?;
        check(
            (1..=MAX_CHAIN as u8).contains(&self.max_rates),
            "max_rates",
            "must be in 1..=4",
        )?;
        check(self.max_retry >= 1, "max_retry", "must be at least 1")?;
        check(
            self.segment_size_us >= 1,
            "segment_size_us",
            "must be at least 1",
        )?;
        let c1 = ONE as i32 - self.filter_c2_q12 - self.filter_c3_q12;
        check(
            c1 > 0,
            "filter_c2_q12",
            "c1 = 4096 - c2 - c3 must be positive",
        )
    }
}

/// Contention-window approximation of `minstrel_calc_retransmit` (`mp->cw_min`, `cw_max`).
const CW_MIN: u32 = 15;
const CW_MAX: u32 = 1023;
/// Slot time assumed by `minstrel_calc_retransmit` (`t_slot = 9 /* FIXME */`).
const T_SLOT_US: u32 = 9;

/// Counters that are not per rate.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    total_packets: u64,
    sample_packets: u64,
    probes: u64,
    stats_updates: u64,
    sudden_deaths: u64,
}

/// One station's Minstrel-HT state.
#[derive(Clone, Debug)]
pub struct MinstrelHt {
    p: MinstrelHtParams,
    ampdu_len_reported: bool,
    groups: Vec<Group>,
    rates: Vec<Rate>,
    ovh: Overheads,
    sample_table: [[u8; GROUP_SLOTS]; SAMPLE_COLUMNS],
    /// Rate slots per group in the sample table: 10 (kernel `MCS_GROUP_RATES`), 12 for HE.
    n_slots: usize,
    max_tp: [usize; 4],
    max_prob: usize,
    /// EWMA of the A-MPDU length, Q12 (0 = hardware does not report lengths).
    avg_ampdu_len: u32,
    ampdu_len_sum: u32,
    ampdu_packets: u32,
    last_stats_update: SimTime,
    /// Modern: earliest time of the next probe.
    sample_time: SimTime,
    lists: SampleLists,
    legacy: LegacySampler,
    /// The rate table pushed to the driver (`rate_control_set_rates`).
    table: [Option<RateEntry>; MAX_CHAIN],
    n: Counters,
}

impl MinstrelHt {
    /// `minstrel_ht_update_caps`: builds the groups for `link`, draws the sample table from `rng` (its
    /// only randomness: every later probe choice is a walk through that table), and runs the first
    /// stats update at `now` (all probabilities zero → the lowest rate everywhere).
    pub fn new(
        p: &MinstrelHtParams,
        link: &LinkRates,
        mut rng: Rng,
        now: SimTime,
    ) -> Result<MinstrelHt, RateControlError> {
        p.validate()?;
        let family = highest_family(&link.supported);
        if family.is_empty() {
            return Err(RateControlError::NoRates);
        }
        let (groups, rates) = table::build_table(&family, link.band);
        let slots = if family[0].standard == PhyStandard::He {
            GROUP_SLOTS
        } else {
            10
        };
        let sample_table = table::sample_table(&mut rng, slots);
        let first = groups[0].first();
        let mut mi = MinstrelHt {
            p: p.clone(),
            ampdu_len_reported: link.ampdu_len_reported,
            groups,
            rates,
            ovh: Overheads::for_band(link.band),
            sample_table,
            n_slots: slots,
            max_tp: [first; 4],
            max_prob: first,
            avg_ampdu_len: if link.ampdu_len_reported { ONE } else { 0 },
            ampdu_len_sum: 0,
            ampdu_packets: 0,
            last_stats_update: now,
            sample_time: now,
            lists: SampleLists::default(),
            legacy: LegacySampler::at_association(p.max_rates),
            table: [None; MAX_CHAIN],
            n: Counters::default(),
        };
        mi.update_stats(now);
        mi.update_rates();
        Ok(mi)
    }

    fn is_modern(&self) -> bool {
        self.p.variant == MinstrelVariant::Modern
    }

    fn update_interval(&self) -> SimDuration {
        SimDuration::from_ms(self.p.update_interval_ms as u64)
    }

    /// `minstrel_ht_update_rates`: rebuilds the rate table from `max_tp` and `max_prob`.
    fn update_rates(&mut self) {
        let max_rates = self.p.max_rates as usize;
        let mut chain: Vec<usize> = Vec::with_capacity(MAX_CHAIN);
        match self.p.variant {
            MinstrelVariant::Modern => {
                chain.push(self.max_tp[0]);
                chain.extend((1..max_rates.saturating_sub(1)).map(|i| self.max_tp[i]));
                if chain.len() < max_rates {
                    chain.push(self.max_prob);
                }
            }
            MinstrelVariant::Legacy => {
                chain.push(self.max_tp[0]);
                if max_rates >= 3 {
                    chain.push(self.max_tp[1]);
                }
                if max_rates >= 2 {
                    chain.push(self.max_prob);
                }
            }
        }
        self.table = [None; MAX_CHAIN];
        for (offset, &idx) in chain.iter().enumerate() {
            self.table[offset] = Some(self.set_rate(offset, idx));
        }
    }

    /// `minstrel_ht_set_rate`: retry count (2 below 20 % success) and RTS/CTS on fallback series.
    fn set_rate(&self, offset: usize, idx: usize) -> RateEntry {
        let (count, count_rts) = self.calc_retransmit(idx);
        let (mut tries, tries_rts) = if self.rates[idx].st.prob < table::frac(20, 100) || count == 0
        {
            (2, 2)
        } else {
            (count, count_rts)
        };
        let rts = offset > 0;
        if rts {
            tries = tries_rts;
        }
        RateEntry {
            txv: self.rates[idx].txv,
            tries,
            rts,
        }
    }

    /// The flat index of `txv`, if it is in the table.
    fn index_of(&self, txv: &TxVector) -> Option<usize> {
        let key = table::GroupKey::of(txv);
        let g = self.groups.iter().find(|g| g.key == key)?;
        g.slots.get(txv.mcs as usize).copied().flatten()
    }

    /// Per-rate accounting of one status (the loop of `minstrel_ht_tx_status`).
    fn account(&mut self, report: &TxReport, len: u32, ack: u32) {
        let used: Vec<(TxVector, u8)> = report.used().collect();
        for (i, (txv, tries)) in used.iter().enumerate() {
            let Some(idx) = self.index_of(txv) else {
                continue;
            };
            let st = &mut self.rates[idx].st;
            st.attempts = st.attempts.saturating_add(*tries as u32 * len);
            if i + 1 == used.len() {
                st.success = st.success.saturating_add(ack);
            }
        }
    }

    /// Sudden death of the two best rates (hardware with MRR only). Returns whether a rate changed.
    fn check_sudden_death(&mut self) -> bool {
        if self.p.max_rates <= 1 {
            return false;
        }
        let mut update = false;
        for (slot, primary) in [(0usize, true), (1, false)] {
            let st = self.rates[self.max_tp[slot]].st;
            if st.attempts > 30 && st.success < st.attempts / 4 {
                self.max_tp[slot] = self.downgrade(self.max_tp[slot], primary);
                self.n.sudden_deaths += 1;
                update = true;
            }
        }
        update
    }
}

/// One rate of the table as another controller reads it (LLRA builds on Minstrel's statistics).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateView {
    pub txv: TxVector,
    /// Filtered success probability.
    pub prob: f64,
    /// Expected throughput in the kernel's unit (`minstrel_ht_get_tp_avg`; 0 below 10 % success).
    pub tp: u32,
}

impl MinstrelHt {
    /// Every rate of the table with its probability and expected throughput.
    pub fn rate_views(&self) -> Vec<RateView> {
        (0..self.rates.len())
            .map(|i| RateView { txv: self.rates[i].txv, prob: self.rates[i].st.prob as f64 / ONE as f64, tp: self.tp_avg(i, self.rates[i].st.prob) })
            .collect()
    }

    /// The A-MPDU length (packets) Minstrel assumes for overhead sharing.
    pub fn avg_ampdu_len(&self) -> u32 {
        self.avg_ampdu_len_pkts()
    }

    /// Series the hardware accepts and tries per series (`max_rates`, `max_retry`).
    pub fn chain_limits(&self) -> (u8, u8) {
        (self.p.max_rates, self.p.max_retry)
    }
}

impl RateControl for MinstrelHt {
    fn rate_set(&mut self, now: SimTime, _mpdu_len: u32) -> RateSet {
        let mut set = RateSet {
            entries: self.table,
            probe: false,
        };
        let sample = match self.p.variant {
            MinstrelVariant::Modern => self.modern_sample(now),
            MinstrelVariant::Legacy => self.legacy_sample(),
        };
        if let Some(idx) = sample {
            set.entries[0] = Some(RateEntry {
                txv: self.rates[idx].txv,
                tries: 1,
                rts: false,
            });
            set.probe = true;
            self.n.probes += 1;
        }
        set
    }

    fn on_tx_status(&mut self, now: SimTime, report: &TxReport) {
        let (len, ack) = report.lens();
        self.n.total_packets += len as u64;
        if report.probe {
            self.n.sample_packets += len as u64;
        }
        self.ampdu_packets += 1;
        self.ampdu_len_sum = self.ampdu_len_sum.saturating_add(len);
        if !self.is_modern() {
            let avg = self.avg_ampdu_len_pkts();
            self.legacy.on_status(self.p.sample_wait_base, avg);
        }
        self.account(report, len, ack);
        let mut update = self.check_sudden_death();
        if now.saturating_since(self.last_stats_update) >= self.update_interval() {
            self.update_stats(now);
            update = true;
        }
        if update {
            self.update_rates();
        }
    }

    fn current_rate(&self) -> TxVector {
        self.rates[self.max_tp[0]].txv
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::to_value(self.stats_table()).expect("stats serialize")
    }

    fn info(&self) -> RateControlInfo {
        let variant = match self.p.variant {
            MinstrelVariant::Modern => "modern",
            MinstrelVariant::Legacy => "legacy",
        };
        let detail = format!("{variant}, {}-rate chain, ≤ {} tries per rate", self.p.max_rates, self.p.max_retry);
        RateControlInfo::new("minstrel_ht", detail, self.rates.iter().map(|r| r.txv))
    }
}
