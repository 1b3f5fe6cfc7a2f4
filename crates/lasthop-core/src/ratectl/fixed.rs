//! Fixed rate: the same chain for every PSDU (baselines.md §1.4; mac80211 debugfs `fixed_rate_idx`).
//!
//! `chain() = [(rate, tries)]`, optionally followed by up to three fallback series. It is the oracle of
//! the rate-control tests and LAST-PQ's static baseline (162/405 Mb/s).
//!
//! Choices where the sources are silent:
//! * **Which TxVector.** The rate is looked up in the link's supported set (its highest amendment, as
//!   for Minstrel): `mcs` and `nss` must match; the width and guard interval are the configured ones,
//!   or else the widest width and the shortest guard interval the link supports for that MCS.
//! * **HT MCS index.** For HT, `mcs ≥ 8` with `nss` unset is the 802.11n MCS index (15 = MCS 7 with two
//!   streams), as in the scenario's existing `fixed` rate table.
//! * **No RTS/CTS** on any series (a fixed-rate user who wants protection configures it in the MAC).

use super::{check, highest_family, rate_name, LinkRates, RateControl, RateControlError, RateControlInfo};
use super::{RateEntry, RateSet, TxReport, MAX_CHAIN};
use crate::phy::{ChannelWidth, GuardInterval, PhyStandard, TxVector};
use crate::time::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A fallback series of a fixed chain. TOML: `{ mcs = 3, tries = 2 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FixedEntry {
    pub mcs: u8,
    #[serde(default)]
    pub nss: Option<u8>,
    #[serde(default = "default_tries")]
    pub tries: u8,
}

/// `rate_control = { type = "fixed", mcs = 7, nss = 1, tries = 7, width_mhz = 20, gi_ns = 800,
/// fallback = [{ mcs = 3, tries = 3 }] }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FixedParams {
    /// Per-stream MCS (HT 0–7, VHT 0–9, HE 0–11; non-HT OFDM: rate index 0–7 = 6…54 Mb/s), or the HT
    /// MCS index 0–31 when `nss` is unset. Default 7.
    pub mcs: u8,
    /// Spatial streams; default from the HT MCS index, else 1.
    pub nss: Option<u8>,
    /// Attempts at this rate. Default 7 (mac80211's `max_rate_tries` fallback, ns-3 FrameRetryLimit).
    pub tries: u8,
    /// Channel width; default the widest the link supports.
    pub width_mhz: Option<ChannelWidth>,
    /// Guard interval; default the shortest the link supports.
    pub gi_ns: Option<GuardInterval>,
    /// Up to three further series, tried in order after `tries` failures.
    pub fallback: Vec<FixedEntry>,
}

fn default_tries() -> u8 {
    7
}

impl Default for FixedParams {
    fn default() -> Self {
        FixedParams {
            mcs: 7,
            nss: None,
            tries: default_tries(),
            width_mhz: None,
            gi_ns: None,
            fallback: Vec::new(),
        }
    }
}

impl FixedParams {
    pub fn validate(&self) -> Result<(), RateControlError> {
        check(self.tries >= 1, "tries", "must be at least 1")?;
        check(
            self.fallback.len() < MAX_CHAIN,
            "fallback",
            "at most 3 fallback series",
        )?;
        for f in &self.fallback {
            check(f.tries >= 1, "fallback.tries", "must be at least 1")?;
        }
        Ok(())
    }

    /// Resolves `(mcs, nss)` against the link (see the module docs).
    fn resolve(
        &self,
        link: &LinkRates,
        mcs: u8,
        nss: Option<u8>,
    ) -> Result<TxVector, RateControlError> {
        let family = highest_family(&link.supported);
        let std = family
            .first()
            .map(|t| t.standard)
            .ok_or(RateControlError::NoRates)?;
        let (mcs, nss) = match (std, nss) {
            (PhyStandard::Ht, None) => (mcs % 8, mcs / 8 + 1),
            (_, n) => (mcs, n.unwrap_or(1)),
        };
        family
            .iter()
            .filter(|t| t.mcs == mcs && t.nss == nss)
            .filter(|t| self.width_mhz.is_none_or(|w| t.width == w))
            .filter(|t| self.gi_ns.is_none_or(|g| t.gi == g))
            .max_by_key(|t| (t.width, std::cmp::Reverse(t.gi)))
            .copied()
            .ok_or_else(|| {
                RateControlError::Unsupported(format!("{std} MCS {mcs} with {nss} stream(s)"))
            })
    }
}

/// Per-series counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
struct SeriesCounters {
    attempts: u64,
    success: u64,
}

/// The fixed-rate controller.
#[derive(Clone, Debug)]
pub struct Fixed {
    set: RateSet,
    counters: [SeriesCounters; MAX_CHAIN],
    psdus: u64,
}

impl Fixed {
    pub fn new(p: &FixedParams, link: &LinkRates) -> Result<Fixed, RateControlError> {
        p.validate()?;
        let mut entries = [None; MAX_CHAIN];
        let first = p.resolve(link, p.mcs, p.nss)?;
        entries[0] = Some(RateEntry {
            txv: first,
            tries: p.tries,
            rts: false,
        });
        for (i, f) in p.fallback.iter().enumerate() {
            let txv = p.resolve(link, f.mcs, f.nss)?;
            entries[i + 1] = Some(RateEntry {
                txv,
                tries: f.tries,
                rts: false,
            });
        }
        Ok(Fixed {
            set: RateSet {
                entries,
                probe: false,
            },
            counters: [SeriesCounters::default(); MAX_CHAIN],
            psdus: 0,
        })
    }
}

impl RateControl for Fixed {
    fn rate_set(&mut self, _now: SimTime, _mpdu_len: u32) -> RateSet {
        self.set
    }

    fn on_tx_status(&mut self, _now: SimTime, report: &TxReport) {
        let (len, ack) = report.lens();
        self.psdus += 1;
        let used: Vec<_> = report.used().collect();
        for (i, (txv, tries)) in used.iter().enumerate() {
            let Some(pos) = self.set.iter().position(|e| e.txv == *txv) else {
                continue;
            };
            self.counters[pos].attempts += *tries as u64 * len as u64;
            if i + 1 == used.len() {
                self.counters[pos].success += ack as u64;
            }
        }
    }

    fn current_rate(&self) -> TxVector {
        self.set.first().txv
    }

    fn stats(&self) -> serde_json::Value {
        let rates: Vec<_> = self
            .set
            .iter()
            .zip(self.counters.iter())
            .map(|(e, c)| {
                serde_json::json!({
                    "rate": rate_name(&e.txv),
                    "tries": e.tries,
                    "attempts": c.attempts,
                    "success": c.success,
                })
            })
            .collect();
        serde_json::json!({ "type": "fixed", "psdus": self.psdus, "rates": rates })
    }

    fn info(&self) -> RateControlInfo {
        let chain: Vec<String> = self.set.iter().map(|e| format!("{} ×{}", rate_name(&e.txv), e.tries)).collect();
        RateControlInfo::new("fixed", chain.join(", "), self.set.iter().map(|e| e.txv))
    }
}
