//! Resolves a BSS's scenario entry into the numbers the MAC uses: EDCA tables per profile, TxVectors,
//! A-MPDU limits, timings.
//!
//! Source: `wifi-model.md` §1.2 (EDCA parameter sets (a) standard/ns-3, (b) hostapd AP queues,
//! (c) advertised to clients), §2.3 (aggregation limits), §9 items 3–5.

use super::ampdu::AmpduLimits;
use super::edca::{AccessCategory, EdcaParams};
use crate::phy::airtime::{max_ppdu_duration, AirtimeOptions};
use crate::phy::mcs::{PhyError, PhyStandard, TxVector, OFDM_RATES_MBPS};
use crate::phy::timing::PhyTimings;
use super::txpath::fifo::{FifoParams, FifoPath};
use super::txpath::linux::{AqlParams, LinuxParams, LinuxPath};
use super::txpath::TxPath;
use crate::queue::codel::CodelParams;
use crate::queue::fq::FqParams;
use crate::rng::Rng;
use super::wifi_config::{AfsVariant, EdcaOverride, EdcaOverrides, TxPathConfig, TxqCodel, WifiConfig, WifiProfile};
use crate::ratectl::RateControlConfig;
use crate::time::SimDuration;

const fn p(aifsn: u8, cw_min: u32, cw_max: u32, txop_us: u64) -> EdcaParams {
    EdcaParams { aifsn, cw_min, cw_max, txop_limit: SimDuration::from_us(txop_us) }
}

/// 802.11-2020 default EDCA table as ns-3 applies it to every QoS node (VO, VI, BE, BK).
pub const EDCA_STANDARD: [EdcaParams; 4] = [p(2, 3, 7, 2080), p(2, 7, 15, 4096), p(3, 15, 1023, 0), p(7, 15, 1023, 0)];
/// hostapd defaults for the AP's own transmit queues (`tx_queue_data0..3`).
pub const EDCA_HOSTAPD_AP: [EdcaParams; 4] = [p(1, 3, 7, 1500), p(1, 7, 15, 3000), p(3, 15, 63, 0), p(7, 15, 1023, 0)];
/// What a hostapd AP advertises to its clients (`wmm_ac_*`).
pub const EDCA_HOSTAPD_STA: [EdcaParams; 4] = [p(2, 3, 7, 1504), p(2, 7, 15, 3008), p(3, 15, 1023, 0), p(7, 15, 1023, 0)];
/// The legacy DCF of a non-QoS station.
pub const DCF: EdcaParams = p(2, 15, 1023, 0);

/// Everything the MAC needs about one BSS.
#[derive(Clone, Debug)]
pub struct BssParams {
    pub timings: PhyTimings,
    pub airtime: AirtimeOptions,
    pub qos: bool,
    pub ampdu: bool,
    pub edca_ap: [EdcaParams; 4],
    pub edca_sta: [EdcaParams; 4],
    pub ampdu_limits: AmpduLimits,
    pub basic_rates_mbps: Vec<u32>,
    pub queue_packets: u32,
    pub retry_limit: u32,
    pub lifetime: SimDuration,
    /// Consecutive failures of an EDCAF whose last one resets the CW to CWmin instead of doubling it.
    /// `linux`: 7. `ns3`: `retry_limit` + 1 = 8, the rule of 802.11-2020 §10.23.2.2 as ns-3 3.44's
    /// `Txop::UpdateFailedCw` implements it: the station retry count (QSRC) grows by one per failure up
    /// to `FrameRetryLimit` (7) and the CW with it (31 … 1023); a failure while QSRC is already at the
    /// limit sets QSRC to 0 and CW to CWmin. Nothing else resets it but a success: not the drop of an
    /// MPDU at its own retry limit (its 7th attempt), and not a BlockAckReq, which carries the QSRC of
    /// the A-MPDU it follows. Seen in ns-3's CW trace at N = 50 (`FIDELITY.md`): after the 7th
    /// consecutive failure CW stays 1023, after the 8th it is 15, after the 9th 31.
    pub cw_reset_retries: u32,
    /// Send a BlockAckReq after every missed BlockAck before retrying (ns-3
    /// `UseExplicitBarAfterMissedBlockAck`); Linux/ath9k sends BARs only when it drops MPDUs.
    pub explicit_bar: bool,
    /// dot11RTSThreshold: PSDUs longer than this (bytes) go after an RTS/CTS exchange; `None`: never.
    pub rts_threshold: Option<u32>,
}

