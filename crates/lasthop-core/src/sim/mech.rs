//! AP mechanisms in the event loop: where the world calls the hooks of the mechanisms installed on each
//! AP ([`crate::mech::hook`]), and what it keeps for every hook.
//!
//! For a downlink packet at an AP with hooks, in this order: [`World::mech_downlink`] before the packet
//! is queued, then the egress events of the AP's last-hop queue (admitted, moved to the "driver" when
//! the stand-in pipe starts serializing it, departed when the pipe finished it or the 802.11 MAC
//! started its first attempt or delivered it, dropped). For an uplink packet from one of the AP's
//! stations, [`World::mech_uplink`]: forward, hold until a release time (in order), consume, or forward
//! the client's feedback for RTT samples only. The hook's own timer runs [`World::on_mech_timer`].
//!
//! Egress of a stand-in last hop (wired or capacity trace): `Q_d` is the pipe's queue, `Q_v` the packet
//! being serialized (a one-packet driver queue, as the Zhuge artifact sets up). Over 802.11 the AP's
//! transmit path up to the air is `Q_v` (one per station: mac80211 keeps a txq per station and TID),
//! and a packet leaves it when its first transmission attempt starts, as an MPDU leaves ns-3's
//! `WifiMacQueue` when it goes into an A-MPDU; the prediction accuracy is still measured to delivery,
//! kept per actual-delay bucket in bounded memory ([`crate::stats::ForecastErrors`]: exact up to 65,536
//! packets per bucket, then within 0.1 %).

use super::world::{Event, Hop, World};
use crate::engine::TimerId;
use crate::mech::hook::{AirEvent, AirReport, ApHook, EgressEvent, Generated, Uplink};
use crate::mech::zhuge::{Hold, Stage};
use crate::packet::{Hdr, NodeId, Packet};
use crate::payload::Payload;
use crate::stats::DropReason;
use crate::time::SimTime;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// A packet in an AP egress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Admitted {
    pub flow: u32,
    /// Over 802.11: its first transmission began, so it has left `Q_v` (it may still be retried).
    pub left_driver: bool,
}

/// One mechanism's hook at one AP, and what the world keeps for it.
pub(crate) struct ApMech {
    /// The mechanism that installed the hook (`zhuge`, ...), for run-time commands.
    pub kind: String,
    pub ap_name: String,
    pub ap: NodeId,
    /// The stand-in last hop's downlink pipe, if the last hop is not 802.11.
    pub down_pipe: Option<u32>,
    pub hook: Box<dyn ApHook>,
    /// Packets in the egress now (admitted, not delivered or dropped), with their flow.
    pub admitted: BTreeMap<u64, Admitted>,
    /// Uplink packets held until their release time, and the ids released (not to be held twice).
    pub held: Hold<Packet>,
    pub released: BTreeSet<u64>,
    pub timer: Option<(TimerId, SimTime)>,
    /// Forecast at arrival of each monitored packet in the egress: (arrival, forecast ns).
    pub forecasts: BTreeMap<u64, (SimTime, u64)>,
    /// How far the forecasts were from the delays the monitored packets then saw.
    pub accuracy: crate::stats::ForecastErrors,
    pub consumed: u64,
    /// Client TWCC messages forwarded for RTT only.
    pub stripped: u64,
    pub held_count: u64,
    pub generated: u64,
}

/// Every AP hook of the world, and which serve each node and pipe (indices into `list`; the hooks of
/// one AP are contiguous, in installation order).
#[derive(Default)]
pub(crate) struct Mechs {
    pub list: Vec<ApMech>,
    /// Per node: the hooks of the AP it is.
    pub of_ap: Vec<Range<usize>>,
    /// Per node: the hooks of the AP whose station it is.
    pub of_station: Vec<Range<usize>>,
    /// Per pipe: the hooks whose stand-in downlink it is.
    pub of_pipe: Vec<Range<usize>>,
    /// The transmit events of the last medium call.
    pub air: AirReport,
}

