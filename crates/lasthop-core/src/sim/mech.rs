//! AP mechanisms in the event loop: where the world calls Zhuge, FastAck and ABC (`mech::zhuge`).
//!
//! An AP with a `mechanism` sees four kinds of events, in this order for a downlink packet:
//! 1. [`World::mech_downlink`]: the packet reached the AP on its way to a station, before it is queued
//!    (the Fortune Teller forecasts with the bytes already ahead of it; ABC marks; FastAck records);
//! 2. the egress events of the AP's last-hop queue, reported to every estimator: admitted
//!    ([`World::mech_enqueued`]), moved to the "driver" (the stand-in pipe starts serializing it),
//!    departed (the pipe finished it, or the 802.11 MAC delivered it), dropped;
//! 3. for an uplink packet from a station, [`World::mech_uplink`]: forward, hold until a release time
//!    (Zhuge's delayed ACKs, in order), consume (ACKs FastAck already sent), or forward the client's
//!    TWCC of a Zhuge flow for RTT samples only (its rate feedback is the AP's now; see
//!    [`crate::app::rtc::Rtcp`]);
//! 4. the mechanism's own timer ([`World::on_mech_timer`]): rewritten TWCC feedback, FastAck's ACKs,
//!    held ACKs whose time has come.
//!
//! Egress of a stand-in last hop (wired or capacity trace): `Q_d` is the pipe's queue, `Q_v` the packet
//! being serialized (a one-packet driver queue, as the Zhuge artifact sets up). Over 802.11 the AP's
//! transmit path up to the air is `Q_v` (one per station: mac80211 keeps a txq per station and TID),
//! and a packet leaves it when its first transmission attempt starts, as an MPDU leaves ns-3's
//! `WifiMacQueue` when it goes into an A-MPDU; the prediction accuracy is still measured to delivery.

use super::world::{Event, Hop, World};
use crate::app::rtc::{Rtcp, RtcpBody};
use crate::engine::TimerId;
use crate::mech::zhuge::{
    AbcMarker, AckDelayer, AckDelayerParams, AckVerdict, EgressObserver, EgressPacket, FastAck, FeedbackPath,
    FortuneTeller, FortuneTellerParams, Hold, LinkKind, RtpArrival, Stage, TwccRewriter, TwccRewriterParams,
};
use crate::mech::MechanismConfig;
use crate::packet::{Hdr, NodeId, Packet};
use crate::rng::Rng;
use crate::stats::DropReason;
use crate::time::SimTime;
use std::collections::{BTreeMap, BTreeSet};

/// One flow managed by Zhuge.
pub(crate) struct ZhugeFlow {
    pub station: NodeId,
    pub ft: FortuneTeller,
    /// A twin of `ft` fed identically, whose forecasts are compared with what each packet then saw.
    pub shadow: FortuneTeller,
    pub feedback: ZhugeFeedback,
}

pub(crate) enum ZhugeFeedback {
    Tcp(AckDelayer),
    Rtp(TwccRewriter),
}

pub(crate) enum MechState {
    Zhuge { flows: BTreeMap<u32, ZhugeFlow> },
    FastAck { flows: BTreeMap<u32, FastAck> },
    Abc { marker: Box<AbcMarker>, flows: BTreeSet<u32> },
}

/// A packet in an AP egress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Admitted {
    pub flow: u32,
    /// Over 802.11: its first transmission began, so it has left `Q_v` (it may still be retried).
    pub left_driver: bool,
}

/// A mechanism at one AP.
pub(crate) struct ApMech {
    pub name: String,
    pub ap: NodeId,
    /// The stand-in last hop's downlink pipe, if the last hop is not 802.11.
    pub down_pipe: Option<u32>,
    pub link: LinkKind,
    pub state: MechState,
    /// Packets in the egress now (admitted, not delivered or dropped), with their flow.
    pub admitted: BTreeMap<u64, Admitted>,
    /// Uplink packets held until their release time, and the ids released (not to be held twice).
    pub held: Hold<Packet>,
    pub released: BTreeSet<u64>,
    pub timer: Option<(TimerId, SimTime)>,
    /// Forecast at arrival of each monitored packet in the egress: (arrival, forecast ns).
    pub forecasts: BTreeMap<u64, (SimTime, u64)>,
    /// (actual, forecast) delay of every monitored packet that departed, ns.
    pub accuracy: Vec<(u64, u64)>,
    pub consumed: u64,
    /// Client TWCC messages forwarded for RTT only.
    pub stripped: u64,
    pub held_count: u64,
    pub generated: u64,
}

