//! The flows' endpoints from a validated scenario: each flow's source and its metrics tracker.

use super::build::{mbps, millis, secs};
use super::endpoints::{FlowSource, RtcFlow, SourceKind, TcpFlow, TcpVideoApp};
use crate::app::UdpSource;
use crate::packet::NodeId;
use crate::rng::Rng;
use crate::scenario::{Flow, Scenario};
use crate::stats::FlowTracker;
use crate::time::SimTime;
use crate::units::BitRate;

/// Every flow's source and tracker, in scenario order; `id` numbers a node by name.
pub(super) fn flows(sc: &Scenario, seed: u64, id: impl Fn(&str) -> NodeId) -> (Vec<FlowSource>, Vec<FlowTracker>) {
    let end = secs(sc.duration_s);
    let measure_from = secs(sc.warmup_s);
    let mut sources = Vec::new();
    let mut trackers = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let c = f.common();
        let name = c.name.map(str::to_string).unwrap_or_else(|| format!("flow{i}"));
        let start = secs(c.start_s);
        let stop = c.stop_s.map(secs).unwrap_or(end).min(end);
        let (kind, packet_bytes) = source(f, &name, seed, (start, stop, measure_from));
        let echo = matches!(f, Flow::Ping(_));
        sources.push(FlowSource {
            echo,
            src: id(c.from),
            dst: id(c.to),
            dscp: c.dscp,
            packet_bytes,
            kind,
            rng: Rng::derive(seed, &format!("flows/{name}")),
            seq: 0,
        });
        let from = measure_from.max(start);
        let mut tracker = FlowTracker::new(name, f.kind(), c.from.to_string(), c.to.to_string(), from, stop.max(from));
        // Loss runs need one sequence space of packets; TCP retransmits byte ranges instead.
        tracker.loss_runs = !matches!(f, Flow::Tcp(_) | Flow::TcpVideo(_));
        tracker.rtt_is_latency = echo;
        trackers.push(tracker);
    }
    (sources, trackers)
}

/// Flow `f`'s source, active from `start` to `stop`, and its packet size; `name` names its RNG paths.
fn source(f: &Flow, name: &str, seed: u64, (start, stop, measure_from): (SimTime, SimTime, SimTime)) -> (SourceKind, u32) {
    match f {
        Flow::UdpCbr(u) => (SourceKind::Udp(UdpSource::new(mbps(u.rate_mbps), u.packet_bytes, false, start, stop)), u.packet_bytes),
        Flow::UdpPoisson(u) => (SourceKind::Udp(UdpSource::new(mbps(u.rate_mbps), u.packet_bytes, true, start, stop)), u.packet_bytes),
        Flow::Saturated(u) => (SourceKind::Saturated { start, stop, backlog: u.backlog }, u.packet_bytes),
        Flow::Tcp(u) => {
            let rng = Rng::derive(seed, &format!("flows/{name}/cc"));
            let sender = crate::transport::tcp::TcpSender::new(&u.tcp, start, rng, u.bytes).expect("validated");
            let receiver = crate::transport::tcp::TcpReceiver::new(&u.tcp);
            let t = TcpFlow { sender, receiver, start, stop, timer: None, ecn_echo: Default::default(), video: None };
            (SourceKind::Tcp(Box::new(t)), u.tcp.mss)
        }
        Flow::TcpVideo(u) => {
            let rng = Rng::derive(seed, &format!("flows/{name}/cc"));
            let sender = crate::transport::tcp::TcpSender::new(&u.tcp, start, rng, Some(0)).expect("validated");
            let receiver = crate::transport::tcp::TcpReceiver::new(&u.tcp);
            let video = TcpVideoApp {
                sender: crate::app::tcp_video::TcpVideoSender::new(&u.video, start, stop),
                receiver: crate::app::tcp_video::TcpVideoReceiver::new(measure_from.max(start)),
                deadline: millis(u.deadline_ms),
            };
            let t = TcpFlow { sender, receiver, start, stop, timer: None, ecn_echo: Default::default(), video: Some(Box::new(video)) };
            (SourceKind::Tcp(Box::new(t)), u.tcp.mss)
        }
        Flow::Rtc(u) => {
            let rng = Rng::derive(seed, &format!("flows/{name}/video"));
            let session = crate::app::rtc::RtcSession::new(&u.rtc, start, stop, measure_from.max(start), rng);
            let r = RtcFlow { session, deadline: millis(u.deadline_ms), timer: None };
            (SourceKind::Rtc(Box::new(r)), u.rtc.video.max_payload_bytes + u.rtc.video.overhead_bytes)
        }
        Flow::External(_) => (SourceKind::External, 0),
        Flow::Ping(u) => {
            let rate = BitRate::from_mbps_f64(u.packet_bytes as f64 * 8.0 / (u.interval_ms * 1e-3) * 1e-6).expect("validated");
            (SourceKind::Udp(UdpSource::new(rate, u.packet_bytes, false, start, stop)), u.packet_bytes)
        }
    }
}
