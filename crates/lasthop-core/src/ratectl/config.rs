//! The scenario's choice of rate control (`rate_control = { type = ... }`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Linux Minstrel-HT (`variant = "modern"` default, or `"legacy"`): per PSDU on the `linux` transmit
    /// path (a multi-rate retry chain, as ath9k), per attempt on `fifo` (its first rate, as ns-3).
    MinstrelHt(crate::ratectl::MinstrelHtParams),
    /// ns-3's Thompson sampling (per PSDU on `linux`, per attempt on `fifo`).
    Thompson(crate::ratectl::ThompsonParams),
    /// LLRA (latency-aware, reconstructed; over Minstrel-HT's statistics); needs the `linux` transmit path
    /// (it reads the driver's queues).
    Llra(crate::ratectl::LlraParams),
}

impl Default for RateControlConfig {
    fn default() -> Self {
        RateControlConfig::Fixed { mcs: Some(7), rate_mbps: None, nss: None }
    }
}