impl ApMech {
    /// Builds the mechanism of AP `ap`, managing `flows` = (flow index, station, feedback path).
    pub(crate) fn new(cfg: &MechanismConfig, name: String, ap: NodeId, down_pipe: Option<u32>, flows: &[(u32, NodeId, FeedbackPath)], seed: u64) -> Self {
        let link = if down_pipe.is_some() { LinkKind::P2p } else { LinkKind::Wifi };
        let state = match cfg {
            MechanismConfig::Zhuge(z) => {
                let mut m = BTreeMap::new();
                for &(f, station, path) in flows {
                    let preset = FortuneTellerParams::preset(z.profile, link, path);
                    let ftp = match &z.fortune_teller {
                        Some(o) => o.apply(preset),
                        None => preset,
                    };
                    let feedback = match path {
                        FeedbackPath::Tcp => {
                            let p = z.ack_delayer.clone().unwrap_or_else(|| AckDelayerParams::preset(z.profile));
                            ZhugeFeedback::Tcp(AckDelayer::new(&p, SimTime::ZERO, Rng::derive(seed, &format!("aps/{name}/zhuge/{f}"))))
                        }
                        FeedbackPath::Rtp => ZhugeFeedback::Rtp(TwccRewriter::new(z.twcc.clone().unwrap_or_else(|| TwccRewriterParams::preset(z.profile)))),
                    };
                    m.insert(f, ZhugeFlow { station, ft: FortuneTeller::new(ftp.clone(), SimTime::ZERO), shadow: FortuneTeller::new(ftp, SimTime::ZERO), feedback });
                }
                MechState::Zhuge { flows: m }
            }
            MechanismConfig::Fastack(p) => MechState::FastAck { flows: flows.iter().map(|&(f, _, _)| (f, FastAck::new(p.clone()))).collect() },
            MechanismConfig::Law(_) => unreachable!("Law is a transmit path, built with the 802.11 AP"),
            MechanismConfig::Abc(p) => MechState::Abc {
                marker: Box::new(AbcMarker::new(p.clone(), SimTime::ZERO, Rng::derive(seed, &format!("aps/{name}/abc")))),
                flows: flows.iter().map(|f| f.0).collect(),
            },
        };
        ApMech {
            name,
            ap,
            down_pipe,
            link,
            state,
            admitted: BTreeMap::new(),
            held: Hold::new(),
            released: BTreeSet::new(),
            timer: None,
            forecasts: BTreeMap::new(),
            accuracy: Vec::new(),
            consumed: 0,
            stripped: 0,
            held_count: 0,
            generated: 0,
        }
    }

    /// Reports an egress event for a packet to `dst` to every estimator that observes it: over 802.11
    /// each station has its own queues, a stand-in last hop is one shared queue. `f` gets the
    /// observer, whether it is a flow's Fortune Teller, and that flow.
    fn egress(&mut self, dst: NodeId, mut f: impl FnMut(&mut dyn EgressObserver, bool, u32)) {
        let link = self.link;
        match &mut self.state {
            MechState::Zhuge { flows } => {
                for (&fid, zf) in flows.iter_mut() {
                    if link == LinkKind::P2p || zf.station == dst {
                        f(&mut zf.ft, true, fid);
                        f(&mut zf.shadow, true, fid);
                    }
                }
            }
            MechState::Abc { marker, .. } => f(marker.as_mut(), false, u32::MAX),
            MechState::FastAck { .. } => {}
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        let own = match &self.state {
            MechState::Zhuge { flows } => flows
                .values()
                .filter_map(|z| match &z.feedback {
                    ZhugeFeedback::Rtp(r) => r.next_wakeup(),
                    ZhugeFeedback::Tcp(_) => None,
                })
                .min(),
            MechState::FastAck { flows } => flows.values().filter_map(|f| f.next_wakeup()).min(),
            MechState::Abc { .. } => None,
        };
        [own, self.held.next_wakeup()].into_iter().flatten().min()
    }

    /// Prediction errors by actual-delay bucket, for `summary.json`.
    pub(crate) fn accuracy_table(&self) -> Vec<serde_json::Value> {
        const EDGES_MS: [f64; 10] = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, f64::INFINITY];
        EDGES_MS.windows(2).filter_map(|w| self.accuracy_row(w[0], w[1])).collect()
    }

