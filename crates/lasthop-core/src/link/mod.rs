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
    // What is wrong with the path comes before what its name says of the format.
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(format!("{path}: no such file")),
        Err(e) => return Err(format!("{path}: cannot read: {e}")),
        Ok(m) if m.is_dir() => return Err(format!("{path}: is a directory, not a trace file")),
        Ok(_) => {}
    }
    let format = match format.or_else(|| TraceFormat::guess(p)) {
        Some(f) => f,
        None => return Err(format!("{path}: cannot tell the trace format from the file name; set `format = \"pitree\"` or `\"mahimahi\"`")),
    };
    let scaled = if scale == 1.0 { String::new() } else { format!(" once scaled by {scale:e}") };
    let max_bps = crate::scenario::MAX_RATE_MBPS * 1e6;
    match format {
        TraceFormat::Pitree => {
            let t = read_pitree(p).map_err(|e| e.to_string())?;
            // Rates below 1 bit/s round to none; a trace of only those would never deliver a packet.
            if t.samples.iter().all(|&(_, bps)| (bps as f64 * scale).round() < 1.0) {
                return Err(format!("{path}: every rate is below 1 bit/s{scaled}: nothing can ever be delivered"));
            }
            if let Some(&(_, bps)) = t.samples.iter().find(|&&(_, bps)| bps as f64 * scale > max_bps) {
                return Err(format!("{path}: a rate of {:e} Mbit/s{scaled} is above the engine's 1 Tbit/s", bps as f64 * scale / 1e6));
            }
            Ok(Server::Pitree(server::PitreeServer::scaled(&t, scale)))
        }
        TraceFormat::Mahimahi => {
            let t = read_mahimahi(p).map_err(|e| e.to_string())?;
            // Each opportunity carries a whole number of bytes: fewer than one would carry none.
            if (server::MAHIMAHI_MTU as f64 * scale).round() < 1.0 {
                return Err(format!("{path}: each delivery opportunity carries less than 1 byte{scaled}: nothing can ever be delivered"));
            }
            let mean_bps = t.ms.len() as f64 * server::MAHIMAHI_MTU as f64 * scale * 8.0 * 1e3 / *t.ms.last().expect("non-empty") as f64;
            if mean_bps > max_bps {
                return Err(format!("{path}: a mean rate of {:e} Mbit/s{scaled} is above the engine's 1 Tbit/s", mean_bps / 1e6));
            }
            Ok(Server::Mahimahi(server::MahimahiServer::scaled(&t, scale)))
        }
    }
}
