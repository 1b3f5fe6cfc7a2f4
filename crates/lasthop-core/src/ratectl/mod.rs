//! Rate control: which TxVectors (and how many tries of each) the hardware uses for the next PSDU.
//!
//! Every algorithm is a pure state machine behind one small trait, [`RateControl`], in the style of
//! mac80211's `rate_control_ops` and quinn's congestion `Controller`: the driver asks for a
//! [`RateSet`] (a multi-rate-retry chain of up to four series, spec `wifi-model.md` §3.6) when it forms a
//! PSDU, the hardware walks the chain, and the driver hands back one [`TxReport`] per PSDU. `now` is
//! always an argument; nothing reads a clock, and all randomness (Minstrel's sample table and probe
//! choices, Thompson sampling's Beta draws) comes from the [`Rng`] passed in at construction.
//!
//! ```text
//!   driver forms a PSDU ──rate_set(now, mpdu_len)──▶ RateSet [r0×t0, r1×t1(RTS), r2×t2(RTS), r3×t3(RTS)]
//!        │                                                    │ hardware: t0 attempts at r0, then r1, …
//!        ◀──────────────on_tx_status(now, &TxReport)──────────┘ (ampdu_len, acked, attempts per series)
//! ```
//!
//! | algorithm | module | source | spec |
//! |---|---|---|---|
//! | fixed rate (+ optional fallback series) | [`fixed`] | mac80211 `fixed_rate_idx` | baselines.md §1.4 |
//! | Minstrel-HT, modern and legacy | [`minstrel_ht`] | Linux `net/mac80211/rc80211_minstrel_ht.[ch]` (6.18; 4.19 for legacy) | wifi-model.md §6, baselines.md §1.1 |
//! | Thompson sampling | [`thompson`] | ns-3 `thompson-sampling-wifi-manager.cc` | baselines.md §1.2 |
//! | LLRA (reconstructed) | [`llra`] | Li et al., INFOCOM 2015 (abstract only) | baselines.md §1.3 |
//!
//! The set is closed, so callers hold an [`AnyRateControl`] built from a [`RateControlParams`] (a
//! `type`-tagged scenario table, STYLE 10/16):
//!
//! ```toml
//! rate_control = { type = "fixed", mcs = 7, tries = 7 }
//! rate_control = { type = "minstrel_ht" }                                    # modern, ath9k (4 × 10)
//! rate_control = { type = "minstrel_ht", max_rates = 1, max_retry = 7 }      # OpenWiFi
//! rate_control = { type = "minstrel_ht", variant = "legacy" }                # Linux 4.x / ns-3
//! rate_control = { type = "thompson", decay_hz = 1.0 }
//! rate_control = { type = "llra", delay_budget_ms = 20, minstrel = { max_rates = 1, max_retry = 7 } }
//! ```
//!
//! Two optional hooks let a controller see the queues and shape the driver (LLRA uses both; the others
//! keep the no-op defaults): [`RateControl::on_queue_state`] before each `rate_set` (backlog, head
//! sojourn, channel-access delay) and [`RateControl::tx_limits`] (A-MPDU length, software-retry
//! deadline).
//!
//! Choices where the sources are silent:
//! * **Report normalisation.** A report with `ampdu_len == 0` is treated as a single MPDU with
//!   `ampdu_ack_len = success as u16` (mac80211 does the same for non-aggregated frames); `ampdu_ack_len`
//!   is clamped to `ampdu_len`. A chain entry whose rate is `None` or whose `tries` is 0 ends the chain,
//!   as an invalid `ieee80211_tx_rate` does in `minstrel_ht_tx_status`.
//! * **`mpdu_len`** in [`RateControl::rate_set`] is a hint for length-dependent algorithms; none of the
//!   three here uses it (Minstrel-HT and ns-3's Thompson sampling ignore the frame length too).

pub mod config;
pub mod fixed;
pub mod llra;
pub mod minstrel_ht;
pub mod thompson;

#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;

