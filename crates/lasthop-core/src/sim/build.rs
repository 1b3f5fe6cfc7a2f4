//! Builds a [`World`] from a validated scenario.

use super::topology::{self, NodeRole};
use super::endpoints::{FlowSource, RtcFlow, SourceKind, TcpFlow, TcpVideoApp};
use super::world::{Hop, World};
use crate::channel::ChannelModel;
use crate::mac::config::{fixed_txvector, BssParams};
use crate::mac::medium::{LinkSpec, Medium, NodeSpec};
use crate::app::UdpSource;
use crate::engine::EventQueue;
use crate::link::{Pipe, PipeTarget, Server};
use crate::packet::NodeId;
use crate::queue::AnyQueue;
use crate::rng::Rng;
use crate::scenario::{Flow, LastHop, QueueConfig, Scenario};
use crate::stats::{FlowTracker, PacketLog};
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;

pub(crate) struct Built;

/// The two pipes of a non-802.11 last hop: a shared downlink from the AP (drained by `down`) and a
/// shared uplink to it at rate `up`, each with its own copy of `queue`. Returns (down, up) indices.
#[allow(clippy::too_many_arguments)]
fn stand_in_pipes(pipes: &mut Vec<Pipe>, ap: &str, ap_id: NodeId, down: Server, up: BitRate, delay: SimDuration, queue: &QueueConfig, seed: u64) -> (u32, u32) {
    let d = pipes.len() as u32;
    let name = format!("{ap}->stations");
    let q = AnyQueue::from_config(queue, Rng::derive(seed, &format!("{name}/queue")));
    pipes.push(Pipe::new(name, q, down, delay, PipeTarget::Destination, true));
    let name = format!("stations->{ap}");
    let q = AnyQueue::from_config(queue, Rng::derive(seed, &format!("{name}/queue")));
    pipes.push(Pipe::new(name, q, Server::Fixed(up), delay, PipeTarget::Node(ap_id), true));
    (d, d + 1)
}

/// Routes every station of AP `ai` through the (down, up) pipes.
fn connect_stations(pipe_between: &mut [Vec<Option<Hop>>], nodes: &[(String, NodeRole)], ai: usize, ap_id: NodeId, (down, up): (u32, u32)) {
    for (si, (_, role)) in nodes.iter().enumerate() {
        if *role == (NodeRole::Station { ap: ai }) {
            pipe_between[ap_id as usize][si] = Some(Hop::Pipe(down));
            pipe_between[si][ap_id as usize] = Some(Hop::Pipe(up));
        }
    }
}

fn secs(s: f64) -> SimTime {
    SimTime(SimDuration::from_secs_f64(s).expect("validated").as_ns())
}
fn millis(ms: f64) -> SimDuration {
    SimDuration::from_secs_f64(ms * 1e-3).expect("validated")
}
fn mbps(m: f64) -> BitRate {
    BitRate::from_mbps_f64(m).expect("validated")
}

