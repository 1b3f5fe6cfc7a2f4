//! Links that are not 802.11: wired pipes (a queue, a serializer at a fixed rate, a propagation delay)
//! used for the wired segment and as a stand-in last hop.

mod pipe;
pub mod server;

pub use pipe::{Pipe, PipeTarget};
pub use server::Server;

use crate::trace::{read_mahimahi, read_pitree, TraceFormat};
use std::path::Path;

/// Loads a capacity trace into a [`Server`]; the error names `file:line`.
pub fn trace_server(path: &str, format: Option<TraceFormat>, scale: f64) -> Result<Server, String> {
    let p = Path::new(path);
    let format = match format.or_else(|| TraceFormat::guess(p)) {
        Some(f) => f,
        None => return Err(format!("{path}: cannot tell the trace format from the file name; set `format = \"pitree\"` or `\"mahimahi\"`")),
    };
    match format {
        TraceFormat::Pitree => read_pitree(p).map(|t| Server::Pitree(server::PitreeServer::scaled(&t, scale))),
        TraceFormat::Mahimahi => read_mahimahi(p).map(|t| Server::Mahimahi(server::MahimahiServer::scaled(&t, scale))),
    }
    .map_err(|e| e.to_string())
}
