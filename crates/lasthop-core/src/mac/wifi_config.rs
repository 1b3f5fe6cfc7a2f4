//! The scenario's description of an 802.11 BSS (`last_hop = { type = "wifi", ... }`): PHY, EDCA, queues and
//! transmit paths; [`super::config::BssParams`] turns it into what the MAC needs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::queue::QueueConfig;
use crate::ratectl::RateControlConfig;

fn default_true() -> bool {
    true
}
fn default_one() -> u8 {
    1
}

fn default_standard() -> crate::phy::mcs::PhyStandard {
    crate::phy::mcs::PhyStandard::Ht
}

fn default_band() -> crate::phy::mcs::Band {
    crate::phy::mcs::Band::Ghz5
}

fn default_width() -> crate::phy::mcs::ChannelWidth {
    crate::phy::mcs::ChannelWidth::Mhz20
}

fn default_gi() -> crate::phy::mcs::GuardInterval {
    crate::phy::mcs::GuardInterval::Ns800
}

fn default_basic_rates() -> Vec<u32> {
    vec![6, 12, 24]
}

fn default_mac_queue() -> u32 {
    1000
}

fn default_retry_limit() -> u32 {
    7
}

fn default_lifetime_ms() -> f64 {
    500.0
}

/// Which implementation's defaults fill the unset EDCA/TXOP values (`wifi-model.md` §1.2, §9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WifiProfile {
    /// A Linux/hostapd AP: AP queues VO/VI AIFSN 1, BE CWmax 63, TXOP VI 3.008 ms / VO 1.504 ms (AP 3.0 /
    /// 1.5 ms); stations use the parameters the AP advertises.
    #[default]
    Linux,
    /// ns-3 3.44: the 802.11-2020 EDCA table for every node, TXOP VI 4.096 ms / VO 2.080 ms.
    Ns3,
}

/// What a station that saw a collision (not its own) waits before resuming its countdown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollisionIfs {
    /// AIFS, as ns-3 does for equal-power colliders (no preamble detected, energy-detect only).
    #[default]
    Difs,
    /// EIFS, as when the garbled PPDU's preamble was detected.
    Eifs,
}

/// Per-AC EDCA override; unset fields keep the profile's value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EdcaOverride {
    /// AIFSN, 1..=15 (a 4-bit field of the EDCA Parameter Set element).
    pub aifsn: Option<u8>,
    /// CWmin, of the form 2^k − 1 up to 32767 (e.g. 15).
    pub cw_min: Option<u32>,
    /// CWmax, of the form 2^k − 1 up to 32767, at least CWmin.
    pub cw_max: Option<u32>,
    /// TXOP limit in µs, 0..=8160 (255 units of 32 µs); 0: one PSDU (and its response) per channel access.
    pub txop_limit_us: Option<u32>,
}

/// EDCA overrides per access category.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EdcaOverrides {
    #[serde(default)]
    pub vo: EdcaOverride,
    #[serde(default)]
    pub vi: EdcaOverride,
    #[serde(default)]
    pub be: EdcaOverride,
    #[serde(default)]
    pub bk: EdcaOverride,
}

/// CoDel parameters of mac80211's TXQs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TxqCodel {
    /// 20 ms / 100 ms with ECN (kernels ≥ 6.15 and the per-station default before).
    #[default]
    Default,
    /// 50 ms / 300 ms without ECN: the "slow station" override of kernels ≈ 4.11–6.14.
    SlowStation,
}

/// Which airtime-fairness scheduler picks the next station TXQ of an AC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AfsVariant {
    /// mac80211's (Linux ≥ 6.0): one list per AC, deficits refilled by `weight << 3` (2048 µs), station
    /// weights (`airtime_weight_us`).
    #[default]
    #[serde(rename = "mac80211")]
    Mac80211,
    /// ath9k's own (Linux ≈ 4.11–4.x, the DRR++ LAST-PQ describes): *new* and *old* lists per AC, a
    /// 300-µs quantum, a station that was idle served first; no station weights.
    #[serde(rename = "ath9k-drr++")]
    Ath9kDrrPlus,
}

fn is_default_afs(v: &AfsVariant) -> bool {
    *v == AfsVariant::Mac80211
}

fn default_hw_depth_aggr() -> u32 {
    2
}

fn default_hw_depth_single() -> u32 {
    8
}

fn default_sw_retry_limit() -> u32 {
    30
}

fn default_max_subframes() -> u32 {
    32
}

fn default_max_aggr_us() -> u32 {
    4000
}

fn default_fixed_tries() -> u8 {
    10
}