impl Built {
    pub(crate) fn world(sc: &Scenario, seed: u64) -> World {
        let nodes = topology::nodes(sc);
        let id = |name: &str| nodes.iter().position(|(n, _)| n == name).expect("validated") as NodeId;
        let n = nodes.len();
        let mut pipes = Vec::new();
        let mut wifi_bss = Vec::new();
        let mut wifi_nodes = Vec::new();
        let mut wifi_links = Vec::new();
        // pipe_between[a][b] = the pipe from a to neighbour b.
        let mut pipe_between: Vec<Vec<Option<Hop>>> = vec![vec![None; n]; n];
        for l in &sc.links {
            let (a, b) = (id(&l.a), id(&l.b));
            for (from, to) in [(a, b), (b, a)] {
                let name = format!("{}->{}", nodes[from as usize].0, nodes[to as usize].0);
                let q = AnyQueue::from_config(&l.queue, Rng::derive(seed, &format!("{name}/queue")));
                let p = Pipe::new(name, q, Server::Fixed(mbps(l.rate_mbps)), millis(l.delay_ms), PipeTarget::Node(to), false);
                pipe_between[from as usize][to as usize] = Some(Hop::Pipe(pipes.len() as u32));
                pipes.push(p);
            }
        }
        let mut down_pipe_of_ap: Vec<Option<u32>> = vec![None; sc.aps.len()];
        for (ai, ap) in sc.aps.iter().enumerate() {
            let ap_id = topology::ap_node(sc, ai);
            match &ap.last_hop {
                LastHop::Wired { rate_mbps, uplink_rate_mbps, delay_ms, queue } => {
                    let up = mbps(uplink_rate_mbps.unwrap_or(*rate_mbps));
                    let hops = stand_in_pipes(&mut pipes, &ap.name, ap_id, Server::Fixed(mbps(*rate_mbps)), up, millis(*delay_ms), queue, seed);
                    down_pipe_of_ap[ai] = Some(hops.0);
                    connect_stations(&mut pipe_between, &nodes, ai, ap_id, hops);
                }
                LastHop::CapacityTrace { trace, format, delay_ms, uplink_rate_mbps, scale, queue } => {
                    let server = crate::link::trace_server(trace, *format, *scale).expect("validated");
                    let hops = stand_in_pipes(&mut pipes, &ap.name, ap_id, server, mbps(*uplink_rate_mbps), millis(*delay_ms), queue, seed);
                    down_pipe_of_ap[ai] = Some(hops.0);
                    connect_stations(&mut pipe_between, &nodes, ai, ap_id, hops);
                }
                LastHop::Wifi(w) => {
                    let bss = wifi_bss.len();
                    let params = BssParams::from_config(w);
                    let ap_txv = fixed_txvector(w, &w.rate_control).expect("validated");
                    let ap_w = wifi_nodes.len();
                    let (_, sta_cfg) = crate::mac::config::default_paths(w);
                    let ap_path = params.ap_path(w, &mut Rng::derive(seed, &format!("wifi/{}/fq", ap.name))).expect("validated");
                    wifi_nodes.push(NodeSpec { node: ap_id, bss, is_ap: true, name: ap.name.clone(), path: ap_path });
                    for (si, st) in sc.stations.iter().enumerate() {
                        if sc.ap_of(st) != ai {
                            continue;
                        }
                        let sid = (sc.servers.len() + sc.aps.len() + si) as NodeId;
                        let channel = ChannelModel::from_config(&st.channel.clone().unwrap_or_default(), seed, &st.name);
                        let sta_txv = st.rate_control.as_ref().map(|rc| fixed_txvector(w, rc).expect("validated")).unwrap_or(ap_txv);
                        let dl_txv = st.downlink_rate_control.as_ref().map(|rc| fixed_txvector(w, rc).expect("validated")).unwrap_or(ap_txv);
                        let mut sta_path = params.path(&sta_cfg, &mut Rng::derive(seed, &format!("wifi/{}/fq", st.name)));
                        let dl_rc_cfg = st.downlink_rate_control.as_ref().unwrap_or(&w.rate_control);
                        let dl_rc = match w.mechanism {
                            Some(_) => None, // the mechanism chooses the downlink rates
                            None => crate::mac::config::adaptive_rate_control(w, dl_rc_cfg, Rng::derive(seed, &format!("wifi/{}->{}/ratectl", ap.name, st.name))).expect("validated"),
                        };
                        params.add_link(&mut wifi_nodes[ap_w].path, wifi_links.len() as u32, dl_txv, dl_rc);
                        if let (Some(wt), crate::mac::txpath::TxPath::Linux(p)) = (st.airtime_weight_us, &mut wifi_nodes[ap_w].path) {
                            p.set_weight(p.num_links() - 1, wt as i64);
                        }
                        wifi_links.push(LinkSpec { tx: ap_id, rx: sid, txv: dl_txv, channel: channel.clone() });
                        let ul_rc_cfg = st.rate_control.as_ref().unwrap_or(&w.rate_control);
                        let ul_rc = crate::mac::config::adaptive_rate_control(w, ul_rc_cfg, Rng::derive(seed, &format!("wifi/{}->{}/ratectl", st.name, ap.name))).expect("validated");
                        let ul_rc = if matches!(sta_path, crate::mac::txpath::TxPath::Linux(_)) { ul_rc } else { None };
                        params.add_link(&mut sta_path, wifi_links.len() as u32, sta_txv, ul_rc);
                        wifi_links.push(LinkSpec { tx: sid, rx: ap_id, txv: sta_txv, channel });
                        wifi_nodes.push(NodeSpec { node: sid, bss, is_ap: false, name: st.name.clone(), path: sta_path });
                        pipe_between[ap_id as usize][sid as usize] = Some(Hop::Wifi(sid));
                        pipe_between[sid as usize][ap_id as usize] = Some(Hop::Wifi(ap_id));
                    }
                    wifi_bss.push((params, w.collision_ifs));
                }
            }
        }
        let next = topology::next_hops(&topology::adjacency(sc));
        let route = (0..n)
            .map(|a| (0..n).map(|d| next[a][d].and_then(|hop| pipe_between[a][hop as usize])).collect())
            .collect();
        let end = secs(sc.duration_s);
        let measure_from = secs(sc.warmup_s);
        let mut sources = Vec::new();
        let mut trackers = Vec::new();
        for (i, f) in sc.flows.iter().enumerate() {
            let c = f.common();
            let name = c.name.map(str::to_string).unwrap_or_else(|| format!("flow{i}"));
            let start = secs(c.start_s);
            let stop = c.stop_s.map(secs).unwrap_or(end).min(end);
            let (kind, packet_bytes) = match f {
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
            };
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
        let mut mechs = Vec::new();
        let mut mech_of_node = vec![None; n];
        let mut mech_of_pipe = vec![None; pipes.len()];
        let mut mech_of_station = vec![None; n];
        for (ai, ap) in sc.aps.iter().enumerate() {
            let Some(cfg) = ap.mechanism.as_ref().filter(|m| m.law().is_none()) else { continue };
            let ap_id = topology::ap_node(sc, ai);
            let flows = super::mech::managed_flows(sc, cfg, ai, id);
            let m = mechs.len();
            mechs.push(super::mech::ApMech::new(cfg, ap.name.clone(), ap_id, down_pipe_of_ap[ai], &flows, seed));
            mech_of_node[ap_id as usize] = Some(m);
            if let Some(p) = down_pipe_of_ap[ai] {
                mech_of_pipe[p as usize] = Some(m);
            }
            for (si, st) in sc.stations.iter().enumerate() {
                if sc.ap_of(st) == ai {
                    mech_of_station[sc.servers.len() + sc.aps.len() + si] = Some(m);
                }
            }
        }
        World {
            q: EventQueue::new(),
            end,
            pipes,
            route,
            payloads: Default::default(),
            medium: (!wifi_nodes.is_empty()).then(|| Medium::new(wifi_bss, wifi_nodes, wifi_links, n, seed)),
            delivered: Vec::new(),
            sources,
            trackers,
            log: PacketLog::new(sc.output.packets),
            next_packet_id: 0,
            drops: Vec::new(),
            air_started: Vec::new(),
            digest: 0xcbf2_9ce4_8422_2325,
            mechs,
            mech_of_node,
            mech_of_pipe,
            mech_of_station,
            pending_local: Vec::new(),
            egress: Vec::new(),
        }
    }
}
