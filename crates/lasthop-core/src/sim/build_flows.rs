//! The flows' hosts from a validated scenario: each flow's host and its metrics tracker.

use super::build::{mbps, millis, secs};
use super::hosts::FlowSource;
use crate::app::UdpSource;
use crate::host::{external::ExternalHost, rtc::RtcHost, saturated::SaturatedHost, tcp::{TcpHost, TcpVideoApp}, udp::UdpHost, Host};
use crate::packet::NodeId;
use crate::rng::Rng;
use crate::scenario::{Flow, Scenario};
use crate::stats::FlowTracker;
use crate::time::SimTime;
use crate::units::BitRate;

/// Every flow and its tracker, in scenario order; `id` numbers a node by name.
pub(super) fn flows(sc: &Scenario, seed: u64, id: impl Fn(&str) -> NodeId) -> (Vec<FlowSource>, Vec<FlowTracker>) {
    let end = secs(sc.duration_s);
    let measure_from = secs(sc.warmup_s);
    let mut sources = Vec::new();
    let mut trackers = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let c = f.common();
        let name = sc.flow_name(i);
        let start = secs(c.start_s);
        let stop = c.stop_s.map(secs).unwrap_or(end).min(end);
        let (src, dst) = (id(c.from), id(c.to));
        let host = host(f, &name, seed, (start, stop, measure_from), dst);
        sources.push(FlowSource { src, dst, dscp: c.dscp, external: matches!(f, Flow::External(_)), host: Some(host) });
        let from = measure_from.max(start);
        let mut tracker = FlowTracker::new(name, f.kind(), c.from.to_string(), c.to.to_string(), from, stop.max(from));
        // Loss runs need one sequence space of packets; TCP retransmits byte ranges instead.
        tracker.loss_runs = !matches!(f, Flow::Tcp(_) | Flow::TcpVideo(_));
        tracker.rtt_is_latency = matches!(f, Flow::Ping(_));
        trackers.push(tracker);
    }
    (sources, trackers)
}

/// Flow `f`'s host, active from `start` to `stop`; `name` names its RNG paths, `to` is its `to` node.
fn host(f: &Flow, name: &str, seed: u64, (start, stop, measure_from): (SimTime, SimTime, SimTime), to: NodeId) -> Box<dyn Host> {
    let rng = || Rng::derive(seed, &format!("flows/{name}"));
    match f {
        Flow::UdpCbr(u) => Box::new(UdpHost::new(UdpSource::new(mbps(u.rate_mbps), u.packet_bytes, false, start, stop), rng(), false)),
        Flow::UdpPoisson(u) => Box::new(UdpHost::new(UdpSource::new(mbps(u.rate_mbps), u.packet_bytes, true, start, stop), rng(), false)),
        Flow::Ping(u) => {
            let rate = BitRate::from_mbps_f64(u.packet_bytes as f64 * 8.0 / (u.interval_ms * 1e-3) * 1e-6).expect("validated");
            Box::new(UdpHost::new(UdpSource::new(rate, u.packet_bytes, false, start, stop), rng(), true))
        }
        Flow::Saturated(u) => Box::new(SaturatedHost::new(start, stop, u.backlog, u.packet_bytes)),
        Flow::Tcp(u) => {
            let cc = Rng::derive(seed, &format!("flows/{name}/cc"));
            let sender = crate::transport::tcp::TcpSender::new(&u.tcp, start, cc, u.bytes).expect("validated");
            Box::new(TcpHost::new(sender, crate::transport::tcp::TcpReceiver::new(&u.tcp), (start, stop), None))
        }
        Flow::TcpVideo(u) => {
            let cc = Rng::derive(seed, &format!("flows/{name}/cc"));
            let sender = crate::transport::tcp::TcpSender::new(&u.tcp, start, cc, Some(0)).expect("validated");
            let video = TcpVideoApp {
                sender: crate::app::tcp_video::TcpVideoSender::new(&u.video, start, stop, measure_from.max(start)),
                receiver: crate::app::tcp_video::TcpVideoReceiver::new(measure_from.max(start)),
                deadline: millis(u.deadline_ms),
            };
            Box::new(TcpHost::new(sender, crate::transport::tcp::TcpReceiver::new(&u.tcp), (start, stop), Some(video)))
        }
        Flow::Rtc(u) => {
            let video = Rng::derive(seed, &format!("flows/{name}/video"));
            let session = crate::app::rtc::RtcSession::new(&u.rtc, start, stop, measure_from.max(start), video);
            Box::new(RtcHost::new(session, millis(u.deadline_ms)))
        }
        Flow::External(_) => Box::new(ExternalHost::new(to)),
    }
}