    /// The errors of the packets whose actual delay was in `[from_ms, to_ms)`, if any.
    fn accuracy_row(&self, from_ms: f64, to_ms: f64) -> Option<serde_json::Value> {
        let mut errs: Vec<f64> = self
            .accuracy
            .iter()
            .filter(|(a, _)| (from_ms..to_ms).contains(&(*a as f64 * 1e-6)))
            .map(|&(a, p)| (p as f64 - a as f64) * 1e-6)
            .collect();
        if errs.is_empty() {
            return None;
        }
        let mean = errs.iter().sum::<f64>() / errs.len() as f64;
        let mut abs: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
        abs.sort_by(f64::total_cmp);
        errs.sort_by(f64::total_cmp);
        let q = |v: &[f64], p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(serde_json::json!({
            "actual_ms_from": from_ms,
            "actual_ms_to": if to_ms.is_finite() { serde_json::json!(to_ms) } else { serde_json::Value::Null },
            "packets": abs.len(),
            "median_abs_error_ms": q(&abs, 0.5),
            "p90_abs_error_ms": q(&abs, 0.9),
            "mean_error_ms": mean,
        }))
    }

    pub(crate) fn stats(&self) -> serde_json::Value {
        let (kind, flows) = match &self.state {
            MechState::Zhuge { flows } => (
                "zhuge",
                flows
                    .iter()
                    .map(|(f, z)| {
                        let fb = match &z.feedback {
                            ZhugeFeedback::Tcp(a) => serde_json::json!({ "ack_delayer": a.stats() }),
                            ZhugeFeedback::Rtp(r) => serde_json::json!({ "twcc_rewriter": r.stats() }),
                        };
                        serde_json::json!({ "flow": f, "fortune_teller": z.ft.stats(), "feedback": fb })
                    })
                    .collect::<Vec<_>>(),
            ),
            MechState::FastAck { flows } => ("fastack", flows.iter().map(|(f, a)| serde_json::json!({ "flow": f, "fastack": a.stats() })).collect()),
            MechState::Abc { marker, .. } => ("abc", vec![serde_json::json!({ "marker": marker.stats() })]),
        };
        serde_json::json!({
            "ap": self.name,
            "type": kind,
            "flows": flows,
            "uplink_consumed": self.consumed,
            "client_twcc_forwarded_for_rtt_only": self.stripped,
            "uplink_held": self.held_count,
            "generated": self.generated,
            "egress_packets_at_end": self.admitted.len(),
            "prediction_errors": self.accuracy_table(),
            // Every packet whose actual delay was under 64 ms, in one row (zhuge.md's accuracy claim).
            "prediction_errors_under_64ms": self.accuracy_row(0.0, 64.0),
        })
    }
}

/// What to do with an uplink packet at the AP.
enum Uplink {
    Forward,
    Hold(SimTime),
    Consume,
    /// Forward the client's TWCC for RTT samples only: its rate feedback is replaced by the AP's.
    StripCc,
}

impl World {
    /// The mechanism of AP node `at`, if any.
    pub(crate) fn mech_at(&self, at: NodeId) -> Option<usize> {
        self.mech_of_node.get(at as usize).copied().flatten()
    }