fn apply(base: [EdcaParams; 4], o: &EdcaOverrides) -> [EdcaParams; 4] {
    let one = |b: EdcaParams, o: &EdcaOverride| EdcaParams {
        aifsn: o.aifsn.unwrap_or(b.aifsn),
        cw_min: o.cw_min.unwrap_or(b.cw_min),
        cw_max: o.cw_max.unwrap_or(b.cw_max),
        txop_limit: o.txop_limit_us.map(|u| SimDuration::from_us(u as u64)).unwrap_or(b.txop_limit),
    };
    [one(base[0], &o.vo), one(base[1], &o.vi), one(base[2], &o.be), one(base[3], &o.bk)]
}

impl BssParams {
    pub fn from_config(c: &WifiConfig) -> Self {
        let (ap, sta, airtime) = match c.profile {
            WifiProfile::Linux => (EDCA_HOSTAPD_AP, EDCA_HOSTAPD_STA, AirtimeOptions::STANDARD),
            WifiProfile::Ns3 => (EDCA_STANDARD, EDCA_STANDARD, AirtimeOptions::NS3),
        };
        let airtime = AirtimeOptions { sgi_round4: c.sgi_round4.unwrap_or(airtime.sgi_round4), ..airtime };
        let qos = c.qos.unwrap_or(c.standard != PhyStandard::Ofdm);
        let ampdu = qos && c.standard != PhyStandard::Ofdm && c.ampdu.unwrap_or(true);
        let window = if c.standard == PhyStandard::He { 256 } else { 64 };
        BssParams {
            timings: PhyTimings::for_band(c.band),
            airtime,
            qos,
            ampdu,
            edca_ap: apply(ap, &c.edca_ap),
            edca_sta: apply(sta, &c.edca_sta),
            ampdu_limits: AmpduLimits {
                max_bytes: c.max_ampdu_bytes.unwrap_or(65_535),
                max_mpdus: c.max_ampdu_mpdus.unwrap_or(window).min(window),
                max_duration: max_ppdu_duration(c.standard),
            },
            basic_rates_mbps: c.basic_rates_mbps.clone(),
            queue_packets: c.queue_packets,
            retry_limit: c.retry_limit,
            lifetime: SimDuration::from_secs_f64(c.msdu_lifetime_ms * 1e-3).unwrap_or(SimDuration::MAX),
            explicit_bar: c.explicit_bar.unwrap_or(c.profile == WifiProfile::Ns3),
            rts_threshold: c.rts_threshold_bytes,
            cw_reset_retries: match c.profile {
                WifiProfile::Linux => 7,
                WifiProfile::Ns3 => c.retry_limit.saturating_add(1),
            },
        }
    }

    /// EDCA parameters of an AC at the AP or at a station; the DCF when QoS is off.
    pub fn edca(&self, is_ap: bool, ac: AccessCategory) -> EdcaParams {
        if !self.qos {
            return DCF;
        }
        if is_ap {
            self.edca_ap[ac as usize]
        } else {
            self.edca_sta[ac as usize]
        }
    }
}

impl BssParams {
    /// T_cycle (QAir spec §4.3): the channel time of one successful exchange of the largest PSDU a node
    /// of this BSS sends at `txv` in AC_BE: AIFS + CWmin/2 slots + the PPDU + SIFS + its BlockAck (ACK
    /// without aggregation). The largest PSDU is an A-MPDU of 1500-byte IP packets up to the path's
    /// subframe and airtime caps (the `linux` path's `max_subframes`, `max_aggr_us`), the BlockAck
    /// window and 65,535 bytes. Spec test vector: HT20, 2 streams, MCS 13, the AP's BE set → 4,002.5 µs.
    pub fn exchange_cycle(&self, path: &TxPathConfig, is_ap: bool, txv: &TxVector) -> SimDuration {
        use crate::phy::airtime::{ack_duration, block_ack_duration, BlockAckBitmap};
        let band = self.timings.band;
        let caps = match path {
            TxPathConfig::Linux { max_subframes, max_aggr_us, .. } => AmpduLimits {
                max_mpdus: (*max_subframes).min(self.ampdu_limits.max_mpdus),
                max_duration: SimDuration::from_us(*max_aggr_us as u64).min(self.ampdu_limits.max_duration),
                ..self.ampdu_limits
            },
            TxPathConfig::Fifo { .. } => self.ampdu_limits,
        };
        let mpdu = super::mpdu_len(1500, self.qos);
        let largest = super::ampdu::plan(std::iter::repeat_n(mpdu, caps.max_mpdus as usize), txv, band, self.airtime, &caps, self.ampdu);
        let e = self.edca(is_ap, AccessCategory::Be);
        let response = if self.ampdu { block_ack_duration(txv, &self.basic_rates_mbps, band, BlockAckBitmap::Compressed64) } else { ack_duration(txv, &self.basic_rates_mbps, band) };
        let t = self.timings;
        let slots_x2 = 2 * e.aifsn as u64 + e.cw_min as u64;
        t.sifs + SimDuration::from_ns(t.slot.as_ns() * slots_x2 / 2) + largest.duration + t.sifs + response
    }
}

