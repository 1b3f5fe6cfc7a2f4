//! The scenario data model. Every struct denies unknown keys; every default is documented.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

fn default_seed() -> u64 {
    1
}
fn default_true() -> bool {
    true
}

/// One simulation run: topology, traffic and output options.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free-form name shown in reports.
    #[serde(default)]
    pub name: String,
    /// Simulated duration in seconds (> 0).
    pub duration_s: f64,
    /// Master seed; every component's RNG is derived from it and its path. Overridden by `--seed`.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Packets sent before this time are not counted in the metrics (they are still logged).
    #[serde(default)]
    pub warmup_s: f64,
    /// Wired hosts (traffic sources and sinks behind the AP).
    #[serde(default)]
    pub servers: Vec<Server>,
    /// Access points. Every station belongs to one.
    pub aps: Vec<AccessPoint>,
    /// Wireless clients.
    #[serde(default)]
    pub stations: Vec<Station>,
    /// Wired links between servers and APs (or between servers).
    #[serde(default)]
    pub links: Vec<WiredLink>,
    /// Traffic.
    #[serde(default)]
    pub flows: Vec<Flow>,
    /// What the run writes.
    #[serde(default)]
    pub output: OutputOptions,
    /// Parameter changes at given times (`[{ at_s, target, set }]`, see `sim::command`); default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<crate::sim::CommandConfig>,
}

/// A wired host.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub name: String,
}

/// An access point and its last hop towards its stations.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessPoint {
    pub name: String,
    /// How the AP reaches its stations.
    pub last_hop: LastHop,
    /// A mechanism the AP runs, `type`-tagged; default none. Short for a one-element `mechanisms`.
    #[serde(default)]
    pub mechanism: Option<crate::mech::MechanismConfig>,
    /// The mechanisms the AP runs, `type`-tagged, in order (their hooks see traffic in this order);
    /// default none. `law` reshapes an 802.11 AP's transmit path (leave `ap_path` and an adaptive
    /// downlink `rate_control` unset); `zhuge`, `fastack` and `abc` act on the AP's downlink queue and
    /// its stations' feedback, over any last hop. Two mechanisms may not fill one role (Zhuge and
    /// FastAck both act on the TCP feedback).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mechanisms: Vec<crate::mech::MechanismConfig>,
}

impl AccessPoint {
    /// The mechanisms the AP runs, each with its key in the AP's table (`mechanism`, or
    /// `mechanisms[i]`).
    pub fn mechanisms(&self) -> impl Iterator<Item = (super::Loc, &crate::mech::MechanismConfig)> {
        let one = self.mechanism.iter().map(|m| (super::Loc::root().key("mechanism"), m));
        one.chain(self.mechanisms.iter().enumerate().map(|(i, m)| (super::Loc::root().key("mechanisms").index(i), m)))
    }

    /// Law's parameters, if the AP runs Law.
    pub fn law(&self) -> Option<&crate::mech::law::LawParams> {
        self.mechanisms().find_map(|(_, m)| m.law())
    }
}

/// The last hop between an AP and its stations.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum LastHop {
    /// A wired stand-in: one shared downlink pipe (AP → stations) and one shared uplink pipe
    /// (stations → AP), each with its own rate, propagation delay and queue. No contention, no errors.
    Wired {
        /// Downlink rate in Mbit/s (> 0).
        rate_mbps: f64,
        /// Uplink rate in Mbit/s; defaults to the downlink rate.
        #[serde(default)]
        uplink_rate_mbps: Option<f64>,
        /// One-way propagation delay in ms (≥ 0).
        #[serde(default)]
        delay_ms: f64,
        /// The AP's queue in front of the downlink pipe (and each direction's queue).
        #[serde(default)]
        queue: QueueConfig,
    },
    /// An 802.11 BSS: EDCA contention, A-MPDU/BlockAck, per-station channels. All Wi-Fi APs of a
    /// scenario share one collision domain (co-channel BSSs hear each other).
    Wifi(Box<WifiConfig>),
    /// A trace-driven bottleneck: the AP's queue drains at the capacity a trace gives (pitree
    /// `time_s Mbps` step-hold, or Mahimahi millisecond delivery opportunities), repeating. The uplink
    /// is a fixed-rate pipe.
    CapacityTrace {
        /// Trace file (relative paths are resolved against the scenario file's directory).
        trace: String,
        /// `pitree` or `mahimahi`; guessed from the file name when omitted.
        #[serde(default)]
        format: Option<crate::trace::TraceFormat>,
        /// One-way propagation delay in ms (≥ 0).
        #[serde(default)]
        delay_ms: f64,
        /// Uplink rate in Mbit/s; default 100.
        #[serde(default = "default_uplink_mbps")]
        uplink_rate_mbps: f64,
        /// Capacity multiplier (> 0); default 1. The Zhuge artifact runs its traces at 15/13.
        #[serde(default = "default_scale")]
        scale: f64,
        /// The AP's queue in front of the trace link (and the uplink's).
        #[serde(default)]
        queue: QueueConfig,
    },
}

