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
}

/// A wireless client.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Station {
    pub name: String,
    /// The AP this station is associated with; may be omitted when there is exactly one AP.
    #[serde(default)]
    pub ap: Option<String>,
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

/// A traffic flow, tagged by `type`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Flow {
    UdpCbr(UdpCbr),
    UdpPoisson(UdpPoisson),
}

fn default_packet_bytes() -> u32 {
    1200
}

impl Flow {
    pub fn common(&self) -> FlowCommon<'_> {
        match self {
            Flow::UdpCbr(f) => f.common(),
            Flow::UdpPoisson(f) => f.common(),
        }
    }
    /// The `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Flow::UdpCbr(_) => "udp_cbr",
            Flow::UdpPoisson(_) => "udp_poisson",
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
    /// Makes file paths absolute relative to the scenario's directory (none yet; traces come later).
    pub(crate) fn resolve_paths(&mut self, _base_dir: &Path) {}

    /// Index of the AP a station belongs to (after validation).
    pub fn ap_of(&self, station: &Station) -> usize {
        match &station.ap {
            Some(name) => self.aps.iter().position(|a| &a.name == name).expect("validated"),
            None => 0,
        }
    }
}
