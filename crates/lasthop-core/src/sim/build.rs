//! Builds a [`World`] from a validated scenario.

use super::topology::{self, NodeRole};
use super::world::{FlowSource, World};
use crate::app::UdpSource;
use crate::engine::EventQueue;
use crate::link::{Pipe, PipeTarget};
use crate::packet::NodeId;
use crate::queue::AnyQueue;
use crate::rng::Rng;
use crate::scenario::{Flow, LastHop, Scenario};
use crate::stats::{FlowTracker, PacketLog};
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;

pub(crate) struct Built;

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
        // pipe_between[a][b] = the pipe from a to neighbour b.
        let mut pipe_between = vec![vec![None; n]; n];
        for l in &sc.links {
            let (a, b) = (id(&l.a), id(&l.b));
            for (from, to) in [(a, b), (b, a)] {
                let name = format!("{}->{}", nodes[from as usize].0, nodes[to as usize].0);
                let p = Pipe::new(name, AnyQueue::from_config(&l.queue), mbps(l.rate_mbps), millis(l.delay_ms), PipeTarget::Node(to), false);
                pipe_between[from as usize][to as usize] = Some(pipes.len() as u32);
                pipes.push(p);
            }
        }
        for (ai, ap) in sc.aps.iter().enumerate() {
            let ap_id = topology::ap_node(sc, ai);
            match &ap.last_hop {
                LastHop::Wired { rate_mbps, uplink_rate_mbps, delay_ms, queue } => {
                    let down = pipes.len() as u32;
                    pipes.push(Pipe::new(
                        format!("{}->stations", ap.name),
                        AnyQueue::from_config(queue),
                        mbps(*rate_mbps),
                        millis(*delay_ms),
                        PipeTarget::Destination,
                        true,
                    ));
                    let up = pipes.len() as u32;
                    pipes.push(Pipe::new(
                        format!("stations->{}", ap.name),
                        AnyQueue::from_config(queue),
                        mbps(uplink_rate_mbps.unwrap_or(*rate_mbps)),
                        millis(*delay_ms),
                        PipeTarget::Node(ap_id),
                        true,
                    ));
                    for (si, (_, role)) in nodes.iter().enumerate() {
                        if *role == (NodeRole::Station { ap: ai }) {
                            pipe_between[ap_id as usize][si] = Some(down);
                            pipe_between[si][ap_id as usize] = Some(up);
                        }
                    }
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
            let udp = match f {
                Flow::UdpCbr(u) => UdpSource::new(mbps(u.rate_mbps), u.packet_bytes, false, start, stop),
                Flow::UdpPoisson(u) => UdpSource::new(mbps(u.rate_mbps), u.packet_bytes, true, start, stop),
            };
            sources.push(FlowSource {
                src: id(c.from),
                dst: id(c.to),
                dscp: c.dscp,
                udp,
                rng: Rng::derive(seed, &format!("flows/{name}")),
                seq: 0,
            });
            let from = measure_from.max(start);
            trackers.push(FlowTracker::new(name, f.kind(), c.from.to_string(), c.to.to_string(), from, stop.max(from)));
        }
        World {
            q: EventQueue::new(),
            end,
            pipes,
            route,
            sources,
            trackers,
            log: PacketLog::new(sc.output.packets),
            next_packet_id: 0,
            drops: Vec::new(),
            digest: 0xcbf2_9ce4_8422_2325,
        }
    }
}
