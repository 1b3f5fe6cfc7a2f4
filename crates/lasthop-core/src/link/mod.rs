//! Links that are not 802.11: wired pipes (a queue, a serializer at a fixed rate, a propagation delay)
//! used for the wired segment and as a stand-in last hop.

mod pipe;

pub use pipe::{Pipe, PipeTarget};