    /// A packet at AP `m` heading down its last hop (hop `hop`), before it is queued.
    pub(crate) fn mech_downlink(&mut self, now: SimTime, m: usize, pkt: &mut Packet, hop: Hop) {
        let mech = &mut self.mechs[m];
        let down = match hop {
            Hop::Pipe(p) => Some(p) == mech.down_pipe,
            Hop::Wifi(_) => mech.down_pipe.is_none(),
        };
        if !down {
            return;
        }
        let flow = pkt.flow;
        match &mut mech.state {
            MechState::Zhuge { flows } => {
                if let Some(zf) = flows.get_mut(&flow) {
                    let p = zf.shadow.predict(now, 0);
                    mech.forecasts.insert(pkt.id, (now, p.total.as_ns()));
                    match (&mut zf.feedback, pkt.hdr) {
                        (ZhugeFeedback::Tcp(a), Hdr::Tcp { len, .. }) if len > 0 => {
                            a.on_downlink_data(now, &mut zf.ft);
                        }
                        (ZhugeFeedback::Rtp(r), Hdr::Rtp { twcc, fec, .. }) => {
                            let seq = self.payloads.rtp(pkt.id).and_then(|p| p.transport_seq).unwrap_or(twcc as u64);
                            r.on_downlink_rtp(now, RtpArrival { seq, bytes: pkt.size, repair: fec }, &mut zf.ft);
                        }
                        _ => {}
                    }
                }
            }
            MechState::FastAck { flows } => {
                if let (Some(fa), Hdr::Tcp { seq, len, .. }) = (flows.get_mut(&flow), pkt.hdr) {
                    if len > 0 {
                        fa.on_downlink_data(now, seq, len, pkt.sent);
                    }
                }
            }
            MechState::Abc { marker, flows } => {
                if let (true, Hdr::Tcp { len, ref mut ecn, .. }) = (flows.contains(&flow), &mut pkt.hdr) {
                    if *len > 0 {
                        *ecn = marker.mark(now);
                    }
                }
            }
        }
        // Admitted now; a refusal comes back as a drop of the same packet at the same instant.
        mech.admitted.insert(pkt.id, Admitted { flow, left_driver: false });
        let (id, bytes, dst) = (pkt.id, pkt.size, pkt.dst);
        let stage = if mech.down_pipe.is_some() { Stage::Qdisc } else { Stage::Driver };
        mech.egress(dst, |o, monitored_flow, fid| o.on_enqueue(now, EgressPacket { id, bytes, monitored: monitored_flow && fid == flow }, stage));
        self.mech_rearm(m);
    }

    /// The stand-in last hop started serializing packet `pkt` (it moves to the "driver").
    pub(crate) fn mech_pipe_start(&mut self, now: SimTime, pipe: u32, pkt: &Packet) {
        let Some(m) = self.mech_of_pipe.get(pipe as usize).copied().flatten() else { return };
        let mech = &mut self.mechs[m];
        if mech.admitted.contains_key(&pkt.id) {
            mech.egress(pkt.dst, |o, _, _| o.on_to_driver(now, pkt.id));
        }
    }

    /// The MPDUs the 802.11 medium started to send during its last call: those of a mechanism's AP
    /// egress leave `Q_v` at their first attempt, as the artifact's `WifiMacQueue` gives up an MPDU
    /// when it goes into an A-MPDU (retries are the MAC's business, not the queue's).
    pub(crate) fn drain_air_started(&mut self, now: SimTime) {
        if self.air_started.is_empty() {
            return;
        }
        let mut started = std::mem::take(&mut self.air_started);
        for &(id, dst) in &started {
            let Some(&Some(m)) = self.mech_of_station.get(dst as usize) else { continue };
            let mech = &mut self.mechs[m];
            if mech.down_pipe.is_some() {
                continue;
            }
            match mech.admitted.get_mut(&id) {
                Some(a) if !a.left_driver => a.left_driver = true,
                _ => continue,
            }
            mech.egress(dst, |o, _, _| o.on_dequeue(now, id));
        }
        started.clear();
        self.air_started = started;
    }

    /// Packet `id` to `dst` left AP `m`'s egress (serialized on the stand-in link, or delivered over
    /// the air).
    pub(crate) fn mech_departed(&mut self, now: SimTime, m: usize, id: u64, dst: NodeId) {
        let mech = &mut self.mechs[m];
        let Some(a) = mech.admitted.remove(&id) else { return };
        if !a.left_driver {
            mech.egress(dst, |o, _, _| o.on_dequeue(now, id));
        }
        if let Some((arrival, forecast)) = mech.forecasts.remove(&id) {
            mech.accuracy.push((now.saturating_since(arrival).as_ns(), forecast));
        }
        self.mech_rearm(m);
    }

