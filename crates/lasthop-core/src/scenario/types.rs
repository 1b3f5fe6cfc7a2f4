//! The scenario data model. Every struct denies unknown keys; every default is documented.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub use crate::channel::config::{ChannelConfig, FadingConfig};
pub use crate::mac::wifi_config::{CollisionIfs, EdcaOverride, EdcaOverrides, TxPathConfig, TxqCodel, WifiConfig, WifiProfile};
pub use crate::queue::QueueConfig;
pub use crate::ratectl::RateControlConfig;

fn default_seed() -> u64 {
    1
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
    /// Wired links between servers and APs (or between servers); at most one between two nodes.
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
    /// Pairs of Wi-Fi nodes (AP or station names) that cannot sense each other: hidden terminals
    /// (`wifi-model.md` §3.3). Each counts its backoff down while the other transmits, and a receiver
    /// that hears both loses every PPDU that overlaps another it hears (no capture). A station and its
    /// own AP exchange frames, so they cannot be a pair. Default none: every Wi-Fi node senses every
    /// other, one collision domain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden_nodes: Vec<[String; 2]>,
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
    /// Mechanisms on every node of the AP's BSS — the AP and each of its stations — installed before
    /// each node's own (`qair`, on `linux` or `fifo` paths). Default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_mechanisms: Vec<crate::mech::MechanismConfig>,
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

    /// The AP's transmit path as it runs on Wi-Fi last hop `w`: as configured, except that Law (which
    /// sets stages of the Linux path) puts it on the Linux profile's default path in place of a `fifo`
    /// one, as the simulator builds it.
    pub fn run_path(&self, w: &crate::mac::wifi_config::WifiConfig) -> crate::mac::wifi_config::TxPathConfig {
        let configured = crate::mac::config::default_paths(w).0;
        match (self.law(), &configured) {
            (Some(_), crate::mac::wifi_config::TxPathConfig::Fifo { .. }) => crate::mac::config::default_linux_path(),
            _ => configured,
        }
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
    /// Spatial streams this station supports (a 2×2 phone: 2), at most the BSS's `max_nss`, and so its
    /// receive antennas (the diversity gain of `max_nss` on the BSS). The rate controllers of its
    /// uplink and of the AP's downlink to it choose among 1..=max_nss streams, and a fixed rate of its
    /// links (its own or the BSS's) must not need more. Not with Law on the AP, whose controller picks
    /// every station's rates among the BSS's streams. Default: the BSS's `max_nss` (and, as before this
    /// setting, no check of fixed rates against it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nss: Option<u8>,
    /// Mechanisms on the station's own transmit path (`qair`, on its `linux` or `fifo` path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mechanisms: Vec<crate::mech::MechanismConfig>,
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
    External {
        /// The flow carries plaintext RTP media from `from` to `to`, with RTCP back (the emulator
        /// reads both in the clear): forward RTP packets carry their transport-wide sequence number
        /// in this header extension, and reverse RTCP's transport-cc feedback is read, so Zhuge
        /// manages the flow as RTP (rewriting TWCC) instead of as TCP.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rtp: Option<ExternalRtp>,
    }
);

/// How an `external` flow's RTP is read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExternalRtp {
    /// The one-byte RTP header extension ID (RFC 8285, 1..=14) of the transport-wide sequence number
    /// (`http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01` in the SDP).
    pub twcc_extension_id: u8,
}

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
    /// What a feedback mechanism sees of the flow: its `type`, except `external_rtp` for an
    /// `external` flow that carries RTP.
    pub fn feedback_kind(&self) -> &'static str {
        match self {
            Flow::External(External { rtp: Some(_), .. }) => "external_rtp",
            f => f.kind(),
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
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputOptions {
    /// Which packets get a row (with its timestamp at every layer) in `packets.parquet`: `"all"` (or
    /// `true`, the default), `"none"` (or `false`: runs that need only the flow metrics, which never
    /// depend on this), or `"sampled"` (every `sample_every`-th packet of each flow). Long runs keep
    /// memory in bounds with `"none"` or `"sampled"`.
    #[serde(default)]
    pub packets: PacketsSetting,
    /// With `packets = "sampled"`: keep one packet in this many, per flow (its first, then every n-th;
    /// default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub sample_every: Option<u32>,
    /// Only these flows' packets get rows (default: every flow); each named once, and only while
    /// `packets` logs some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<String>>,
}


/// `output.packets`: a mode, or `true`/`false` for `"all"`/`"none"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum PacketsSetting {
    Flag(bool),
    Mode(PacketsMode),
}

/// As its mode: `true` and `"all"` are one setting, so a resolved scenario (and a sweep point's key)
/// does not depend on which was written.
impl Serialize for PacketsSetting {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.mode().serialize(s)
    }
}

/// By hand, so that a wrong value is told what the right ones are (serde's untagged enums say only
/// that nothing matched).
impl<'de> Deserialize<'de> for PacketsSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Setting;
        impl serde::de::Visitor<'_> for Setting {
            type Value = PacketsSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(r#""all", "none", "sampled", true or false"#)
            }
            fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<PacketsSetting, E> {
                Ok(PacketsSetting::Flag(b))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<PacketsSetting, E> {
                match s {
                    "all" => Ok(PacketsSetting::Mode(PacketsMode::All)),
                    "none" => Ok(PacketsSetting::Mode(PacketsMode::None)),
                    "sampled" => Ok(PacketsSetting::Mode(PacketsMode::Sampled)),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(s), &self)),
                }
            }
        }
        d.deserialize_any(Setting)
    }
}

impl Default for PacketsSetting {
    fn default() -> Self {
        PacketsSetting::Flag(true)
    }
}

/// Which packets `packets.parquet` has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PacketsMode {
    All,
    None,
    Sampled,
}

impl PacketsSetting {
    pub fn mode(self) -> PacketsMode {
        match self {
            PacketsSetting::Flag(true) => PacketsMode::All,
            PacketsSetting::Flag(false) => PacketsMode::None,
            PacketsSetting::Mode(m) => m,
        }
    }
}

impl Scenario {
    /// Flow `i`'s name: its `name`, or `flow<i>` when it has none.
    pub fn flow_name(&self, i: usize) -> String {
        self.flows[i].common().name.map(str::to_string).unwrap_or_else(|| format!("flow{i}"))
    }

    /// Every flow's name ([`Scenario::flow_name`]), by index.
    pub fn flow_names(&self) -> Vec<String> {
        (0..self.flows.len()).map(|i| self.flow_name(i)).collect()
    }

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