pub use config::RateControlConfig;
pub use fixed::{Fixed, FixedEntry, FixedParams};
pub use llra::{Llra, LlraParams};
pub use minstrel_ht::{MinstrelHt, MinstrelHtParams, MinstrelVariant, RateView};
pub use thompson::{Thompson, ThompsonParams};

use crate::phy::{all_valid_txvectors, Band, ChannelWidth, GuardInterval, PhyStandard, TxVector};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Largest multi-rate-retry chain (mac80211 `IEEE80211_TX_RATE_TABLE_SIZE`, ath9k `hw->max_rates`).
pub const MAX_CHAIN: usize = 4;

/// One series of the multi-rate-retry chain: `tries` attempts at `txv`, each preceded by RTS/CTS if `rts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RateEntry {
    pub txv: TxVector,
    pub tries: u8,
    pub rts: bool,
}

/// The chain for one PSDU; entry 0 is tried first. `probe` marks a rate-control probe (mac80211
/// `IEEE80211_TX_CTL_RATE_CTRL_PROBE`): the driver must send it as a single, unaggregated MPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RateSet {
    pub entries: [Option<RateEntry>; MAX_CHAIN],
    pub probe: bool,
}

impl RateSet {
    /// A one-series chain.
    pub fn single(txv: TxVector, tries: u8) -> RateSet {
        let mut entries = [None; MAX_CHAIN];
        entries[0] = Some(RateEntry {
            txv,
            tries: tries.max(1),
            rts: false,
        });
        RateSet {
            entries,
            probe: false,
        }
    }

    /// The series in order (stops at the first empty slot).
    pub fn iter(&self) -> impl Iterator<Item = &RateEntry> + '_ {
        self.entries.iter().map_while(|e| e.as_ref())
    }

    /// The first series (every chain has one).
    pub fn first(&self) -> &RateEntry {
        self.entries[0]
            .as_ref()
            .expect("a rate set has at least one series")
    }

    /// Attempts the hardware makes before giving up.
    pub fn total_tries(&self) -> u32 {
        self.iter().map(|e| e.tries as u32).sum()
    }

    /// The series used by attempt number `attempt` (0-based), if the chain is that long.
    pub fn entry_for_attempt(&self, attempt: u32) -> Option<(usize, &RateEntry)> {
        let mut left = attempt;
        for (i, e) in self.iter().enumerate() {
            if left < e.tries as u32 {
                return Some((i, e));
            }
            left -= e.tries as u32;
        }
        None
    }

    /// The status report after the hardware made `attempts` attempts along this chain (the last one
    /// succeeded iff `ampdu_ack_len > 0`), for an A-MPDU of `ampdu_len` MPDUs (1 if not aggregated).
    pub fn report(&self, attempts: u32, ampdu_len: u16, ampdu_ack_len: u16) -> TxReport {
        let mut tries = [0u8; MAX_CHAIN];
        let mut rates = [None; MAX_CHAIN];
        let mut left = attempts;
        for (i, e) in self.iter().enumerate() {
            if left == 0 {
                break;
            }
            let used = left.min(e.tries as u32);
            tries[i] = used as u8;
            rates[i] = Some(e.txv);
            left -= used;
        }
        TxReport {
            ampdu_len,
            ampdu_ack_len,
            tries,
            rates,
            success: ampdu_ack_len > 0,
            probe: self.probe,
        }
    }
}

/// The driver's status of one PSDU (mac80211 `ieee80211_tx_info.status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TxReport {
    /// MPDUs in the PSDU (1 when not aggregated).
    pub ampdu_len: u16,
    /// MPDUs acknowledged (BlockAck bitmap, or 1/0 for a single MPDU).
    pub ampdu_ack_len: u16,
    /// Attempts made per chain entry (entry `i` was used `tries[i]` times; 0 = not reached).
    pub tries: [u8; MAX_CHAIN],
    /// The TxVector of each chain entry that was used.
    pub rates: [Option<TxVector>; MAX_CHAIN],
    /// An ACK or BlockAck came back (on the last attempt made).
    pub success: bool,
    /// The PSDU was a rate-control probe.
    pub probe: bool,
}

