//! Minstrel-HT's static tables: rate groups, per-packet airtimes, overheads, fixed-point helpers and
//! the random sample table.
//!
//! Source: `rc80211_minstrel_ht.c` (`MCS_DURATION`, `OFDM_DURATION`, `minstrel_mcs_groups[]`,
//! `init_sample_table`, `minstrel_ht_update_caps` overheads) and `rc80211_minstrel_ht.h`
//! (`MINSTREL_SCALE`, filter coefficients, `minstrel_filter_avg_add`, `minstrel_ewma`).
//!
//! Differences from the kernel tables, all below 0.1 % of a duration:
//! * Durations are exact nanoseconds from the PHY module's N_DBPS and symbol time; the kernel stores
//!   them right-shifted per group to fit 16 bits and rounds short-GI symbols as `(n·18000 + 4000)/5`.
//! * Non-HT OFDM durations use the standard's ⌈…⌉ symbol count (the kernel's `OFDM_DURATION` floors).
//! * HE groups (not in Linux, whose Minstrel-HT stops at VHT) follow the same formula with HE symbols;
//!   they have 12 rates, so the sample table's permutations are over 12 slots for HE and 10 otherwise.

use crate::phy::{
    ppdu_duration, Band, ChannelWidth, GuardInterval, PhyStandard, PhyTimings, TxVector,
};

/// Bytes in Minstrel's average packet (`AVG_PKT_SIZE`).
pub const AVG_PKT_SIZE: u64 = 1200;
/// MPDUs per A-MPDU assumed for per-packet airtime (`AVG_AMPDU_SIZE`).
pub const AVG_AMPDU_SIZE: u64 = 16;
/// Sample-table columns (`SAMPLE_COLUMNS`).
pub const SAMPLE_COLUMNS: usize = 10;
/// Rate slots per group (kernel `MCS_GROUP_RATES` is 10; 12 here to hold HE MCS 10/11).
pub const GROUP_SLOTS: usize = 12;

/// Fixed-point fraction bits of probabilities (`MINSTREL_SCALE`).
pub const SCALE: u32 = 12;
/// 1.0 in Q12.
pub const ONE: u32 = 1 << SCALE;
/// 2nd-order filter coefficients in Q12 (`MINSTREL_AVG_COEFF2/3`; COEFF1 = 1 − c2 − c3).
pub const DEFAULT_C2: i32 = 0x1499;
pub const DEFAULT_C3: i32 = -0x092e;
/// EWMA old-value weight in 1/128 (`EWMA_LEVEL`/`EWMA_DIV`).
pub const EWMA_DIV: i32 = 128;

/// `MINSTREL_FRAC(val, div)`: val/div in Q12.
#[inline]
pub const fn frac(val: u32, div: u32) -> u32 {
    if div == 0 {
        return 0;
    }
    (((val as u64) << SCALE) / div as u64) as u32
}

/// `minstrel_ewma(old, new, weight)`: old + (DIV − weight)·(new − old)/DIV, truncating toward zero.
#[inline]
pub fn ewma(old: u32, new: u32, weight: u32) -> u32 {
    let diff = new as i64 - old as i64;
    let incr = (EWMA_DIV as i64 - weight as i64) * diff / EWMA_DIV as i64;
    (old as i64 + incr) as u32
}

/// `minstrel_filter_avg_add`: the 2nd-order low-pass in Q12. `prev` = (output at n−1, output at n−2).
/// A zero input counts as 1/4096; an empty filter (`prev.0 == 0`) starts at the input, with both taps
/// set to it. The output is clamped to [1/4096, 1] (0 only if the arithmetic lands exactly on it).
pub fn filter_avg_add(prev: &mut (u32, u32), input: u32, c2: i32, c3: i32) -> u32 {
    let input = input.max(1) as i64;
    let (out1, out2) = (prev.0 as i64, prev.1 as i64);
    let val = if out1 == 0 {
        *prev = (input as u32, input as u32);
        return input as u32;
    } else {
        let c1 = ONE as i64 - c2 as i64 - c3 as i64;
        let v = (c1 * input + c2 as i64 * out1 + c3 as i64 * out2) >> SCALE;
        if v > ONE as i64 {
            ONE as i64
        } else if v < 0 {
            1
        } else {
            v
        }
    };
    *prev = (val as u32, out1 as u32);
    val as u32
}

/// Identity of a group: everything but the MCS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupKey {
    pub standard: PhyStandard,
    pub width: ChannelWidth,
    pub gi: GuardInterval,
    pub nss: u8,
}

impl GroupKey {
    pub fn of(t: &TxVector) -> GroupKey {
        GroupKey {
            standard: t.standard,
            width: t.width,
            gi: t.gi,
            nss: t.nss,
        }
    }

    /// Kernel group order: width, then guard interval (long first), then streams.
    fn sort_key(
        &self,
    ) -> (
        PhyStandard,
        ChannelWidth,
        std::cmp::Reverse<GuardInterval>,
        u8,
    ) {
        (
            self.standard,
            self.width,
            std::cmp::Reverse(self.gi),
            self.nss,
        )
    }
}

/// One rate group (`minstrel_mcs_group_data` plus the static `mcs_group`).
#[derive(Clone, Debug)]
pub struct Group {
    pub key: GroupKey,
    /// Non-HT OFDM group (`minstrel_ht_is_legacy_group`): no aggregation, ACK-only overhead.
    pub legacy: bool,
    /// Flat rate index per slot (slot = MCS).
    pub slots: [Option<usize>; GROUP_SLOTS],
    /// Best four rates of the group by throughput (`max_group_tp_rate`).
    pub max_group_tp: [usize; 4],
    /// Best rate of the group by probability (`max_group_prob_rate`).
    pub max_group_prob: usize,
    /// Position in the sample table (`column`, `index`).
    pub column: usize,
    pub index: usize,
}