impl Mechs {
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    fn get(v: &[Range<usize>], i: usize) -> Range<usize> {
        v.get(i).cloned().unwrap_or_default()
    }
}

impl ApMech {
    pub(crate) fn new(kind: String, ap_name: String, ap: NodeId, down_pipe: Option<u32>, hook: Box<dyn ApHook>) -> Self {
        ApMech {
            kind,
            ap_name,
            ap,
            down_pipe,
            hook,
            admitted: BTreeMap::new(),
            held: Hold::new(),
            released: BTreeSet::new(),
            timer: None,
            forecasts: BTreeMap::new(),
            accuracy: Default::default(),
            consumed: 0,
            stripped: 0,
            held_count: 0,
            generated: 0,
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        SimTime::earliest([self.hook.next_wakeup(), self.held.next_wakeup()])
    }

    pub(crate) fn stats(&self) -> serde_json::Value {
        let (kind, flows) = self.hook.stats();
        serde_json::json!({
            "ap": self.ap_name,
            "type": kind,
            "flows": flows,
            "uplink_consumed": self.consumed,
            "client_twcc_forwarded_for_rtt_only": self.stripped,
            "uplink_held": self.held_count,
            "generated": self.generated,
            "egress_packets_at_end": self.admitted.len(),
            "prediction_errors": self.accuracy.table(),
            // Every packet whose actual delay was under 64 ms, in one row (zhuge.md's accuracy claim).
            "prediction_errors_under_64ms": self.accuracy.under_64ms(),
        })
    }
}

impl World {
    /// The hooks at node `at` see a packet on its way to `hop`: an uplink packet from one of the AP's
    /// stations, or a downlink one. Returns `true` when a hook took it (held or consumed).
    pub(crate) fn mech_forward(&mut self, now: SimTime, at: NodeId, pkt: &mut Packet, hop: Hop) -> bool {
        let r = Mechs::get(&self.mechs.of_ap, at as usize);
        if r.is_empty() {
            return false;
        }
        if Mechs::get(&self.mechs.of_station, pkt.src as usize) == r {
            return self.mech_uplink(now, r, *pkt);
        }
        self.mech_downlink(now, r, pkt, hop);
        false
    }

    /// A packet at an AP heading down its last hop (hop `hop`), before it is queued.
    fn mech_downlink(&mut self, now: SimTime, r: Range<usize>, pkt: &mut Packet, hop: Hop) {
        for m in r {
            let mech = &mut self.mechs.list[m];
            let down = match hop {
                Hop::Pipe(p) => Some(p) == mech.down_pipe,
                Hop::Wifi(_) => mech.down_pipe.is_none(),
            };
            if !down {
                return;
            }
            if let Some(forecast) = mech.hook.on_downlink(now, pkt, &self.payloads) {
                mech.forecasts.insert(pkt.id, (now, forecast));
            }
            // Admitted now; a refusal comes back as a drop of the same packet at the same instant.
            mech.admitted.insert(pkt.id, Admitted { flow: pkt.flow, left_driver: false });
            let stage = if mech.down_pipe.is_some() { Stage::Qdisc } else { Stage::Driver };
            mech.hook.on_egress(now, EgressEvent::Enqueue { id: pkt.id, bytes: pkt.size, flow: pkt.flow, dst: pkt.dst, stage });
            self.mech_rearm(m);
        }
    }

    /// The stand-in last hop started serializing packet `pkt` (it moves to the "driver").
    pub(crate) fn mech_pipe_start(&mut self, now: SimTime, pipe: u32, pkt: &Packet) {
        for m in Mechs::get(&self.mechs.of_pipe, pipe as usize) {
            let mech = &mut self.mechs.list[m];
            if mech.admitted.contains_key(&pkt.id) {
                mech.hook.on_egress(now, EgressEvent::ToDriver { id: pkt.id, dst: pkt.dst });
            }
        }
    }