fn default_uplink_mbps() -> f64 {
    100.0
}

fn default_scale() -> f64 {
    1.0
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
    pub aifsn: Option<u8>,
    pub cw_min: Option<u32>,
    pub cw_max: Option<u32>,
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

/// Rate selection for a transmitter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum RateControlConfig {
    /// Always the same MCS (for `standard = "ofdm"`, `mcs` indexes 6, 9, 12, 18, 24, 36, 48, 54 Mb/s as
    /// 0..7; `rate_mbps` may be given instead). HT MCS ≥ 8 selects more spatial streams.
    Fixed {
        #[serde(default)]
        mcs: Option<u8>,
        #[serde(default)]
        rate_mbps: Option<u32>,
        #[serde(default)]
        nss: Option<u8>,
    },
    /// Linux Minstrel-HT (`variant = "modern"` default, or `"legacy"`); needs the `linux` transmit path.
    MinstrelHt(crate::ratectl::MinstrelHtParams),
    /// ns-3's Thompson sampling; needs the `linux` transmit path.
    Thompson(crate::ratectl::ThompsonParams),
    /// LLRA (latency-aware, reconstructed; over Minstrel-HT's statistics); needs the `linux` transmit path.
    Llra(crate::ratectl::LlraParams),
}

impl Default for RateControlConfig {
    fn default() -> Self {
        RateControlConfig::Fixed { mcs: Some(7), rate_mbps: None, nss: None }
    }
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
    /// Spatial streams the devices support (rate controllers choose among 1..=max_nss); default 1.
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
    /// Downlink rate control at the AP.
    #[serde(default)]
    pub rate_control: RateControlConfig,
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

/// The radio channel between a station and its AP (both directions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChannelConfig {
    /// A constant SNR, optionally with block fading.
    FixedSnr {
        snr_db: f64,
        #[serde(default)]
        fading: Option<FadingConfig>,
    },
    /// An SNR time series from a file of `time_s snr_db` lines, step-hold (or linear with
    /// `interpolate = true`); the last value holds after the end.
    SnrTrace {
        file: String,
        #[serde(default)]
        interpolate: bool,
        #[serde(default)]
        fading: Option<FadingConfig>,
    },
    /// Log-distance path loss: SNR = tx_power − (PL(d0) + 10·n·log10(d/d0)) − noise floor.
    LogDistance {
        distance_m: f64,
        /// Path-loss exponent n; default 3 (ns-3 `LogDistancePropagationLossModel`).
        #[serde(default = "default_exponent")]
        exponent: f64,
        /// Loss at the 1-m reference distance; default 46.6777 dB (ns-3's 5 GHz value).
        #[serde(default = "default_ref_loss")]
        reference_loss_db: f64,
        /// Default 16.0206 dBm (ns-3).
        #[serde(default = "default_tx_power")]
        tx_power_dbm: f64,
        /// Receiver noise figure; default 7 dB (noise floor −94 dBm at 20 MHz).
        #[serde(default = "default_nf")]
        noise_figure_db: f64,
        #[serde(default)]
        fading: Option<FadingConfig>,
    },
    /// A scripted SNR ramp for mobility: linear between `(time_s, snr_db)` points, holding outside.
    Ramp {
        points: Vec<(f64, f64)>,
        #[serde(default)]
        fading: Option<FadingConfig>,
    },
    /// An office in working hours (Law's testbed): slow drift, Rician fast fading, people crossing the
    /// line of sight (deep fades) and co-channel interference bursts (SINR drops); every knob optional.
    Office(crate::channel::OfficeParams),
}

