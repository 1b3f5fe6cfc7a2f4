//! The four published mechanisms, each as pure state machines plus the hooks that place them on the
//! shared model (`wifi-model.md` §8):
//!
//! * `law` — latency-bounded link layer at the AP (unified driver queue, Limit_q / Limit_h, joint
//!   per-transmission rate and retry control);
//! * `zhuge` — Fortune Teller delay prediction and the Feedback Updater (ACK delaying, TWCC
//!   rewriting) at the AP, with the FastAck and ABC baselines;
//! * QAir and LAST-PQ follow (per-station regulator below the driver; priority flow queues over
//!   FQ-CoDel with a delay controller).

pub mod law;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A mechanism installed at an AP of a Wi-Fi last hop: `mechanism = { type = "law", ... }`. Absent,
/// the AP runs its configured transmit path unchanged. Tagged by `type` so that `zhuge`, `qair` and
/// `lastpq` join as further variants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum MechanismConfig {
    /// Law (seed 000): one driver queue, ≤ 2 PSDUs in hardware, Limit_q / Limit_h, and joint
    /// per-transmission rate and retry control. Replaces the AP's transmit path and its downlink rate
    /// control.
    Law(law::LawParams),
}

impl MechanismConfig {
    /// Checks values; `Err((field, message))` names the offending key of the table.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        match self {
            MechanismConfig::Law(p) => p.validate(),
        }
    }

    /// The `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            MechanismConfig::Law(_) => "law",
        }
    }
}