impl TxReport {
    /// `(ampdu_len, ampdu_ack_len)` normalised as described in the module docs.
    pub fn lens(&self) -> (u32, u32) {
        if self.ampdu_len == 0 {
            (1, self.success as u32)
        } else {
            let len = self.ampdu_len as u32;
            (len, (self.ampdu_ack_len as u32).min(len))
        }
    }

    /// The used chain entries `(rate, tries)`, in order, stopping at the first unused one.
    pub fn used(&self) -> impl Iterator<Item = (TxVector, u8)> + '_ {
        (0..MAX_CHAIN).map_while(|i| match (self.rates[i], self.tries[i]) {
            (Some(txv), t) if t > 0 => Some((txv, t)),
            _ => None,
        })
    }
}

/// The rate-control role (STYLE 8). Implementations are deterministic given their [`Rng`].
pub trait RateControl {
    /// The chain for the PSDU the driver is forming now (mac80211 `get_rate` + the station rate table).
    /// `mpdu_len` is the first MPDU's length in bytes (a hint; see the module docs).
    fn rate_set(&mut self, now: SimTime, mpdu_len: u32) -> RateSet;

    /// The outcome of one PSDU (mac80211 `tx_status_ext`).
    fn on_tx_status(&mut self, now: SimTime, report: &TxReport);

    /// The rate a non-probe PSDU would start with now (Minstrel's `max_tp_rate[0]`), e.g. for AQL's
    /// airtime estimate or for traces.
    fn current_rate(&self) -> TxVector;

    /// Per-rate statistics, shaped like Minstrel's debugfs `rc_stats` table.
    fn stats(&self) -> serde_json::Value;

    /// What this controller is: its name, settings and the streams it may use (the run's "what
    /// actually ran", `summary.json` `setup`).
    fn info(&self) -> RateControlInfo;

    /// The queues feeding this link, given by the driver before each [`RateControl::rate_set`]
    /// (hook; the default ignores it).
    fn on_queue_state(&mut self, _now: SimTime, _q: &QueueState) {}

    /// Limits on the PSDU being formed and on software retries (hook; the default imposes none).
    fn tx_limits(&self) -> TxLimits {
        TxLimits::default()
    }
}

/// What a rate controller is, as built (not as configured): the run's "what actually ran".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RateControlInfo {
    /// `fixed`, `minstrel_ht`, `thompson`, `llra`, or the mechanism that chooses the rates (`law`).
    pub name: String,
    /// Its variant and main settings, in a few words.
    pub detail: String,
    /// The most spatial streams among the rates it may choose.
    pub max_nss: u8,
}

impl RateControlInfo {
    /// `name` choosing among `rates` (the streams come from them).
    pub fn new(name: &str, detail: String, rates: impl IntoIterator<Item = TxVector>) -> Self {
        RateControlInfo { name: name.into(), detail, max_nss: rates.into_iter().map(|t| t.nss).max().unwrap_or(1) }
    }
}

/// What the driver knows about the queues feeding one link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueState {
    /// Packets and bytes waiting for this link below the qdisc (TXQ and driver retry queue).
    pub backlog_packets: u32,
    pub backlog_bytes: u64,
    /// Sojourn of the oldest of them since it entered the TXQ.
    pub head_sojourn: SimDuration,
    /// A channel-access delay measured since the last call: from a PSDU of this link reaching the head
    /// of its hardware queue to its first attempt.
    pub access_delay: Option<SimDuration>,
}

/// Limits a controller may put on the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxLimits {
    /// At most this many MPDUs in the A-MPDU being formed.
    pub max_mpdus: Option<u32>,
    /// A failed MPDU whose sojourn since its TXQ enqueue is at least this is dropped (reason
    /// `deadline`) instead of retried in software.
    pub retry_sojourn_limit: Option<SimDuration>,
}