fn default_exponent() -> f64 {
    3.0
}
fn default_ref_loss() -> f64 {
    46.6777
}
fn default_tx_power() -> f64 {
    16.0206
}
fn default_nf() -> f64 {
    7.0
}
fn default_coherence_ms() -> f64 {
    20.0
}

/// Block fading on top of a channel's mean SNR: the power gain is redrawn every coherence time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FadingConfig {
    /// |h|² ~ Exp(1).
    Rayleigh {
        /// Coherence time; default 20 ms (indoor walking, `wifi-model.md` §4.3).
        #[serde(default = "default_coherence_ms")]
        coherence_ms: f64,
    },
    /// Line of sight with Rician factor K (dB).
    Rician {
        k_db: f64,
        #[serde(default = "default_coherence_ms")]
        coherence_ms: f64,
    },
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig::FixedSnr { snr_db: 40.0, fading: None }
    }
}

/// A wireless client.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Station {
    pub name: String,
    /// The AP this station is associated with; may be omitted when there is exactly one AP.
    #[serde(default)]
    pub ap: Option<String>,
    /// Radio channel to its AP (Wi-Fi last hop only); default a fixed 40 dB SNR (no frame errors).
    #[serde(default)]
    pub channel: Option<ChannelConfig>,
    /// Uplink rate control, at the station (Wi-Fi last hop only); default the AP's.
    #[serde(default)]
    pub rate_control: Option<RateControlConfig>,
    /// Downlink rate control at the AP for this station; default the AP's `rate_control`.
    #[serde(default)]
    pub downlink_rate_control: Option<RateControlConfig>,
    /// Airtime-fairness weight of this station at a `linux` AP path, µs; default 256.
    #[serde(default)]
    pub airtime_weight_us: Option<u32>,
}

/// A full-duplex wired link; each direction has its own queue.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WiredLink {
    /// One end (a server or AP name).
    pub a: String,
    /// The other end.
    pub b: String,
    /// Rate in Mbit/s (> 0).
    pub rate_mbps: f64,
    /// One-way propagation delay in ms (≥ 0).
    #[serde(default)]
    pub delay_ms: f64,
    /// Queue in front of each direction.
    #[serde(default)]
    pub queue: QueueConfig,
}

/// A queue discipline.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// Tail-drop FIFO bounded in packets and/or bytes (whichever is hit first).
    Fifo {
        /// Capacity in packets (> 0); default 1000 (Linux txqueuelen).
        #[serde(default)]
        packets: Option<u32>,
        /// Capacity in bytes (> 0); unbounded if omitted.
        #[serde(default)]
        bytes: Option<u64>,
    },
    /// Linux `codel` qdisc (defaults: limit 1000, target 5 ms, interval 100 ms; times in µs).
    Codel(crate::queue::codel::CodelQdiscParams),
    /// Linux `fq_codel` qdisc (1024 flows, quantum 1514 B, limit 10240, target 5 ms, interval 100 ms).
    FqCodel(crate::queue::fq_codel::FqCodelParams),
    /// Linux `pie` qdisc (target 15 ms, tupdate 15 ms, limit 1000).
    Pie(crate::queue::pie::PieParams),
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig::Fifo { packets: Some(1000), bytes: None }
    }
}