/// The TxVector a fixed-rate configuration selects in a BSS.
/// For an adaptive controller this is the rate a FIFO path (which has no rate control) falls back to:
/// single-stream MCS7.
pub fn fixed_txvector(c: &WifiConfig, rc: &RateControlConfig) -> Result<TxVector, PhyError> {
    let (mcs, rate_mbps, nss) = match rc {
        RateControlConfig::Fixed { mcs, rate_mbps, nss } => (mcs, rate_mbps, nss),
        _ => (&Some(7), &None, &Some(1)),
    };
    let tx = match c.standard {
        PhyStandard::Ofdm => match (rate_mbps, mcs) {
            (Some(r), _) => TxVector::ofdm_mbps(*r)?,
            (None, Some(m)) => TxVector::ofdm_mbps(*OFDM_RATES_MBPS.get(*m as usize).unwrap_or(&0))?,
            (None, None) => TxVector::ofdm_mbps(54)?,
        },
        PhyStandard::Ht => TxVector::ht(mcs.unwrap_or(7), c.width_mhz, c.gi_ns)?,
        PhyStandard::Vht => TxVector::vht(mcs.unwrap_or(7), nss.unwrap_or(1), c.width_mhz, c.gi_ns)?,
        PhyStandard::He => TxVector::he(mcs.unwrap_or(7), nss.unwrap_or(1), c.width_mhz, c.gi_ns)?,
    };
    tx.validate_in_band(c.band)?;
    Ok(tx)
}

impl BssParams {
    /// An empty ns-3-style FIFO transmit path for a node of this BSS.
    pub fn fifo_path(&self) -> TxPath {
        Box::new(self.fifo())
    }

    fn fifo(&self) -> FifoPath {
        FifoPath::new(FifoParams {
            qos: self.qos,
            ampdu: self.ampdu,
            limits: self.ampdu_limits,
            band: self.timings.band,
            airtime: self.airtime,
            queue_packets: self.queue_packets,
            retry_limit: self.retry_limit,
            lifetime: self.lifetime,
            explicit_bar: self.explicit_bar,
            sifs: self.timings.sifs,
        })
    }

    /// The Linux path's settings `cfg` gives on this BSS (`None` for the `fifo` path); its qdisc is built
    /// apart.
    pub fn linux_params(&self, cfg: &TxPathConfig) -> Option<LinuxParams> {
        let TxPathConfig::Linux { airtime_fairness, afs_variant, codel, fq, hw_depth_aggr, hw_depth_single, sw_retry_limit, max_subframes, max_aggr_us, fixed_tries, aql, qdisc: _, t_irq_us, hw_time_limit_us, tbf } = cfg else { return None };
        Some(LinuxParams {
            qos: self.qos,
            ampdu: self.ampdu,
            band: self.timings.band,
            airtime: self.airtime,
            fq: fq.unwrap_or(FqParams::mac80211()),
            codel: match codel {
                TxqCodel::Default => CodelParams::mac80211(),
                TxqCodel::SlowStation => CodelParams::mac80211_slow_station(),
            },
            airtime_fairness: *airtime_fairness,
            afs_variant: *afs_variant,
            hw_depth_aggr: *hw_depth_aggr as usize,
            hw_depth_single: *hw_depth_single as usize,
            sw_retry_limit: *sw_retry_limit,
            max_subframes: (*max_subframes).min(self.ampdu_limits.max_mpdus),
            max_ampdu_bytes: self.ampdu_limits.max_bytes,
            max_aggr_duration: SimDuration::from_us(*max_aggr_us as u64).min(self.ampdu_limits.max_duration),
            baw: self.ampdu_limits.max_mpdus as u64,
            fixed_tries: *fixed_tries,
            aql: aql.then(AqlParams::default),
            t_irq: SimDuration::from_us(*t_irq_us as u64),
            hw_time_limit: hw_time_limit_us.map(|us| SimDuration::from_us(us as u64)),
            hw_shared: None,
            tbf: *tbf,
        })
    }

