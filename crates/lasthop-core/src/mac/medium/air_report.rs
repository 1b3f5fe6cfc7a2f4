//! What the medium reports about each node's transmissions to the layers above the transmit path (the
//! mechanisms' hooks, `sim::mech`): typed events, collected during one call of the medium and drained
//! by the world after it. The stages below learn the same completions through
//! [`TxPath::complete`](crate::mac::txpath::TransmitPath::complete).

use crate::packet::NodeId;
use crate::time::{SimDuration, SimTime};

/// One transmit event of a node. The MPDUs it concerns are [`AirReport::mpdus`] of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AirEvent {
    /// An attempt of a PSDU starts on the air (`attempt` counts from 1, hardware retries included).
    /// `access_delay`: the time it waited for the medium since its EDCAF asked for it or the hardware
    /// slot last gave a PSDU back, whichever is later (first attempt; an internal collision lost on the
    /// way does not restart it), or since its previous exchange ended (a retry): backoff, deferral to
    /// others' transmissions, and SIFS within a TXOP. A BlockAckReq has no MPDUs.
    AttemptStart { node: NodeId, ac: u8, attempt: u32, access_delay: SimDuration, mpdus: MpduSpan },
    /// The hardware is done with a PSDU: acknowledged (`success`; `acked` of its MPDUs), out of tries,
    /// or returned at its hardware deadline (then possibly with no attempt made).
    Complete { node: NodeId, ac: u8, success: bool, attempts: u32, acked: u32, mpdus: MpduSpan },
}

/// Where an event's MPDUs are in [`AirReport`]'s list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpduSpan {
    first: u32,
    len: u32,
}

/// The events of one medium call, in the order they happened, and their MPDUs as (packet id,
/// destination).
#[derive(Debug, Default)]
pub struct AirReport {
    events: Vec<AirEvent>,
    mpdus: Vec<(u64, NodeId)>,
}

impl AirReport {
    /// Appends the MPDUs of an event and returns where they are.
    pub(super) fn span(&mut self, mpdus: impl Iterator<Item = (u64, NodeId)>) -> MpduSpan {
        let first = self.mpdus.len() as u32;
        self.mpdus.extend(mpdus);
        MpduSpan { first, len: self.mpdus.len() as u32 - first }
    }
    pub(super) fn push(&mut self, ev: AirEvent) {
        self.events.push(ev);
    }
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
    pub fn events(&self) -> &[AirEvent] {
        &self.events
    }
    /// The MPDUs of `span`, as (packet id, destination).
    pub fn mpdus(&self, span: MpduSpan) -> &[(u64, NodeId)] {
        &self.mpdus[span.first as usize..(span.first + span.len) as usize]
    }
    pub fn clear(&mut self) {
        self.events.clear();
        self.mpdus.clear();
    }
}

impl AirEvent {
    pub fn mpdus(&self) -> MpduSpan {
        match *self {
            AirEvent::AttemptStart { mpdus, .. } | AirEvent::Complete { mpdus, .. } => mpdus,
        }
    }
    /// The node that transmits.
    pub fn node(&self) -> NodeId {
        match *self {
            AirEvent::AttemptStart { node, .. } | AirEvent::Complete { node, .. } => node,
        }
    }
}

/// Reports a PSDU's completion, `acked` of its MPDUs acknowledged (the caller has counted them), to
/// `out.air` when it is collected.
pub(super) fn report_air_complete(tx: &mut Option<&mut AirReport>, node: NodeId, ac: usize, psdu: &crate::mac::txpath::Psdu, st: crate::mac::txpath::TxStatus<'_>, acked: u32) {
    if let Some(r) = tx.as_deref_mut() {
        let mpdus = r.span(psdu.mpdus.iter().map(|m| (m.pkt.id, m.pkt.dst)));
        r.push(AirEvent::Complete { node, ac: ac as u8, success: st.success, attempts: st.attempts, acked, mpdus });
    }
}

impl super::Node {
    /// An attempt of AC `ac`'s head PSDU starts: announced to the hooks through `air` when given, and
    /// the buffer its MPDUs' reception is drawn into.
    pub(super) fn begin_attempt(&mut self, now: SimTime, ac: usize, air: Option<&mut AirReport>) -> Vec<bool> {
        let hw = self.hw[ac].as_ref().expect("a PSDU in hardware");
        if let Some(r) = air {
            let mpdus = r.span(hw.psdu.mpdus.iter().map(|m| (m.pkt.id, m.pkt.dst)));
            let (attempt, access_delay) = (hw.attempts + 1, now - hw.waiting_since);
            r.push(AirEvent::AttemptStart { node: self.node, ac: ac as u8, attempt, access_delay, mpdus });
        }
        let mut received = std::mem::take(&mut self.spare);
        received.clear();
        received.resize(hw.psdu.mpdus.len(), false);
        received
    }
}