/// A node's transmit path: what queues frames and forms PSDUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TxPathConfig {
    /// One MAC queue per AC (FCFS over receivers), PSDUs formed at channel access, per-MPDU retry
    /// limit (ns-3's WifiMacQueue; the validation path).
    Fifo {
        /// ns-3's traffic-control layer above the MAC queue: one such qdisc per AC (`mq` root), and
        /// flow control (an AC's device queue stops while its MAC queue is full, so the qdisc holds the
        /// backlog). ns-3's default stack has `fq_codel` here; default none (packets go straight to
        /// the MAC queue and are dropped when it is full).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        qdisc: Option<QueueConfig>,
    },
    /// The Linux AP path: mac80211 TXQs over FQ-CoDel (4096 flows, quantum 300 B), airtime fairness,
    /// and an ath9k-style driver (software retry queue, hardware queues of 2 A-MPDUs / 8 frames).
    Linux {
        /// The airtime-fairness scheduler (mac80211 ≥ 6.0 DRR); default true.
        #[serde(default = "default_true")]
        airtime_fairness: bool,
        /// Which airtime-fairness scheduler: `mac80211` (≥ 6.0, default) or `ath9k-drr++` (ath9k's own of
        /// Linux ≈ 4.11–4.x: new/old station lists, 300-µs quantum; no station weights).
        #[serde(default, skip_serializing_if = "is_default_afs")]
        afs_variant: AfsVariant,
        /// TXQ CoDel parameters; default `default` (20/100 ms).
        #[serde(default)]
        codel: TxqCodel,
        /// FQ table (flows, quantum, limit, memory limit).
        #[serde(default)]
        fq: Option<crate::queue::fq::FqParams>,
        /// A-MPDUs the driver keeps in a hardware queue; default 2 (ATH_AGGR_MIN_QDEPTH).
        #[serde(default = "default_hw_depth_aggr")]
        hw_depth_aggr: u32,
        /// Single frames the driver keeps in a hardware queue; default 8.
        #[serde(default = "default_hw_depth_single")]
        hw_depth_single: u32,
        /// Hardware attempts before a subframe is dropped; default 30 (ATH_MAX_SW_RETRIES).
        #[serde(default = "default_sw_retry_limit")]
        sw_retry_limit: u32,
        /// Subframes per A-MPDU; default 32 (half the BlockAck window).
        #[serde(default = "default_max_subframes")]
        max_subframes: u32,
        /// A-MPDU airtime cap at the slowest chain rate, µs; default 4000.
        #[serde(default = "default_max_aggr_us")]
        max_aggr_us: u32,
        /// Hardware tries of a fixed rate; default 10 (ath9k max_rate_tries).
        #[serde(default = "default_fixed_tries")]
        fixed_tries: u8,
        /// Airtime Queue Limits (per station 5/12 ms, interface 24 ms); default off, as on ath9k.
        #[serde(default)]
        aql: bool,
        /// A qdisc on the wireless interface; default none (`noqueue`, as Linux sets up mac80211
        /// devices). mac80211 never stops the queue, so a qdisc here only applies its AQM on the way.
        #[serde(default)]
        qdisc: Option<QueueConfig>,
        /// Driver/IRQ latency t_irq, µs (0..=1000): the driver handles a completion (TX status, the
        /// freed hardware-queue slot, its next scheduling round) this long after the hardware finished.
        /// `wifi-model.md` §5.6 suggests 30 as a guess to calibrate; default 0.
        #[serde(default)]
        t_irq_us: u32,
        /// The hardware's time limit per PSDU, µs (100..=1000000; Law's Limit_h on the stock path, which
        /// ath9k does not have): once a PSDU heads its AC's hardware queue, no attempt starts after this
        /// long (one that started runs to its end) and the hardware hands it back. The driver retries an
        /// A-MPDU's subframes in software (the attempts made count toward `sw_retry_limit`; a return
        /// before any attempt counts none, so a limit far below the channel's access delay keeps
        /// subframes going back and forth) and drops a single frame (reason `deadline`). Default none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hw_time_limit_us: Option<u32>,
        /// A token bucket shaper as the interface's root qdisc (Linux `tbf`; any `qdisc` sits under it):
        /// the node's offered-load cap, `{ rate_mbps, burst_bytes = 15140, limit_packets = 1000 }`. Packets
        /// wait in its FIFO and leave while the bucket holds their size; one larger than the bucket is
        /// dropped. Default none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tbf: Option<crate::queue::tbf::TbfParams>,
    },
}