    /// An empty transmit path as configured; `rng` perturbs the FQ hash of a Linux path.
    pub fn path(&self, cfg: &TxPathConfig, rng: &mut Rng) -> TxPath {
        match cfg {
            TxPathConfig::Fifo { qdisc } => {
                let mut path = self.fifo();
                if let Some(q) = qdisc {
                    path.set_qdisc(|| crate::queue::AnyQueue::from_config(q, Rng::derive(rng.next_u64(), "qdisc")));
                }
                Box::new(path)
            }
            TxPathConfig::Linux { .. } => self.linux_path_with(cfg, |_| {}, rng),
        }
    }

    /// The `linux` path `cfg` with `adjust` applied to its settings (what mechanisms set in its stages).
    pub fn linux_path_with(&self, cfg: &TxPathConfig, adjust: impl FnOnce(&mut LinuxParams), rng: &mut Rng) -> TxPath {
        let mut p = self.linux_params(cfg).expect("a linux path");
        adjust(&mut p);
        let mut path = LinuxPath::new(p, rng);
        if let TxPathConfig::Linux { qdisc: Some(q), .. } = cfg {
            path.set_qdisc(crate::queue::AnyQueue::from_config(q, Rng::derive(rng.next_u64(), "qdisc")));
        }
        Box::new(path)
    }

    /// Adds medium link `id`, sent at fixed rate `txv` (or by `rc`, Linux path only), to a path.
    pub fn add_link(&self, path: &mut TxPath, id: u32, txv: TxVector, rc: Option<crate::ratectl::AnyRateControl>) {
        use crate::phy::airtime::{ack_duration, block_ack_duration, BlockAckBitmap};
        let band = self.timings.band;
        let bitmap = if txv.standard == PhyStandard::He && self.ampdu_limits.max_mpdus > 64 { BlockAckBitmap::Compressed256 } else { BlockAckBitmap::Compressed64 };
        let (ack, block_ack) = (ack_duration(&txv, &self.basic_rates_mbps, band), block_ack_duration(&txv, &self.basic_rates_mbps, band, bitmap));
        path.add_link(super::txpath::LinkSetup { id, txv, rc, ack, block_ack });
    }

    /// The AP's transmit path as configured (mechanisms may set stages in it: `sim::build`).
    pub fn ap_path(&self, c: &WifiConfig, rng: &mut Rng) -> TxPath {
        self.path(&default_paths(c).0, rng)
    }
}

/// The Linux profile's AP path: mac80211 FQ-CoDel TXQs with airtime fairness over ath9k.
pub fn default_linux_path() -> TxPathConfig {
    TxPathConfig::Linux {
        airtime_fairness: true,
        afs_variant: AfsVariant::Mac80211,
        codel: TxqCodel::Default,
        fq: None,
        hw_depth_aggr: 2,
        hw_depth_single: 8,
        sw_retry_limit: 30,
        max_subframes: 32,
        max_aggr_us: 4000,
        fixed_tries: 10,
        aql: false,
        qdisc: None,
        t_irq_us: 0,
        hw_time_limit_us: None,
        tbf: None,
    }
}

/// The default AP and station transmit paths of a profile.
pub fn default_paths(c: &WifiConfig) -> (TxPathConfig, TxPathConfig) {
    let ap = c.ap_path.clone().unwrap_or(match c.profile {
        WifiProfile::Linux => default_linux_path(),
        WifiProfile::Ns3 => TxPathConfig::Fifo { qdisc: None },
    });
    (ap, c.sta_path.clone().unwrap_or(TxPathConfig::Fifo { qdisc: None }))
}

/// The rate control the AP's downlink and the stations' uplink use when they do not set their own:
/// the scenario's `rate_control`, else the profile's: Minstrel-HT (modern) in `linux`, as mac80211 runs
/// it on every AP; fixed MCS 7 in `ns3`, as the anchors' ConstantRateWifiManager.
pub fn default_rate_control(c: &WifiConfig) -> RateControlConfig {
    c.rate_control.clone().unwrap_or_else(|| match c.profile {
        WifiProfile::Linux => RateControlConfig::MinstrelHt(crate::ratectl::MinstrelHtParams::default()),
        WifiProfile::Ns3 => RateControlConfig::default(),
    })
}