    /// The transmit events of the 802.11 medium's last call, to the hooks of the transmitting AP
    /// ([`ApHook::on_air`]); and the MPDUs whose attempts started: those of an AP egress leave `Q_v` at
    /// their first attempt, as the artifact's `WifiMacQueue` gives up an MPDU when it goes into an
    /// A-MPDU (retries are the MAC's business, not the queue's).
    pub(crate) fn drain_air_report(&mut self, now: SimTime) {
        if self.mechs.air.is_empty() {
            return;
        }
        let mut report = std::mem::take(&mut self.mechs.air);
        for ev in report.events() {
            let mpdus = report.mpdus(ev.mpdus());
            for m in Mechs::get(&self.mechs.of_ap, ev.node() as usize) {
                self.mechs.list[m].hook.on_air(now, ev, mpdus);
                self.mech_rearm(m);
            }
            if matches!(ev, AirEvent::AttemptStart { .. }) {
                for &(id, dst) in mpdus {
                    self.left_driver(now, id, dst);
                }
            }
        }
        report.clear();
        self.mechs.air = report;
    }

    /// MPDU `id` to `dst` started its first attempt over the air: it left the driver of the hooks that
    /// admitted it.
    fn left_driver(&mut self, now: SimTime, id: u64, dst: NodeId) {
        for m in Mechs::get(&self.mechs.of_station, dst as usize) {
            let mech = &mut self.mechs.list[m];
            if mech.down_pipe.is_some() {
                continue;
            }
            match mech.admitted.get_mut(&id) {
                Some(a) if !a.left_driver => a.left_driver = true,
                _ => continue,
            }
            mech.hook.on_egress(now, EgressEvent::Dequeue { id, dst });
        }
    }

    /// Packet `id` to `dst` left the egress of the hooks in `r` (serialized on the stand-in link, or
    /// delivered over the air).
    pub(crate) fn mech_departed(&mut self, now: SimTime, r: Range<usize>, id: u64, dst: NodeId) {
        for m in r {
            let mech = &mut self.mechs.list[m];
            let Some(a) = mech.admitted.remove(&id) else { continue };
            if !a.left_driver {
                mech.hook.on_egress(now, EgressEvent::Dequeue { id, dst });
            }
            if let Some((arrival, forecast)) = mech.forecasts.remove(&id) {
                mech.accuracy.push(now.saturating_since(arrival).as_ns(), forecast);
            }
            self.mech_rearm(m);
        }
    }

    /// The hooks of the AP that serves station `at`, over 802.11 (the medium delivered there).
    pub(crate) fn wifi_mechs_of_station(&self, at: NodeId) -> Range<usize> {
        let r = Mechs::get(&self.mechs.of_station, at as usize);
        match r.clone().next() {
            Some(m) if self.mechs.list[m].down_pipe.is_none() => r,
            _ => 0..0,
        }
    }

    /// The hooks whose stand-in downlink is `pipe`.
    pub(crate) fn mechs_of_pipe(&self, pipe: u32) -> Range<usize> {
        Mechs::get(&self.mechs.of_pipe, pipe as usize)
    }

    /// Packet `pkt` was dropped somewhere; if it was in an AP egress, its hooks learn it.
    pub(crate) fn mech_dropped(&mut self, now: SimTime, pkt: &Packet) {
        for m in 0..self.mechs.list.len() {
            let mech = &mut self.mechs.list[m];
            let Some(Admitted { flow, left_driver }) = mech.admitted.remove(&pkt.id) else { continue };
            mech.forecasts.remove(&pkt.id);
            mech.hook.on_egress(now, EgressEvent::Drop { id: pkt.id, dst: pkt.dst, flow, hdr: pkt.hdr, in_egress: !left_driver });
            self.mech_rearm(m);
        }
    }

    /// A downlink packet reached its station.
    pub(crate) fn mech_delivered(&mut self, now: SimTime, pkt: &Packet) {
        for m in Mechs::get(&self.mechs.of_station, pkt.dst as usize) {
            self.mechs.list[m].hook.on_delivered(now, pkt);
            self.mech_rearm(m);
        }
    }

