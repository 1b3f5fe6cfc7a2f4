//! What a transmit path's unit tests hand it in place of the medium: a packet log, the drops and the
//! receiver-window releases it reports.

use super::{PathOut, TransmitPath};
use crate::packet::Packet;
use crate::queue::Dropped;
use crate::stats::PacketLog;
use crate::time::SimTime;

pub(crate) struct Io {
    pub log: PacketLog,
    pub dropped: Vec<Dropped>,
    pub releases: Vec<(u32, usize, u64)>,
}

impl Io {
    pub fn new() -> Self {
        Io { log: PacketLog::new(true), dropped: Vec::new(), releases: Vec::new() }
    }

    pub fn out(&mut self) -> PathOut<'_> {
        PathOut { log: &mut self.log, dropped: &mut self.dropped, releases: &mut self.releases }
    }

    /// Opens `pkt`'s log row and hands it to `path` for local link `link` and queue `ac`.
    pub fn enqueue(&mut self, path: &mut dyn TransmitPath, now: SimTime, link: usize, ac: usize, pkt: Packet) {
        self.log.open(&pkt);
        path.enqueue(now, link, ac, pkt, &mut self.out());
    }

    /// The ids of the packets dropped so far, in order.
    pub fn dropped_ids(&self) -> Vec<u64> {
        self.dropped.iter().map(|d| d.0.id).collect()
    }
}