/// Declares a flow type: the fields every flow has, then the type's own fields. (serde cannot combine
/// `flatten` with `deny_unknown_fields`, so the common fields are spelled into each struct.)
macro_rules! flow_type {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Optional label; defaults to `flowN`.
            #[serde(default)]
            pub name: Option<String>,
            /// Source node name.
            pub from: String,
            /// Destination node name.
            pub to: String,
            /// Start time in seconds (≥ 0); default 0.
            #[serde(default)]
            pub start_s: f64,
            /// Stop time in seconds; default: the end of the run.
            #[serde(default)]
            pub stop_s: Option<f64>,
            /// DSCP code point carried by the packets (0..=63); default 0 (best effort).
            #[serde(default)]
            pub dscp: u8,
            $($(#[$fm])* pub $f: $t),*
        }
        impl $name {
            pub fn common(&self) -> FlowCommon<'_> {
                FlowCommon { name: self.name.as_deref(), from: &self.from, to: &self.to, start_s: self.start_s, stop_s: self.stop_s, dscp: self.dscp }
            }
        }
    };
}

/// The fields every flow has, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct FlowCommon<'a> {
    pub name: Option<&'a str>,
    pub from: &'a str,
    pub to: &'a str,
    pub start_s: f64,
    pub stop_s: Option<f64>,
    pub dscp: u8,
}

flow_type!(
    /// UDP constant bit rate: fixed-size packets at fixed intervals.
    UdpCbr {
        /// Sending rate in Mbit/s of IP packets (> 0).
        rate_mbps: f64,
        /// IP packet size in bytes (28..=65535); default 1200.
        #[serde(default = "default_packet_bytes")]
        packet_bytes: u32,
    }
);

flow_type!(
    /// UDP with Poisson arrivals (exponential gaps) of fixed-size packets at the given mean rate.
    UdpPoisson {
        /// Mean rate in Mbit/s of IP packets (> 0).
        rate_mbps: f64,
        /// IP packet size in bytes (28..=65535); default 1200.
        #[serde(default = "default_packet_bytes")]
        packet_bytes: u32,
    }
);

flow_type!(
    /// A closed-loop saturated source (as in ns-3's saturation anchors and Bianchi's model): it keeps
    /// `backlog` packets in the network and sends a new one each time one is delivered or dropped.
    Saturated {
        /// IP packet size in bytes (28..=65535); default 1500.
        #[serde(default = "default_saturated_bytes")]
        packet_bytes: u32,
        /// Packets kept outstanding (≥ 1); default 4 (enough for single MPDUs; use ≥ 128 with A-MPDU).
        #[serde(default = "default_backlog")]
        backlog: u32,
    }
);

fn default_saturated_bytes() -> u32 {
    1500
}
fn default_backlog() -> u32 {
    4
}

flow_type!(
    /// ICMP-like echo: a request every `interval_ms`, answered by the destination; the flow's latency
    /// is the round-trip time.
    Ping {
        /// Gap between requests in ms (> 0); default 100.
        #[serde(default = "default_ping_interval")]
        interval_ms: f64,
        /// IP packet size in bytes (28..=65535); default 84 (ping's 56-byte payload).
        #[serde(default = "default_ping_bytes")]
        packet_bytes: u32,
    }
);

fn default_ping_interval() -> f64 {
    100.0
}
fn default_ping_bytes() -> u32 {
    84
}

flow_type!(
    /// A bulk TCP transfer (unlimited, or `bytes` long) with NewReno recovery, RTO, delayed ACKs and
    /// the congestion control of `tcp.cc` (default Cubic).
    Tcp {
        /// Bytes to transfer; default unlimited (until `stop_s`).
        #[serde(default)]
        bytes: Option<u64>,
        /// TCP settings (MSS, delayed ACKs, minimum RTO, congestion control).
        #[serde(default)]
        tcp: crate::transport::tcp::TcpParams,
    }
);

flow_type!(
    /// A real-time video call (WebRTC-like): frames at `video.fps`, packetized into RTP, XOR FEC,
    /// paced at 2.5× the target, NACK retransmissions, TWCC feedback every 100 ms over the reverse
    /// path, and GCC (or a fixed bitrate) setting the target. See `lasthop schema` for every knob.
    Rtc {
        /// Frame deadline for `frame_deadline_miss_rate`, ms (> 0); default 100 (Law; Zhuge uses 400).
        #[serde(default = "default_deadline_ms")]
        deadline_ms: f64,
        /// Sender and receiver settings (video, fec, pacer, twcc, rate_control, rtx, receiver).
        #[serde(default)]
        rtc: crate::app::rtc::RtcParams,
    }
);