/// The 802.11 BSS of an AP (`last_hop = { type = "wifi", ... }`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WifiConfig {
    /// `ofdm` (802.11a/g), `ht` (802.11n), `vht` (802.11ac), `he` (802.11ax). Default `ht`.
    #[serde(default = "default_standard")]
    pub standard: crate::phy::mcs::PhyStandard,
    /// `5ghz` (default) or `2.4ghz`.
    #[serde(default = "default_band")]
    pub band: crate::phy::mcs::Band,
    /// Channel width; default 20.
    #[serde(default = "default_width")]
    pub width_mhz: crate::phy::mcs::ChannelWidth,
    /// Guard interval; default 800.
    #[serde(default = "default_gi")]
    pub gi_ns: crate::phy::mcs::GuardInterval,
    /// Defaults for EDCA/TXOP values.
    #[serde(default)]
    pub profile: WifiProfile,
    /// Spatial streams the devices support (rate controllers choose among 1..=max_nss); default 1. A
    /// station may support fewer (`stations[].max_nss`). A device has as many receive antennas: a PPDU
    /// of fewer streams decodes with the diversity gain 10·log10(N_rx / N_SS), its preamble with
    /// 10·log10(N_rx) (`wifi-model.md` §4.4); under fading each antenna also fades on its own, and such
    /// a PPDU fades with diversity order N_rx − N_SS + 1 (lasthop's reading; FIDELITY.md, PHY).
    #[serde(default = "default_one")]
    pub max_nss: u8,
    /// QoS (EDCA with four ACs); default true except for `ofdm`, which uses the legacy DCF.
    #[serde(default)]
    pub qos: Option<bool>,
    /// A-MPDU aggregation with BlockAck; default true for HT and later.
    #[serde(default)]
    pub ampdu: Option<bool>,
    /// Receiver's maximum A-MPDU length in bytes; default 65535.
    #[serde(default)]
    pub max_ampdu_bytes: Option<u32>,
    /// Maximum MPDUs per A-MPDU; default the BlockAck window (64; 256 for HE).
    #[serde(default)]
    pub max_ampdu_mpdus: Option<u32>,
    /// BSS basic rate set (Mb/s) for control responses; default [6, 12, 24].
    #[serde(default = "default_basic_rates")]
    pub basic_rates_mbps: Vec<u32>,
    /// Downlink rate control at the AP, and the stations' uplink rate control unless they set their own;
    /// default Minstrel-HT in the `linux` profile (as mac80211), fixed MCS 7 in `ns3` (the anchors'
    /// ConstantRateWifiManager). Under Law, unset means Law's own joint rate and retry control.
    #[serde(default)]
    pub rate_control: Option<RateControlConfig>,
    /// Per-AC MAC queue capacity in packets, at every node of the BSS; default 1000.
    #[serde(default = "default_mac_queue")]
    pub queue_packets: u32,
    /// Transmission attempts per MPDU without a BlockAck agreement; default 7 (ns-3 FrameRetryLimit).
    #[serde(default = "default_retry_limit")]
    pub retry_limit: u32,
    /// MSDU lifetime under a BlockAck agreement (ms); default 500 (ns-3 WifiMacQueue MaxDelay).
    #[serde(default = "default_lifetime_ms")]
    pub msdu_lifetime_ms: f64,
    /// Send a BlockAckReq after a missed BlockAck before retrying; default true in the `ns3` profile
    /// (ns-3 `UseExplicitBarAfterMissedBlockAck`), false in `linux`.
    #[serde(default)]
    pub explicit_bar: Option<bool>,
    /// IFS of third parties after a collision.
    #[serde(default)]
    pub collision_ifs: CollisionIfs,
    /// dot11RTSThreshold, bytes: a PSDU longer than this is preceded by an RTS/CTS exchange when its
    /// node wins the medium (each such attempt; not within a TXOP, which the NAV already protects).
    /// Default none: no RTS/CTS (as ns-3's default threshold, 4,692,480 B, and Linux's `rts off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rts_threshold_bytes: Option<u32>,
    /// Apply the standard's 4-µs rounding of short-GI data fields (default true; ns-3 and ath9k do not).
    #[serde(default)]
    pub sgi_round4: Option<bool>,
    /// The AP's transmit path; default `linux` in the `linux` profile, `fifo` in `ns3`.
    #[serde(default)]
    pub ap_path: Option<TxPathConfig>,
    /// The stations' transmit path; default `fifo` (one queue per AC, `wifi-model.md` §5.8).
    #[serde(default)]
    pub sta_path: Option<TxPathConfig>,
    /// AP EDCA overrides (the AP's own queues).
    #[serde(default)]
    pub edca_ap: EdcaOverrides,
    /// Station EDCA overrides (the parameters the AP advertises).
    #[serde(default)]
    pub edca_sta: EdcaOverrides,
}
