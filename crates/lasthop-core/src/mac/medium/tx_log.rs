//! The medium's log of PSDU transmissions, one row per attempt, for time series of rates and SNR.

use crate::phy::mcs::TxVector;
use crate::time::SimTime;

/// One row per PSDU transmission (an attempt, a BlockAckReq included; an attempt that failed at its
/// RTS has none, `rts.rs`), written when it ends: when it
/// started, on which link, at which rate, the link's SNR at one receive antenna (before the receiver's
/// diversity gain and, under fading, its diversity order; NaN for a collision,
/// where none was drawn), its MPDUs and how many of them were received. In one collision domain the
/// rows are in start order; with hidden terminals PPDUs overlap, so a row may start before the one
/// above it.
#[derive(Clone, Debug, Default)]
pub struct TxLog {
    pub t_ns: Vec<u64>,
    pub link: Vec<u32>,
    pub mcs: Vec<u8>,
    pub nss: Vec<u8>,
    pub rate_mbps: Vec<f32>,
    pub snr_db: Vec<f32>,
    pub mpdus: Vec<u16>,
    pub received: Vec<u16>,
    pub collided: Vec<bool>,
}

impl TxLog {
    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(&mut self, t: SimTime, link: u32, txv: &TxVector, snr_db: f64, mpdus: usize, received: usize, collided: bool) {
        self.t_ns.push(t.as_ns());
        self.link.push(link);
        self.mcs.push(txv.mcs);
        self.nss.push(txv.nss);
        self.rate_mbps.push((txv.data_rate().bps() as f64 / 1e6) as f32);
        self.snr_db.push(snr_db as f32);
        self.mpdus.push(mpdus.min(u16::MAX as usize) as u16);
        self.received.push(received.min(u16::MAX as usize) as u16);
        self.collided.push(collided);
    }
}