impl Group {
    /// The lowest supported rate of the group.
    pub fn first(&self) -> usize {
        self.slots
            .iter()
            .flatten()
            .copied()
            .next()
            .expect("groups are never empty")
    }
}

/// Per-rate counters and estimates (`minstrel_rate_stats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateStats {
    /// Current interval.
    pub attempts: u32,
    pub success: u32,
    /// Previous interval.
    pub last_attempts: u32,
    pub last_success: u32,
    /// Totals.
    pub att_hist: u64,
    pub succ_hist: u64,
    /// Filtered success probability (Q12) and the filter's second tap.
    pub prob: u32,
    pub prob_1: u32,
    /// Stats updates since the rate was last attempted (legacy sampling).
    pub sample_skipped: u32,
}

/// One rate of the table.
#[derive(Clone, Debug)]
pub struct Rate {
    pub txv: TxVector,
    pub group: usize,
    /// Airtime share of one average packet, ns (`minstrel_get_duration`).
    pub duration_ns: u32,
    pub st: RateStats,
}

/// Overheads in µs (`mi->overhead`, `overhead_rtscts`, `overhead_legacy`, `overhead_legacy_rtscts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overheads {
    pub ht: u32,
    pub ht_rts: u32,
    pub legacy: u32,
    pub legacy_rts: u32,
}

/// `ieee80211_frame_duration(band, len, 60, …)`: SIFS (+ signal extension) + a 6 Mb/s PPDU of len + FCS.
fn frame_duration_us(band: Band, len: u32) -> u32 {
    let six = TxVector::ofdm_mbps(6).expect("6 Mb/s");
    let sifs = PhyTimings::for_band(band).sifs;
    ((sifs + ppdu_duration(&six, len + 4, band, true)).as_ns() / 1000) as u32
}

impl Overheads {
    /// An empty frame plus an ACK at 6 Mb/s (108 µs in both bands); RTS/CTS adds two ACK-sized frames.
    /// Legacy groups: the ACK alone at the lowest OFDM rate (mac80211 uses the station's lowest rate).
    pub fn for_band(band: Band) -> Overheads {
        let ack = frame_duration_us(band, 10);
        let ht = frame_duration_us(band, 0) + ack;
        Overheads {
            ht,
            ht_rts: ht + 2 * ack,
            legacy: ack,
            legacy_rts: 3 * ack,
        }
    }
}

/// Airtime share of one 1200-byte packet in a 16-MPDU A-MPDU (HT/VHT/HE, data symbols only) or of a
/// whole 1200-byte frame with preamble and SIFS (non-HT OFDM). ns.
pub fn packet_duration_ns(t: &TxVector, band: Band) -> u32 {
    match t.standard {
        PhyStandard::Ofdm => {
            let sifs = PhyTimings::for_band(band).sifs;
            (sifs + ppdu_duration(t, AVG_PKT_SIZE as u32 + 4, band, true)).as_ns() as u32
        }
        _ => {
            let bits = AVG_PKT_SIZE * AVG_AMPDU_SIZE * 8;
            let n_sym = bits.div_ceil(t.n_dbps() as u64);
            (n_sym * t.symbol_duration_ns() / AVG_AMPDU_SIZE) as u32
        }
    }
}

/// Groups and rates for `family` (TxVectors of one amendment), in kernel group order.
pub fn build_table(family: &[TxVector], band: Band) -> (Vec<Group>, Vec<Rate>) {
    let mut keys: Vec<GroupKey> = Vec::new();
    for t in family {
        let k = GroupKey::of(t);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort_by_key(|k| k.sort_key());
    let mut groups = Vec::with_capacity(keys.len());
    let mut rates = Vec::new();
    for (g, key) in keys.iter().enumerate() {
        let mut members: Vec<&TxVector> =
            family.iter().filter(|t| GroupKey::of(t) == *key).collect();
        members.sort_by_key(|t| t.mcs);
        let mut slots = [None; GROUP_SLOTS];
        for t in members {
            if slots[t.mcs as usize].is_some() {
                continue;
            }
            slots[t.mcs as usize] = Some(rates.len());
            let duration_ns = packet_duration_ns(t, band);
            rates.push(Rate {
                txv: *t,
                group: g,
                duration_ns,
                st: RateStats::default(),
            });
        }
        let first = slots
            .iter()
            .flatten()
            .copied()
            .next()
            .expect("non-empty group");
        groups.push(Group {
            key: *key,
            legacy: key.standard == PhyStandard::Ofdm,
            slots,
            max_group_tp: [first; 4],
            max_group_prob: first,
            column: 0,
            index: 0,
        });
    }
    (groups, rates)
}

/// `init_sample_table`: per column a permutation of `0..slots`, built by random offsets with linear
/// probing exactly as the kernel does, but from the controller's own [`Rng`](crate::rng::Rng) instead
/// of `get_random_bytes`.
pub fn sample_table(
    rng: &mut crate::rng::Rng,
    slots: usize,
) -> [[u8; GROUP_SLOTS]; SAMPLE_COLUMNS] {
    let mut table = [[u8::MAX; GROUP_SLOTS]; SAMPLE_COLUMNS];
    for row in table.iter_mut() {
        let rnd = rng.next_u64().to_le_bytes();
        let rnd2 = rng.next_u64().to_le_bytes();
        for i in 0..slots {
            let r = if i < 8 { rnd[i] } else { rnd2[i - 8] } as usize;
            let mut new_idx = (i + r) % slots;
            while row[new_idx] != u8::MAX {
                new_idx = (new_idx + 1) % slots;
            }
            row[new_idx] = i as u8;
        }
    }
    table
}
