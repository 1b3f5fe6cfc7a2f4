//! Zhuge, FastAck and ABC at an AP: their [`ApHook`]s and how each installs itself
//! ([`crate::mech::MechanismConfig`]'s `install`). The order of calls is the one the module docs
//! ([`super`]) give under "Wiring at an AP".

use super::{
    AbcMarker, AckDelayer, AckDelayerParams, AckVerdict, EgressObserver, EgressPacket, FastAck, FeedbackPath, FortuneTeller,
    FortuneTellerParams, LinkKind, RtpArrival, TwccRewriter, TwccRewriterParams,
};
use crate::app::rtc::{Rtcp, RtcpBody};
use crate::mech::config::ZhugeConfig;
use crate::mech::hook::{ApHook, EgressEvent, FlowInfo, Generated, Uplink};
use crate::packet::{Hdr, NodeId, Packet};
use crate::payload::Payloads;
use crate::rng::Rng;
use crate::time::SimTime;
use std::collections::{BTreeMap, BTreeSet};

/// Reports an egress event to an estimator that mirrors the egress.
fn observe(o: &mut dyn EgressObserver, now: SimTime, ev: EgressEvent, monitored_flow: Option<u32>) {
    match ev {
        EgressEvent::Enqueue { id, bytes, flow, stage, .. } => {
            o.on_enqueue(now, EgressPacket { id, bytes, monitored: monitored_flow == Some(flow) }, stage)
        }
        EgressEvent::ToDriver { id, .. } => o.on_to_driver(now, id),
        EgressEvent::Dequeue { id, .. } => o.on_dequeue(now, id),
        EgressEvent::Drop { id, in_egress: true, .. } => o.on_drop(now, id),
        EgressEvent::Drop { in_egress: false, .. } => {}
    }
}

fn event_dst(ev: &EgressEvent) -> NodeId {
    match *ev {
        EgressEvent::Enqueue { dst, .. } | EgressEvent::ToDriver { dst, .. } | EgressEvent::Dequeue { dst, .. } | EgressEvent::Drop { dst, .. } => dst,
    }
}