/// What a controller is built for: the TxVectors both ends support, the band, and whether the
/// hardware reports A-MPDU lengths in its status (mac80211's `TX_STATUS_NO_AMPDU_LEN` when false).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkRates {
    pub supported: Vec<TxVector>,
    pub band: Band,
    pub ampdu_len_reported: bool,
}

impl LinkRates {
    /// All valid TxVectors of `standard` at `width` with one of `gis` and at most `max_nss` streams
    /// (e.g. HT20, LGI and SGI, 2 streams = HT MCS 0–15 in both guard intervals).
    pub fn new(
        standard: PhyStandard,
        width: ChannelWidth,
        gis: &[GuardInterval],
        max_nss: u8,
        band: Band,
    ) -> LinkRates {
        let supported = all_valid_txvectors(standard)
            .into_iter()
            .filter(|t| t.width == width && gis.contains(&t.gi) && t.nss <= max_nss)
            .filter(|t| t.validate_in_band(band).is_ok())
            .collect();
        LinkRates {
            supported,
            band,
            ampdu_len_reported: true,
        }
    }
}

/// Why a controller could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RateControlError {
    /// A parameter out of range; `field` is spelled as in the params table.
    #[error("{field}: {reason}")]
    Param { field: &'static str, reason: String },
    /// The link has no usable TxVector.
    #[error("the link supports no TxVector")]
    NoRates,
    /// A fixed rate that the link does not support.
    #[error("fixed rate {0} is not supported by the link")]
    Unsupported(String),
}

pub(crate) fn check(ok: bool, field: &'static str, reason: &str) -> Result<(), RateControlError> {
    if ok {
        Ok(())
    } else {
        Err(RateControlError::Param {
            field,
            reason: reason.to_string(),
        })
    }
}

/// Rate-control configuration: `rate_control = { type = "minstrel_ht", … }`. Every field of every
/// variant is optional; the defaults are documented on each params struct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum RateControlParams {
    /// Always the same rate (optionally with fallback series).
    Fixed(FixedParams),
    /// Linux Minstrel-HT.
    MinstrelHt(MinstrelHtParams),
    /// ns-3 Thompson sampling.
    Thompson(ThompsonParams),
    /// LLRA, reconstructed (latency-aware, over Minstrel-HT's statistics and probing).
    Llra(LlraParams),
}

impl Default for RateControlParams {
    fn default() -> Self {
        RateControlParams::MinstrelHt(MinstrelHtParams::default())
    }
}

impl RateControlParams {
    /// Checks ranges without building anything.
    pub fn validate(&self) -> Result<(), RateControlError> {
        match self {
            RateControlParams::Fixed(p) => p.validate(),
            RateControlParams::MinstrelHt(p) => p.validate(),
            RateControlParams::Thompson(p) => p.validate(),
            RateControlParams::Llra(p) => p.validate(),
        }
    }

    /// Builds the controller for `link`, drawing all its randomness from `rng` (derive it from the
    /// station's path, e.g. `Rng::derive(seed, "ap0/sta3/ratectl")`). `now` is the association time.
    pub fn build(
        &self,
        link: &LinkRates,
        rng: Rng,
        now: SimTime,
    ) -> Result<AnyRateControl, RateControlError> {
        Ok(match self {
            RateControlParams::Fixed(p) => AnyRateControl::Fixed(Fixed::new(p, link)?),
            RateControlParams::MinstrelHt(p) => {
                AnyRateControl::MinstrelHt(Box::new(MinstrelHt::new(p, link, rng, now)?))
            }
            RateControlParams::Thompson(p) => {
                AnyRateControl::Thompson(Thompson::new(p, link, rng, now)?)
            }
            RateControlParams::Llra(p) => AnyRateControl::Llra(Box::new(Llra::new(p, link, rng, now)?)),
        })
    }
}