    /// Packet `pkt` was dropped somewhere; if it was in an AP egress, its estimators learn it.
    pub(crate) fn mech_dropped(&mut self, now: SimTime, pkt: &Packet) {
        for m in 0..self.mechs.len() {
            let mech = &mut self.mechs[m];
            let Some(Admitted { flow, left_driver }) = mech.admitted.remove(&pkt.id) else { continue };
            mech.forecasts.remove(&pkt.id);
            if !left_driver {
                mech.egress(pkt.dst, |o, _, _| o.on_drop(now, pkt.id));
            }
            if let (MechState::Zhuge { flows }, Hdr::Rtp { twcc, .. }) = (&mut mech.state, pkt.hdr) {
                if let Some(ZhugeFlow { feedback: ZhugeFeedback::Rtp(r), .. }) = flows.get_mut(&flow) {
                    r.on_ap_drop(now, twcc as u64);
                }
            }
            self.mech_rearm(m);
        }
    }

    /// A data packet reached its station: FastAck learns the last hop delivered it.
    pub(crate) fn mech_delivered(&mut self, now: SimTime, pkt: &Packet) {
        let Some(&Some(m)) = self.mech_of_station.get(pkt.dst as usize) else { return };
        if let (MechState::FastAck { flows }, Hdr::Tcp { seq, len, .. }) = (&mut self.mechs[m].state, pkt.hdr) {
            if let Some(fa) = flows.get_mut(&pkt.flow) {
                if len > 0 {
                    fa.on_delivered(now, seq);
                    self.mech_rearm(m);
                }
            }
        }
    }

    /// An uplink packet from a station at AP `m`. Returns `true` when the mechanism took it (held or
    /// consumed); the caller forwards it otherwise.
    pub(crate) fn mech_uplink(&mut self, now: SimTime, m: usize, pkt: Packet) -> bool {
        if self.mechs[m].released.remove(&pkt.id) {
            return false;
        }
        let verdict = {
            let mech = &mut self.mechs[m];
            match &mut mech.state {
                MechState::Zhuge { flows } => match (flows.get_mut(&pkt.flow), pkt.hdr) {
                    (Some(ZhugeFlow { feedback: ZhugeFeedback::Tcp(a), .. }), Hdr::Tcp { len: 0, .. }) => Uplink::Hold(a.on_uplink_ack(now)),
                    (Some(ZhugeFlow { feedback: ZhugeFeedback::Rtp(r), .. }), Hdr::Rtcp { .. }) => {
                        let twcc = matches!(self.payloads.rtcp(pkt.id), Some(Rtcp { body: RtcpBody::Twcc(_), .. }));
                        match r.filter_uplink_rtcp(twcc) {
                            crate::mech::zhuge::UplinkVerdict::Forward => Uplink::Forward,
                            crate::mech::zhuge::UplinkVerdict::Drop => Uplink::StripCc,
                        }
                    }
                    _ => Uplink::Forward,
                },
                MechState::FastAck { flows } => match (flows.get_mut(&pkt.flow), pkt.hdr) {
                    (Some(fa), Hdr::Tcp { len: 0, ack, .. }) => match fa.on_receiver_ack(now, ack) {
                        AckVerdict::Forward => Uplink::Forward,
                        AckVerdict::Suppress => Uplink::Consume,
                        AckVerdict::Retransmit { seq, len } => {
                            let hdr = Hdr::Tcp { seq, len, ack: 0, ts_echo: SimTime::ZERO, ecn: Default::default() };
                            self.pending_local.push((m, pkt.flow, seq, len, hdr, pkt.src));
                            Uplink::Consume
                        }
                    },
                    _ => Uplink::Forward,
                },
                MechState::Abc { .. } => Uplink::Forward,
            }
        };
        match verdict {
            Uplink::Forward => false,
            Uplink::StripCc => {
                if let Some(r) = self.payloads.rtcp_mut(pkt.id) {
                    r.for_cc = false;
                }
                self.mechs[m].stripped += 1;
                false
            }
            Uplink::Hold(at) if at <= now => false,
            Uplink::Hold(at) => {
                let mech = &mut self.mechs[m];
                mech.held.push(at, pkt);
                mech.held_count += 1;
                self.mech_rearm(m);
                true
            }
            Uplink::Consume => {
                self.mechs[m].consumed += 1;
                self.log.drop(pkt.id, DropReason::Consumed);
                self.payloads.remove(pkt.id);
                let local: Vec<_> = std::mem::take(&mut self.pending_local);
                for (m, flow, seq, len, hdr, station) in local {
                    // FastAck's local retransmission: the cached segment again, from the AP.
                    let ap = self.mechs[m].ap;
                    let p = self.emit(now, flow, seq, len + crate::transport::tcp::HEADER_BYTES, (ap, station), hdr);
                    self.mechs[m].generated += 1;
                    self.arrive(now, ap, p);
                }
                true
            }
        }
    }

