//! The `rc_stats` table (Linux `rc80211_minstrel_ht_debugfs.c`) as typed rows.
//!
//! Columns follow debugfs: `best` flags (`A`–`D` = max_tp[0..3], `P` = max_prob), rate name, airtime
//! per packet, max/avg throughput, average probability, retry count, last-interval and total
//! success/attempts. Throughputs are in Mbit/s of 1200-byte packets (debugfs prints the kernel's
//! internal unit); probabilities are fractions.

use super::table::{AVG_PKT_SIZE, ONE};
use super::{MinstrelHt, MinstrelVariant};
use crate::ratectl::rate_name;
use serde::Serialize;

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MinstrelRateRow {
    pub best: String,
    pub rate: String,
    pub group: usize,
    pub mcs: u8,
    /// Airtime of one average packet incl. its overhead share, µs.
    pub airtime_us: f64,
    /// Throughput at 100 % success (capped at 90 % like the average), Mbit/s.
    pub max_tp_mbps: f64,
    pub avg_tp_mbps: f64,
    pub avg_prob: f64,
    pub retry: u8,
    pub retry_rts: u8,
    pub last_success: u32,
    pub last_attempts: u32,
    pub success: u64,
    pub attempts: u64,
}

/// Whole-station summary plus the rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MinstrelHtStats {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub variant: MinstrelVariant,
    pub avg_ampdu_len: f64,
    pub max_tp: Vec<String>,
    pub max_prob: String,
    pub stats_updates: u64,
    pub sudden_deaths: u64,
    pub probes: u64,
    pub total_packets: u64,
    pub sample_packets: u64,
    /// Modern candidate lists (INC, JUMP, SLOW); empty for legacy.
    pub sample_lists: [Vec<String>; 3],
    pub rates: Vec<MinstrelRateRow>,
}

impl MinstrelHt {
    /// Per-packet airtime incl. overhead share, ns (the denominator of `tp_avg`).
    fn packet_airtime_ns(&self, idx: usize) -> f64 {
        let r = &self.rates[idx];
        let (ovh, n) = if self.groups[r.group].legacy {
            (self.ovh.legacy, 1)
        } else {
            (self.ovh.ht, self.avg_ampdu_len_pkts().max(1))
        };
        (1000 * ovh / n) as f64 + r.duration_ns as f64
    }

    fn tp_mbps(&self, idx: usize, prob_q12: u32) -> f64 {
        if self.tp_avg(idx, prob_q12) == 0 {
            return 0.0;
        }
        let p = prob_q12.min(super::table::frac(90, 100)) as f64 / ONE as f64;
        p * (AVG_PKT_SIZE * 8) as f64 / self.packet_airtime_ns(idx) * 1000.0
    }

    fn best_flags(&self, idx: usize) -> String {
        let mut s: String = ["A", "B", "C", "D"]
            .iter()
            .zip(self.max_tp.iter())
            .map(|(f, &t)| if t == idx { *f } else { " " })
            .collect();
        s.push(if self.max_prob == idx { 'P' } else { ' ' });
        s
    }

    fn row(&self, idx: usize) -> MinstrelRateRow {
        let r = &self.rates[idx];
        let (retry, retry_rts) = self.calc_retransmit(idx);
        MinstrelRateRow {
            best: self.best_flags(idx),
            rate: rate_name(&r.txv),
            group: r.group,
            mcs: r.txv.mcs,
            airtime_us: self.packet_airtime_ns(idx) / 1000.0,
            max_tp_mbps: self.tp_mbps(idx, ONE),
            avg_tp_mbps: self.tp_mbps(idx, r.st.prob),
            avg_prob: r.st.prob as f64 / ONE as f64,
            retry,
            retry_rts,
            last_success: r.st.last_success,
            last_attempts: r.st.last_attempts,
            success: r.st.succ_hist,
            attempts: r.st.att_hist,
        }
    }

    /// The typed table behind [`RateControl::stats`](crate::ratectl::RateControl::stats).
    pub fn stats_table(&self) -> MinstrelHtStats {
        let name = |i: usize| rate_name(&self.rates[i].txv);
        let lists = self
            .sample_lists()
            .map(|l| l.into_iter().map(name).collect());
        MinstrelHtStats {
            kind: "minstrel_ht",
            variant: self.p.variant,
            avg_ampdu_len: self.avg_ampdu_len as f64 / ONE as f64,
            max_tp: self.max_tp.iter().map(|&i| name(i)).collect(),
            max_prob: name(self.max_prob),
            stats_updates: self.n.stats_updates,
            sudden_deaths: self.n.sudden_deaths,
            probes: self.n.probes,
            total_packets: self.n.total_packets,
            sample_packets: self.n.sample_packets,
            sample_lists: lists,
            rates: (0..self.rates.len()).map(|i| self.row(i)).collect(),
        }
    }
}