/// The BSS as seen by one station's links: `max_nss` limited to the station's own (`stations[].max_nss`).
pub fn for_station(c: &WifiConfig, station_max_nss: Option<u8>) -> std::borrow::Cow<'_, WifiConfig> {
    match station_max_nss {
        Some(n) if n < c.max_nss => std::borrow::Cow::Owned(WifiConfig { max_nss: n, ..c.clone() }),
        _ => std::borrow::Cow::Borrowed(c),
    }
}

/// The rates a link of this BSS may use, for adaptive rate control.
pub fn link_rates(c: &WifiConfig) -> crate::ratectl::LinkRates {
    crate::ratectl::LinkRates::new(c.standard, c.width_mhz, &[c.gi_ns], c.max_nss.max(1), c.band)
}

/// Builds an adaptive controller (`None` for a fixed rate).
pub fn adaptive_rate_control(c: &WifiConfig, rc: &RateControlConfig, rng: Rng) -> Result<Option<crate::ratectl::AnyRateControl>, String> {
    let params = match rc {
        RateControlConfig::Fixed { .. } => return Ok(None),
        RateControlConfig::MinstrelHt(p) => crate::ratectl::RateControlParams::MinstrelHt(p.clone()),
        RateControlConfig::Thompson(p) => crate::ratectl::RateControlParams::Thompson(p.clone()),
        RateControlConfig::Llra(p) => crate::ratectl::RateControlParams::Llra(p.clone()),
    };
    params.build(&link_rates(c), rng, crate::time::SimTime::ZERO).map(Some).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{LastHop, Scenario};
    use std::path::Path;

    fn params(extra: &str) -> BssParams {
        let text = format!("duration_s = 1\n[[aps]]\nname = \"ap\"\nlast_hop = {{ type = \"wifi\", {extra} }}\n");
        let sc = Scenario::from_toml_str(&text, Path::new(".")).unwrap();
        match &sc.aps[0].last_hop {
            LastHop::Wifi(w) => BssParams::from_config(w),
            _ => unreachable!(),
        }
    }

    /// ns-3 resets the CW on the failure after QSRC reached FrameRetryLimit (`retry_limit`).
    #[test]
    fn cw_reset_follows_the_profile() {
        assert_eq!(params(r#"profile = "ns3""#).cw_reset_retries, 8);
        assert_eq!(params(r#"profile = "ns3", retry_limit = 4"#).cw_reset_retries, 5);
        assert_eq!(params(r#"profile = "linux""#).cw_reset_retries, 7);
    }

    /// QAir spec §4.3's test vector: the testbed PHY (HT20, long GI, 2 streams, MCS 13 = 104 Mbit/s, the
    /// AP's BE set AIFSN 3 / CWmin 15, ath9k's 32-subframe aggregates of 1538-byte MPDUs = 49,406 B):
    /// T_cycle = 43 + 67.5 + (40 + 951 · 4) + 16 + 32 = 4,002.5 µs. At MCS 7, one stream (65 Mbit/s), the
    /// 4-ms cap binds first: 20 subframes (30,878 B: 36 + 951 · 4 = 3,840 µs; 21 would take 4,032 µs),
    /// so T_cycle = 43 + 67.5 + 3,840 + 16 + 32 = 3,998.5 µs.
    #[test]
    fn exchange_cycle_of_the_qair_testbed() {
        let p = params(r#"profile = "linux", width_mhz = 20, max_nss = 2"#);
        let linux = default_paths_for_test();
        let ht = |mcs| TxVector::ht(mcs, crate::phy::mcs::ChannelWidth::Mhz20, crate::phy::mcs::GuardInterval::Ns800).unwrap();
        assert_eq!(p.exchange_cycle(&linux, true, &ht(13)), SimDuration::from_ns(4_002_500));
        assert_eq!(p.exchange_cycle(&linux, true, &ht(7)), SimDuration::from_ns(3_998_500));
    }

    fn default_paths_for_test() -> TxPathConfig {
        let sc = Scenario::from_toml_str("duration_s = 1\n[[aps]]\nname = \"ap\"\nlast_hop = { type = \"wifi\", profile = \"linux\" }\n", Path::new(".")).unwrap();
        match &sc.aps[0].last_hop {
            LastHop::Wifi(w) => default_paths(w).0,
            _ => unreachable!(),
        }
    }
}
