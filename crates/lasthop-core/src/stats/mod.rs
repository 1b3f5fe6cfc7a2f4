//! What a run records: a columnar per-packet log with a timestamp per layer, and per-flow summaries.

mod flows;
mod log;
pub mod forecast;
pub mod samples;

pub use flows::{percentile, FlowField, FlowSummary, FlowTracker};
pub use forecast::ForecastErrors;
pub use samples::Samples;
pub use log::{DropReason, LogSelect, PacketLog, Stage, NO_TIME};
pub mod series;
pub use series::{FrameSeries, RttSeries};