/// Any rate controller (closed set, enum dispatch).
#[derive(Clone, Debug)]
pub enum AnyRateControl {
    Fixed(Fixed),
    MinstrelHt(Box<MinstrelHt>),
    Thompson(Thompson),
    Llra(Box<Llra>),
}

impl RateControl for AnyRateControl {
    fn rate_set(&mut self, now: SimTime, mpdu_len: u32) -> RateSet {
        match self {
            AnyRateControl::Fixed(c) => c.rate_set(now, mpdu_len),
            AnyRateControl::MinstrelHt(c) => c.rate_set(now, mpdu_len),
            AnyRateControl::Thompson(c) => c.rate_set(now, mpdu_len),
            AnyRateControl::Llra(c) => c.rate_set(now, mpdu_len),
        }
    }

    fn on_tx_status(&mut self, now: SimTime, report: &TxReport) {
        match self {
            AnyRateControl::Fixed(c) => c.on_tx_status(now, report),
            AnyRateControl::MinstrelHt(c) => c.on_tx_status(now, report),
            AnyRateControl::Thompson(c) => c.on_tx_status(now, report),
            AnyRateControl::Llra(c) => c.on_tx_status(now, report),
        }
    }

    fn current_rate(&self) -> TxVector {
        match self {
            AnyRateControl::Fixed(c) => c.current_rate(),
            AnyRateControl::MinstrelHt(c) => c.current_rate(),
            AnyRateControl::Thompson(c) => c.current_rate(),
            AnyRateControl::Llra(c) => c.current_rate(),
        }
    }

    fn stats(&self) -> serde_json::Value {
        match self {
            AnyRateControl::Fixed(c) => c.stats(),
            AnyRateControl::MinstrelHt(c) => c.stats(),
            AnyRateControl::Thompson(c) => c.stats(),
            AnyRateControl::Llra(c) => c.stats(),
        }
    }

    fn info(&self) -> RateControlInfo {
        match self {
            AnyRateControl::Fixed(c) => c.info(),
            AnyRateControl::MinstrelHt(c) => c.info(),
            AnyRateControl::Thompson(c) => c.info(),
            AnyRateControl::Llra(c) => c.info(),
        }
    }

    fn on_queue_state(&mut self, now: SimTime, q: &QueueState) {
        if let AnyRateControl::Llra(c) = self {
            c.on_queue_state(now, q);
        }
    }

    fn tx_limits(&self) -> TxLimits {
        match self {
            AnyRateControl::Llra(c) => c.tx_limits(),
            _ => TxLimits::default(),
        }
    }
}

/// The TxVectors of the highest amendment present (HE > VHT > HT > non-HT OFDM). mac80211 uses VHT
/// groups only when the peer is VHT-capable (`minstrel_vht_only`) and OFDM only for non-HT peers.
pub(crate) fn highest_family(supported: &[TxVector]) -> Vec<TxVector> {
    let Some(best) = supported.iter().map(|t| t.standard).max() else {
        return Vec::new();
    };
    supported
        .iter()
        .copied()
        .filter(|t| t.standard == best)
        .collect()
}

/// A short rate name in the style of `rc_stats`: `HT20 LGI 1 MCS7`, `VHT80 SGI 2 MCS9`, `OFDM 54M`.
pub fn rate_name(t: &TxVector) -> String {
    let fam = match t.standard {
        PhyStandard::Ofdm => {
            let mbps = t.data_rate().bps() / 1_000_000;
            return format!("OFDM {mbps}M");
        }
        PhyStandard::Ht => "HT",
        PhyStandard::Vht => "VHT",
        PhyStandard::He => "HE",
    };
    let gi = match t.gi {
        GuardInterval::Ns400 => "SGI".to_string(),
        GuardInterval::Ns800 if t.standard != PhyStandard::He => "LGI".to_string(),
        g => format!("GI{:.1}", g.ns() as f64 / 1000.0),
    };
    format!("{fam}{} {gi} {} MCS{}", t.width.mhz(), t.nss, t.mcs)
}