    /// An uplink packet from a station at an AP with the hooks `r`. The first hook that does not
    /// forward it decides; a packet a hook held and released goes on to the hooks after that one.
    /// Returns `true` when a hook took it (held or consumed); the caller forwards it otherwise.
    fn mech_uplink(&mut self, now: SimTime, r: Range<usize>, pkt: Packet) -> bool {
        let mut first = r.start;
        for m in r.clone() {
            if self.mechs.list[m].released.remove(&pkt.id) {
                first = m + 1;
            }
        }
        for m in first..r.end {
            match self.mechs.list[m].hook.on_uplink(now, &pkt, &self.payloads) {
                Uplink::Forward => {}
                v => return self.mech_uplink_verdict(now, m, pkt, v),
            }
        }
        false
    }

    fn mech_uplink_verdict(&mut self, now: SimTime, m: usize, pkt: Packet, v: Uplink) -> bool {
        match v {
            Uplink::Forward => false,
            Uplink::StripCc => {
                if let Some(r) = self.payloads.rtcp_mut(pkt.id) {
                    r.for_cc = false;
                }
                self.mechs.list[m].stripped += 1;
                false
            }
            Uplink::Hold(at) if at <= now => false,
            Uplink::Hold(at) => {
                let mech = &mut self.mechs.list[m];
                mech.held.push(at, pkt);
                mech.held_count += 1;
                self.mech_rearm(m);
                true
            }
            Uplink::Consume | Uplink::Retransmit { .. } => {
                self.mechs.list[m].consumed += 1;
                self.log.drop(pkt.id, DropReason::Consumed);
                self.payloads.remove(pkt.id);
                if let Uplink::Retransmit { seq, len } = v {
                    // FastAck's local retransmission: the cached segment again, from the AP.
                    let ap = self.mechs.list[m].ap;
                    let hdr = Hdr::Tcp { seq, len, ack: 0, ts_echo: SimTime::ZERO, ecn: Default::default() };
                    let p = self.emit(now, pkt.flow, seq, len + crate::transport::tcp::HEADER_BYTES, (ap, pkt.src), hdr);
                    self.mechs.list[m].generated += 1;
                    self.arrive(now, ap, p);
                }
                true
            }
        }
    }

    /// The timer of hook `m` fired: it sends what it has due, and releases the packets it held.
    pub(crate) fn on_mech_timer(&mut self, now: SimTime, m: usize) {
        self.mechs.list[m].timer = None;
        let ap = self.mechs.list[m].ap;
        let mut out: Vec<Generated> = Vec::new();
        self.mechs.list[m].hook.poll(now, &mut out);
        for g in out {
            let sender = self.sources[g.flow as usize].src;
            let p = self.emit(now, g.flow, 0, g.size, (ap, sender), g.hdr);
            self.log.mark_reverse(p.id);
            if let Some(r) = g.rtcp {
                self.payloads.insert(p.id, Payload::Rtcp(r));
            }
            self.mechs.list[m].generated += 1;
            self.arrive(now, ap, p);
        }
        while let Some(p) = self.mechs.list[m].held.poll(now) {
            self.mechs.list[m].released.insert(p.id);
            self.arrive(now, ap, p);
        }
        self.mech_rearm(m);
    }

    /// A run-time command to the hook of mechanism `kind` at AP node `ap`.
    pub(crate) fn mech_command(&mut self, now: SimTime, ap: NodeId, kind: &str, set: &serde_json::Map<String, serde_json::Value>) -> Result<(), super::command::Refusal> {
        let Some(m) = Mechs::get(&self.mechs.of_ap, ap as usize).find(|&m| self.mechs.list[m].kind == kind) else {
            return Err((None, format!("no `{kind}` hook at this access point")));
        };
        self.mechs.list[m].hook.on_command(now, set).map_err(|(k, msg)| (Some(k), msg))?;
        self.mech_rearm(m);
        Ok(())
    }

    fn mech_rearm(&mut self, m: usize) {
        let mech = &mut self.mechs.list[m];
        let next = mech.next_wakeup();
        super::world::rearm(&mut self.q, &mut mech.timer, next, Event::Mech { ap: m as u32 });
    }
}
