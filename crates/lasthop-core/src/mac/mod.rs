//! The 802.11 MAC: EDCA channel access, frame exchanges with ACK/BlockAck, A-MPDU aggregation.
//!
//! * [`edca`] — the backoff state machine of one access category (pure, timeline-tested);
//! * [`ampdu`] — how many queued MPDUs one PSDU may carry (pure);
//! * [`medium`] — one collision domain: every station's EDCAFs, the shared medium, frame exchanges,
//!   collisions, retries, BlockAck windows and receiver reordering, driven by engine events.
//!
//! One collision domain means every node senses every other node (no hidden terminals), so all nodes
//! observe the same busy/idle transitions and the next channel access is the earliest backoff end over
//! all nodes: one access timer for the whole domain, recomputed on every medium change (O(nodes × ACs)
//! per PPDU, independent of idle slots).

pub mod ampdu;
pub mod config;
pub mod edca;
pub mod medium;
pub mod txpath;
pub mod wifi_config;

pub use edca::{AccessCategory, EdcaParams, Edcaf};

/// QoS data MAC header (3-address), bytes.
pub const QOS_DATA_HEADER: u32 = 26;
/// Non-QoS data MAC header, bytes.
pub const DATA_HEADER: u32 = 24;
/// Frame check sequence, bytes.
pub const FCS: u32 = 4;
/// LLC/SNAP header in front of the IP packet, bytes.
pub const LLC_SNAP: u32 = 8;

/// MPDU length of an IP packet of `ip_len` bytes (no encryption): ip + LLC/SNAP + header + FCS.
pub const fn mpdu_len(ip_len: u32, qos: bool) -> u32 {
    ip_len + LLC_SNAP + if qos { QOS_DATA_HEADER } else { DATA_HEADER } + FCS
}