    /// The mechanism timer of AP `m` fired.
    pub(crate) fn on_mech_timer(&mut self, now: SimTime, m: usize) {
        self.mechs[m].timer = None;
        let ap = self.mechs[m].ap;
        // Rewritten TWCC feedback and FastAck's ACKs, from the AP to the flows' senders.
        let mut out: Vec<(u32, Hdr, u32, Option<Rtcp>)> = Vec::new();
        match &mut self.mechs[m].state {
            MechState::Zhuge { flows } => {
                for (&f, zf) in flows.iter_mut() {
                    if let ZhugeFeedback::Rtp(r) = &mut zf.feedback {
                        for fb in r.poll_feedback(now, &mut zf.ft) {
                            let m = Rtcp { body: RtcpBody::Twcc(fb), created: now, for_cc: true, for_rtt: false };
                            out.push((f, Hdr::Rtcp { report: 0 }, m.wire_bytes(), Some(m)));
                        }
                    }
                }
            }
            MechState::FastAck { flows } => {
                for (&f, fa) in flows.iter_mut() {
                    for a in fa.poll(now) {
                        out.push((f, Hdr::Tcp { seq: 0, len: 0, ack: a.ack, ts_echo: a.ts_echo, ecn: Default::default() }, crate::transport::tcp::HEADER_BYTES, None));
                    }
                }
            }
            MechState::Abc { .. } => {}
        }
        for (flow, hdr, size, rtcp) in out {
            let sender = self.sources[flow as usize].src;
            let p = self.emit(now, flow, 0, size, (ap, sender), hdr);
            self.log.mark_reverse(p.id);
            if let Some(r) = rtcp {
                self.payloads.insert(p.id, super::payload::Payload::Rtcp(r));
            }
            self.mechs[m].generated += 1;
            self.arrive(now, ap, p);
        }
        while let Some(p) = self.mechs[m].held.poll(now) {
            self.mechs[m].released.insert(p.id);
            self.arrive(now, ap, p);
        }
        self.mech_rearm(m);
    }

    pub(crate) fn mech_rearm(&mut self, m: usize) {
        let mech = &mut self.mechs[m];
        let next = mech.next_wakeup();
        super::world::rearm(&mut self.q, &mut mech.timer, next, Event::Mech { ap: m as u32 });
    }
}

/// The flows a mechanism at AP `ap_idx` manages: (flow index, station node, feedback path).
pub(crate) fn managed_flows(sc: &crate::scenario::Scenario, cfg: &MechanismConfig, ap_idx: usize, node: impl Fn(&str) -> NodeId) -> Vec<(u32, NodeId, FeedbackPath)> {
    use crate::scenario::Flow;
    let mut out = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let c = f.common();
        let Some(st) = sc.stations.iter().find(|s| s.name == c.to) else { continue };
        if sc.ap_of(st) != ap_idx {
            continue;
        }
        let name = c.name.map(str::to_string).unwrap_or_else(|| format!("flow{i}"));
        if let Some(names) = cfg.flows() {
            if !names.contains(&name) {
                continue;
            }
        }
        let path = match (f, cfg) {
            (Flow::Rtc(_), MechanismConfig::Zhuge(_)) => FeedbackPath::Rtp,
            (Flow::Tcp(_) | Flow::TcpVideo(_), _) => FeedbackPath::Tcp,
            _ => continue,
        };
        out.push((i as u32, node(c.to), path));
    }
    out
}
