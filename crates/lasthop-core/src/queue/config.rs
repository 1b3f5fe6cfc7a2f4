//! The scenario's description of a queue discipline (`queue = { type = ... }`); [`super::AnyQueue::from_config`]
//! builds it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