fn default_deadline_ms() -> f64 {
    100.0
}

flow_type!(
    /// Video over TCP (the Zhuge artifact's TCP runs): a frame every 1/fps s written into the socket,
    /// its size set by a rate that adapts to the unsent backlog; a frame is decoded when TCP has
    /// delivered all of it in order.
    TcpVideo {
        /// Frame deadline for `frame_deadline_miss_rate`, ms (> 0); default 400 (Zhuge).
        #[serde(default = "default_tcp_video_deadline_ms")]
        deadline_ms: f64,
        /// Frame clock and rate bounds.
        #[serde(default)]
        video: crate::app::tcp_video::TcpVideoParams,
        /// TCP settings (MSS, delayed ACKs, minimum RTO, congestion control).
        #[serde(default)]
        tcp: crate::transport::tcp::TcpParams,
    }
);

fn default_tcp_video_deadline_ms() -> f64 {
    400.0
}

flow_type!(
    /// Packets from outside the model: the flow sends nothing by itself. Its packets are handed in
    /// through `Sim::inject` (the Python API's stepped runs, the emulator's real traffic) at `from`
    /// (forward) or `to` (reverse), cross the modelled network, and come out at the other end through
    /// `Sim::drain_egress`. Forward packets count in the flow's metrics.
    External {}
);

/// A traffic flow, tagged by `type`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Flow {
    UdpCbr(UdpCbr),
    UdpPoisson(UdpPoisson),
    Saturated(Saturated),
    Ping(Ping),
    Tcp(Tcp),
    Rtc(Rtc),
    TcpVideo(TcpVideo),
    External(External),
}

fn default_packet_bytes() -> u32 {
    1200
}

impl Flow {
    pub fn common(&self) -> FlowCommon<'_> {
        match self {
            Flow::UdpCbr(f) => f.common(),
            Flow::UdpPoisson(f) => f.common(),
            Flow::Saturated(f) => f.common(),
            Flow::Ping(f) => f.common(),
            Flow::Tcp(f) => f.common(),
            Flow::Rtc(f) => f.common(),
            Flow::TcpVideo(f) => f.common(),
            Flow::External(f) => f.common(),
        }
    }
    /// The `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Flow::UdpCbr(_) => "udp_cbr",
            Flow::UdpPoisson(_) => "udp_poisson",
            Flow::Saturated(_) => "saturated",
            Flow::Ping(_) => "ping",
            Flow::Tcp(_) => "tcp",
            Flow::Rtc(_) => "rtc",
            Flow::TcpVideo(_) => "tcp_video",
            Flow::External(_) => "external",
        }
    }
}

/// What a run records.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputOptions {
    /// Record one row per packet with its timestamp at every layer (`packets.parquet`). Default true.
    #[serde(default = "default_true")]
    pub packets: bool,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions { packets: true }
    }
}

impl Scenario {
    /// Makes file paths (traces) absolute relative to the scenario's directory.
    pub(crate) fn resolve_paths(&mut self, base_dir: &Path) {
        let abs = |p: &mut String| {
            let path = Path::new(p.as_str());
            if path.is_relative() {
                *p = base_dir.join(path).to_string_lossy().into_owned();
            }
        };
        for a in &mut self.aps {
            if let LastHop::CapacityTrace { trace, .. } = &mut a.last_hop {
                abs(trace);
            }
        }
        for s in &mut self.stations {
            if let Some(ChannelConfig::SnrTrace { file, .. }) = &mut s.channel {
                abs(file);
            }
        }
    }

    /// Index of the AP a station belongs to (after validation).
    pub fn ap_of(&self, station: &Station) -> usize {
        self.find_ap_of(station).expect("validated")
    }

    /// Index of the AP a station names (or the only AP); `None` if there is no such AP.
    pub fn find_ap_of(&self, station: &Station) -> Option<usize> {
        match &station.ap {
            Some(name) => self.aps.iter().position(|a| &a.name == name),
            None => (!self.aps.is_empty()).then_some(0),
        }
    }
}