/// The flows of `flows` a mechanism serves: those named in `names` (default all), with the feedback
/// path their type gives (`None`: the mechanism does not serve that type).
pub(crate) fn managed<'a>(flows: &'a [FlowInfo], names: Option<&'a [String]>, path: impl Fn(&str) -> Option<FeedbackPath> + 'a) -> impl Iterator<Item = (&'a FlowInfo, FeedbackPath)> + 'a {
    flows.iter().filter(move |f| names.is_none_or(|n| n.contains(&f.name))).filter_map(move |f| path(f.kind).map(|p| (f, p)))
}

/// The path of a `tcp`/`tcp_video` flow (FastAck, ABC).
pub(crate) fn tcp_only(kind: &str) -> Option<FeedbackPath> {
    matches!(kind, "tcp" | "tcp_video").then_some(FeedbackPath::Tcp)
}

/// One flow managed by Zhuge.
struct ZhugeFlow {
    station: NodeId,
    ft: FortuneTeller,
    /// A twin of `ft` fed identically, whose forecasts are compared with what each packet then saw.
    shadow: FortuneTeller,
    feedback: ZhugeFeedback,
}

enum ZhugeFeedback {
    Tcp(AckDelayer),
    Rtp(TwccRewriter),
}

/// Zhuge at an AP: a Fortune Teller per managed flow and its Feedback Updater.
pub(crate) struct ZhugeHook {
    link: LinkKind,
    flows: BTreeMap<u32, ZhugeFlow>,
}

impl ZhugeHook {
    pub(crate) fn new(z: &ZhugeConfig, ap: &str, link: LinkKind, flows: &[FlowInfo], seed: u64) -> Self {
        // An `external` flow (real packets, emulation) is managed as TCP: its segments' headers are
        // read in the clear, so real ACKs are held like modelled ones (never rewritten); one that
        // declares RTP as RTP: its TWCC is rewritten.
        let path = |kind: &str| match kind {
            "rtc" | "external_rtp" => Some(FeedbackPath::Rtp),
            "external" => Some(FeedbackPath::Tcp),
            k => tcp_only(k),
        };
        let mut m = BTreeMap::new();
        for (f, path) in managed(flows, z.flows.as_deref(), path) {
            let preset = FortuneTellerParams::preset(z.profile, link, path);
            let ftp = match &z.fortune_teller {
                Some(o) => o.apply(preset),
                None => preset,
            };
            let feedback = match path {
                FeedbackPath::Tcp => {
                    let p = z.ack_delayer.clone().unwrap_or_else(|| AckDelayerParams::preset(z.profile));
                    ZhugeFeedback::Tcp(AckDelayer::new(&p, SimTime::ZERO, Rng::derive(seed, &format!("aps/{ap}/zhuge/{}", f.index))))
                }
                FeedbackPath::Rtp => ZhugeFeedback::Rtp(TwccRewriter::new(z.twcc.clone().unwrap_or_else(|| TwccRewriterParams::preset(z.profile)))),
            };
            let (ft, shadow) = (FortuneTeller::new(ftp.clone(), SimTime::ZERO), FortuneTeller::new(ftp, SimTime::ZERO));
            m.insert(f.index, ZhugeFlow { station: f.station, ft, shadow, feedback });
        }
        ZhugeHook { link, flows: m }
    }
}

impl ApHook for ZhugeHook {
    fn on_downlink(&mut self, now: SimTime, pkt: &mut Packet, payloads: &Payloads) -> Option<u64> {
        let zf = self.flows.get_mut(&pkt.flow)?;
        let forecast = zf.shadow.predict(now, 0).total.as_ns();
        match (&mut zf.feedback, pkt.hdr) {
            (ZhugeFeedback::Tcp(a), Hdr::Tcp { len, .. }) if len > 0 => {
                a.on_downlink_data(now, &mut zf.ft);
            }
            (ZhugeFeedback::Rtp(r), Hdr::Rtp { twcc, fec, .. }) => {
                let seq = payloads.rtp(pkt.id).and_then(|p| p.transport_seq).unwrap_or(twcc as u64);
                r.on_downlink_rtp(now, RtpArrival { seq, bytes: pkt.size, repair: fec }, &mut zf.ft);
            }
            _ => {}
        }
        Some(forecast)
    }

    /// Over 802.11 each station has its own queues at the AP, so a flow's estimators see the events of
    /// its station only; a stand-in last hop is one shared queue.
    fn on_egress(&mut self, now: SimTime, ev: EgressEvent) {
        let dst = event_dst(&ev);
        for (&fid, zf) in self.flows.iter_mut() {
            if self.link == LinkKind::P2p || zf.station == dst {
                observe(&mut zf.ft, now, ev, Some(fid));
                observe(&mut zf.shadow, now, ev, Some(fid));
            }
        }
        if let EgressEvent::Drop { flow, hdr: Hdr::Rtp { twcc, .. }, .. } = ev {
            if let Some(ZhugeFlow { feedback: ZhugeFeedback::Rtp(r), .. }) = self.flows.get_mut(&flow) {
                r.on_ap_drop(now, twcc as u64);
            }
        }
    }

    fn on_uplink(&mut self, now: SimTime, pkt: &Packet, payloads: &Payloads) -> Uplink {
        match (self.flows.get_mut(&pkt.flow), pkt.hdr) {
            (Some(ZhugeFlow { feedback: ZhugeFeedback::Tcp(a), .. }), Hdr::Tcp { len: 0, .. }) => Uplink::Hold(a.on_uplink_ack(now)),
            (Some(ZhugeFlow { feedback: ZhugeFeedback::Rtp(r), .. }), Hdr::Rtcp { .. }) => {
                let twcc = matches!(payloads.rtcp(pkt.id), Some(Rtcp { body: RtcpBody::Twcc(_), .. }));
                match r.filter_uplink_rtcp(twcc) {
                    super::UplinkVerdict::Forward => Uplink::Forward,
                    super::UplinkVerdict::Drop => Uplink::StripCc,
                }
            }
            _ => Uplink::Forward,
        }
    }

    /// Rewritten TWCC feedback of the RTP flows.
    fn poll(&mut self, now: SimTime, out: &mut Vec<Generated>) {
        for (&flow, zf) in self.flows.iter_mut() {
            if let ZhugeFeedback::Rtp(r) = &mut zf.feedback {
                for fb in r.poll_feedback(now, &mut zf.ft) {
                    let m = Rtcp { body: RtcpBody::Twcc(fb), created: now, for_cc: true, for_rtt: false };
                    out.push(Generated { flow, hdr: Hdr::Rtcp { report: 0 }, size: m.wire_bytes(), rtcp: Some(m) });
                }
            }
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.flows
            .values()
            .filter_map(|z| match &z.feedback {
                ZhugeFeedback::Rtp(r) => r.next_wakeup(),
                ZhugeFeedback::Tcp(_) => None,
            })
            .min()
    }

    fn stats(&self) -> (&'static str, Vec<serde_json::Value>) {
        let flows = self.flows.iter().map(|(f, z)| {
            let fb = match &z.feedback {
                ZhugeFeedback::Tcp(a) => serde_json::json!({ "ack_delayer": a.stats() }),
                ZhugeFeedback::Rtp(r) => serde_json::json!({ "twcc_rewriter": r.stats() }),
            };
            serde_json::json!({ "flow": f, "fortune_teller": z.ft.stats(), "feedback": fb })
        });
        ("zhuge", flows.collect())
    }
}

/// FastAck at an AP: one [`FastAck`] per TCP flow to its stations.
pub(crate) struct FastAckHook {
    flows: BTreeMap<u32, FastAck>,
}

impl FastAckHook {
    pub(crate) fn new(p: &super::FastAckParams, flows: &[FlowInfo]) -> Self {
        FastAckHook { flows: managed(flows, None, tcp_only).map(|(f, _)| (f.index, FastAck::new(p.clone()))).collect() }
    }
}

impl ApHook for FastAckHook {
    fn on_downlink(&mut self, now: SimTime, pkt: &mut Packet, _: &Payloads) -> Option<u64> {
        if let (Some(fa), Hdr::Tcp { seq, len, .. }) = (self.flows.get_mut(&pkt.flow), pkt.hdr) {
            if len > 0 {
                fa.on_downlink_data(now, seq, len, pkt.sent);
            }
        }
        None
    }

    fn on_delivered(&mut self, now: SimTime, pkt: &Packet) {
        if let (Some(fa), Hdr::Tcp { seq, len, .. }) = (self.flows.get_mut(&pkt.flow), pkt.hdr) {
            if len > 0 {
                fa.on_delivered(now, seq);
            }
        }
    }

    fn on_uplink(&mut self, now: SimTime, pkt: &Packet, _: &Payloads) -> Uplink {
        match (self.flows.get_mut(&pkt.flow), pkt.hdr) {
            (Some(fa), Hdr::Tcp { len: 0, ack, .. }) => match fa.on_receiver_ack(now, ack) {
                AckVerdict::Forward => Uplink::Forward,
                AckVerdict::Suppress => Uplink::Consume,
                AckVerdict::Retransmit { seq, len } => Uplink::Retransmit { seq, len },
            },
            _ => Uplink::Forward,
        }
    }

    /// The ACKs FastAck sends in the client's place.
    fn poll(&mut self, now: SimTime, out: &mut Vec<Generated>) {
        for (&flow, fa) in self.flows.iter_mut() {
            for a in fa.poll(now) {
                let hdr = Hdr::Tcp { seq: 0, len: 0, ack: a.ack, ts_echo: a.ts_echo, ecn: Default::default() };
                out.push(Generated { flow, hdr, size: crate::transport::tcp::HEADER_BYTES, rtcp: None });
            }
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.flows.values().filter_map(|f| f.next_wakeup()).min()
    }

    fn stats(&self) -> (&'static str, Vec<serde_json::Value>) {
        ("fastack", self.flows.iter().map(|(f, a)| serde_json::json!({ "flow": f, "fastack": a.stats() })).collect())
    }
}

/// ABC's router at an AP: one marker over the egress, marking the TCP flows to its stations.
pub(crate) struct AbcHook {
    marker: Box<AbcMarker>,
    flows: BTreeSet<u32>,
}

impl AbcHook {
    pub(crate) fn new(p: &super::AbcRouterParams, ap: &str, flows: &[FlowInfo], seed: u64) -> Self {
        let marker = Box::new(AbcMarker::new(p.clone(), SimTime::ZERO, Rng::derive(seed, &format!("aps/{ap}/abc"))));
        AbcHook { marker, flows: managed(flows, None, tcp_only).map(|(f, _)| f.index).collect() }
    }
}

impl ApHook for AbcHook {
    fn on_downlink(&mut self, now: SimTime, pkt: &mut Packet, _: &Payloads) -> Option<u64> {
        if let (true, Hdr::Tcp { len, ref mut ecn, .. }) = (self.flows.contains(&pkt.flow), &mut pkt.hdr) {
            if *len > 0 {
                *ecn = self.marker.mark(now);
            }
        }
        None
    }

    fn on_egress(&mut self, now: SimTime, ev: EgressEvent) {
        observe(self.marker.as_mut(), now, ev, None);
    }

    fn stats(&self) -> (&'static str, Vec<serde_json::Value>) {
        ("abc", vec![serde_json::json!({ "marker": self.marker.stats() })])
    }
}
