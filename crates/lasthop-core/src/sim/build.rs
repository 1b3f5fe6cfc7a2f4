//! Builds a [`World`] from a validated scenario: the network (wired links, each AP's last hop, routes),
//! the mechanisms installed on the APs, and the flows' endpoints ([`super::build_flows`]).

use super::hosts::FlowSource;
use super::mech::{ApMech, Mechs};
use super::topology::{self, NodeRole};
use super::world::{Hop, World};
use crate::channel::ChannelModel;
use crate::engine::EventQueue;
use crate::link::{Pipe, PipeTarget, Server};
use crate::mac::config::{fixed_txvector, BssParams};
use crate::mac::medium::{LinkSpec, Medium, NodeSpec};
use crate::mac::txpath::TxPath;
use crate::mech::hook::{FlowInfo, LinkKind, NodeBuilder};
use crate::mech::{Mechanism, Role};
use crate::packet::NodeId;
use crate::queue::AnyQueue;
use crate::rng::Rng;
use crate::scenario::{CollisionIfs, LastHop, QueueConfig, Scenario, Station, WifiConfig};
use crate::stats::{FlowTracker, PacketLog};
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;

pub(crate) struct Built;

pub(super) fn secs(s: f64) -> SimTime {
    SimTime(SimDuration::from_secs_f64(s).expect("validated").as_ns())
}
pub(super) fn millis(ms: f64) -> SimDuration {
    SimDuration::from_secs_f64(ms * 1e-3).expect("validated")
}
pub(super) fn mbps(m: f64) -> BitRate {
    BitRate::from_mbps_f64(m).expect("validated")
}

/// The network under construction.
struct Net<'a> {
    sc: &'a Scenario,
    seed: u64,
    nodes: Vec<(String, NodeRole)>,
    pipes: Vec<Pipe>,
    /// `pipe_between[a][b]` = the hop from a to neighbour b.
    pipe_between: Vec<Vec<Option<Hop>>>,
    down_pipe_of_ap: Vec<Option<u32>>,
    wifi_bss: Vec<(BssParams, CollisionIfs)>,
    wifi_nodes: Vec<NodeSpec>,
    wifi_links: Vec<LinkSpec>,
    /// Per AP: its mechanisms, installed.
    aps: Vec<NodeBuilder>,
    /// Per station: the mechanisms installed on it (transmit-path stages only).
    stations: Vec<NodeBuilder>,
    /// A mechanism's part that the node it was installed on cannot take.
    refused: Option<crate::mech::InstallError>,
}

/// A node's transmit path: as configured (`cfg`), or the Linux path when a mechanism set Linux-path
/// stages (a driver, hardware queues, the TXQs' AQM): the node's `linux` settings as configured, or
/// the Linux profile's default path in place of a `fifo` one, with what the mechanisms set in them.
fn node_path(params: &BssParams, cfg: &crate::mac::wifi_config::TxPathConfig, node: &NodeBuilder, rng: &mut Rng) -> TxPath {
    use crate::mac::wifi_config::TxPathConfig;
    match (node.needs_linux_path(), cfg) {
        (false, _) => params.path(cfg, rng),
        (true, TxPathConfig::Linux { .. }) => params.linux_path_with(cfg, |p| node.adjust_linux(p), rng),
        (true, TxPathConfig::Fifo { .. }) => params.linux_path_with(&crate::mac::config::default_linux_path(), |p| node.adjust_linux(p), rng),
    }
}

/// Puts the transmit-path stages mechanisms installed on `node` (a driver, a release gate, a TXQ
/// scheduler, a driver policy) into its path; refused if the path lacks the stage. `setup`: what a
/// driver is built for.
fn install_path_stages(node: &mut NodeBuilder, path: &mut TxPath, setup: &crate::mac::txpath::driver::DriverSetup<'_>) -> Result<(), crate::mech::InstallError> {
    let refuse = |by: String, what: &str| crate::mech::InstallError::Unsupported { mechanism: by, needs: format!("the `linux` transmit path at '{}' ({what})", node.name) };
    if let Some((by, make)) = node.driver.take() {
        let driver = make(setup).map_err(|e| crate::mech::InstallError::Unsupported { mechanism: by.clone(), needs: e })?;
        if path.set_driver(driver).is_err() {
            return Err(refuse(by, "a driver stage with no link yet"));
        }
    }
    if let Some((by, gate)) = node.release_gate.take() {
        if path.set_release_gate(gate).is_err() {
            return Err(refuse(by, "a driver → hardware-queue boundary to gate"));
        }
    }
    if let Some((by, make)) = node.txq_scheduler.take() {
        if !path.set_txq_scheduler(&*make) {
            return Err(refuse(by, "mac80211 TXQs to schedule"));
        }
    }
    if let Some((by, policy)) = node.driver_policy.take() {
        if path.set_driver_policy(policy).is_err() {
            return Err(refuse(by, "an ath9k-style driver for its policy"));
        }
    }
    Ok(())
}

/// T_cycle (QAir spec §4.3) of AP `ai` (`station`: `None`) or of one of its stations, on a Wi-Fi last hop:
/// at the node's fastest rate, its fixed rate or the highest its adaptive rate control may pick (for an
/// AP, over the rates toward its stations).
fn t_cycle(sc: &Scenario, ai: usize, station: Option<&crate::scenario::Station>) -> Option<crate::time::SimDuration> {
    let LastHop::Wifi(w) = &sc.aps[ai].last_hop else { return None };
    let bss = crate::mac::config::BssParams::from_config(w);
    let bss_rc = crate::mac::config::default_rate_control(w);
    // The rate of a link to or from a station with `max_nss` streams at most (`None`: the BSS's).
    let rate = |rc: &crate::ratectl::RateControlConfig, nss: Option<u8>| {
        let w = crate::mac::config::for_station(w, nss);
        match rc {
            crate::ratectl::RateControlConfig::Fixed { .. } => fixed_txvector(&w, rc).ok(),
            _ => crate::mac::config::link_rates(&w).supported.into_iter().max_by_key(|t| t.data_rate().bps()),
        }
    };
    let (ap_path, sta_path, is_ap) = (sc.aps[ai].run_path(w), crate::mac::config::default_paths(w).1, station.is_none());
    let txv = match station {
        Some(st) => rate(st.rate_control.as_ref().unwrap_or(&bss_rc), st.max_nss),
        None => {
            let mine = sc.stations.iter().filter(|st| sc.find_ap_of(st) == Some(ai));
            mine.filter_map(|st| rate(st.downlink_rate_control.as_ref().unwrap_or(&bss_rc), st.max_nss))
                .max_by_key(|t| t.data_rate().bps())
                .or_else(|| rate(&bss_rc, None))
        }
    }?;
    Some(bss.exchange_cycle(if is_ap { &ap_path } else { &sta_path }, is_ap, &txv))
}

/// A mechanism installed by the caller (not named in the scenario) on the node named `.0`: an AP, or a
/// station (transmit-path stages only: a release gate, a TXQ scheduler).
pub type ExtraMechanism<'m> = (&'m str, &'m dyn Mechanism);

impl Built {
    pub(crate) fn world(sc: &Scenario, seed: u64, extra: &[ExtraMechanism<'_>]) -> Result<World, crate::mech::InstallError> {
        let mut net = Net::new(sc, seed);
        for &(node, m) in extra {
            if let Some(ai) = sc.aps.iter().position(|a| a.name == node) {
                m.install(&mut net.aps[ai])?;
            } else if let Some(si) = sc.stations.iter().position(|s| s.name == node) {
                m.install(&mut net.stations[si])?;
                net.stations[si].only_path_stages(m.name())?;
            } else {
                return Err(crate::mech::InstallError::Unsupported { mechanism: m.name().into(), needs: format!("an access point or station named '{node}'") });
            }
        }
        net.wired_links();
        for ai in 0..sc.aps.len() {
            net.last_hop(ai);
        }
        if let Some(e) = net.refused.take() {
            return Err(e);
        }
        let n = net.nodes.len();
        let next = topology::next_hops(&topology::adjacency(sc));
        let route = (0..n).map(|a| (0..n).map(|d| next[a][d].and_then(|hop| net.pipe_between[a][hop as usize])).collect()).collect();
        let (sources, trackers): (Vec<FlowSource>, Vec<FlowTracker>) = super::build_flows::flows(sc, seed, |name| net.id(name));
        let installed = net.aps.iter().chain(&net.stations).map(|b| (b.name.clone(), b.installed())).filter(|(_, m)| !m.is_empty()).collect();
        let mechs = net.mechs();
        let hidden: Vec<(NodeId, NodeId)> = sc.hidden_nodes.iter().map(|[a, b]| (net.id(a), net.id(b))).collect();
        let medium = (!net.wifi_nodes.is_empty()).then(|| {
            let mut m = Medium::new(net.wifi_bss, net.wifi_nodes, net.wifi_links, n, seed);
            m.set_hidden(&hidden);
            m
        });
        Ok(World {
            q: EventQueue::new(),
            end: secs(sc.duration_s),
            pipes: net.pipes,
            route,
            payloads: Default::default(),
            medium,
            delivered: Vec::new(),
            sources,
            deferred: Vec::new(),
            trackers,
            frame_rows: Default::default(),
            log: packet_log(sc),
            next_packet_id: 0,
            drops: Vec::new(),
            digest: 0xcbf2_9ce4_8422_2325,
            mechs,
            egress: Vec::new(),
            commands: {
                let before = super::command::adds_before(sc, 0..sc.commands.len());
                sc.commands.iter().zip(&before).map(|(c, b)| (super::command::resolve(sc, &c.target, &c.set, b).expect("validated"), c.set.clone())).collect()
            },
            tap: None,
            installed,
        })
    }
}

impl<'a> Net<'a> {
    /// The nodes, and each AP with its mechanisms installed (validated: installs cannot fail).
    fn new(sc: &'a Scenario, seed: u64) -> Self {
        let nodes = topology::nodes(sc);
        let n = nodes.len();
        let mut net = Net {
            sc,
            seed,
            nodes,
            pipes: Vec::new(),
            pipe_between: vec![vec![None; n]; n],
            down_pipe_of_ap: vec![None; sc.aps.len()],
            wifi_bss: Vec::new(),
            wifi_nodes: Vec::new(),
            wifi_links: Vec::new(),
            aps: Vec::new(),
            stations: Vec::new(),
            refused: None,
        };
        for (ai, ap) in sc.aps.iter().enumerate() {
            let link = if matches!(ap.last_hop, LastHop::Wifi(_)) { LinkKind::Wifi } else { LinkKind::P2p };
            let mut node = NodeBuilder::new(ap.name.clone(), link, net.flows_to_stations_of(ai), sc.flow_names(), seed);
            node.t_cycle = t_cycle(sc, ai, None);
            for m in &ap.node_mechanisms {
                m.install(&mut node).expect("validated");
            }
            for (_, m) in ap.mechanisms() {
                m.install(&mut node).expect("validated");
            }
            net.aps.push(node);
        }
        for st in &sc.stations {
            let link = match sc.find_ap_of(st).map(|ai| &sc.aps[ai].last_hop) {
                Some(LastHop::Wifi(_)) => LinkKind::Wifi,
                _ => LinkKind::P2p,
            };
            let mut node = NodeBuilder::new(st.name.clone(), link, Vec::new(), sc.flow_names(), seed);
            node.t_cycle = sc.find_ap_of(st).and_then(|ai| t_cycle(sc, ai, Some(st)));
            let bss = sc.find_ap_of(st).map(|ai| sc.aps[ai].node_mechanisms.as_slice()).unwrap_or_default();
            for m in bss.iter().chain(&st.mechanisms) {
                m.install(&mut node).expect("validated");
            }
            net.stations.push(node);
        }
        net
    }

    fn id(&self, name: &str) -> NodeId {
        self.nodes.iter().position(|(n, _)| n == name).expect("validated") as NodeId
    }

    /// The flows that end at a station of AP `ai`, in scenario order.
    fn flows_to_stations_of(&self, ai: usize) -> Vec<FlowInfo> {
        let sc = self.sc;
        let mut out = Vec::new();
        for (i, f) in sc.flows.iter().enumerate() {
            let c = f.common();
            let Some(st) = sc.stations.iter().find(|s| s.name == c.to) else { continue };
            if sc.ap_of(st) == ai {
                out.push(FlowInfo { index: i as u32, name: sc.flow_name(i), kind: f.feedback_kind(), station: self.id(c.to) });
            }
        }
        out
    }

    fn wired_links(&mut self) {
        for l in &self.sc.links {
            let (a, b) = (self.id(&l.a), self.id(&l.b));
            for (from, to) in [(a, b), (b, a)] {
                let name = format!("{}->{}", self.nodes[from as usize].0, self.nodes[to as usize].0);
                let q = AnyQueue::from_config(&l.queue, Rng::derive(self.seed, &format!("{name}/queue")));
                let p = Pipe::new(name, q, Server::Fixed(mbps(l.rate_mbps)), millis(l.delay_ms), PipeTarget::Node(to), false);
                self.pipe_between[from as usize][to as usize] = Some(Hop::Pipe(self.pipes.len() as u32));
                self.pipes.push(p);
            }
        }
    }

    fn last_hop(&mut self, ai: usize) {
        let sc = self.sc;
        match &sc.aps[ai].last_hop {
            LastHop::Wired { rate_mbps, uplink_rate_mbps, delay_ms, queue } => {
                let up = mbps(uplink_rate_mbps.unwrap_or(*rate_mbps));
                self.stand_in(ai, Server::Fixed(mbps(*rate_mbps)), up, millis(*delay_ms), queue);
            }
            LastHop::CapacityTrace { trace, format, delay_ms, uplink_rate_mbps, scale, queue } => {
                let server = crate::link::trace_server(trace, *format, *scale).expect("validated");
                self.stand_in(ai, server, mbps(*uplink_rate_mbps), millis(*delay_ms), queue);
            }
            LastHop::Wifi(w) => self.wifi(ai, w),
        }
    }

    /// The two pipes of a non-802.11 last hop: a shared downlink from the AP (drained by `down`) and a
    /// shared uplink to it at rate `up`, each with its own copy of `queue`; every station of AP `ai`
    /// routes through them.
    fn stand_in(&mut self, ai: usize, down: Server, up: BitRate, delay: SimDuration, queue: &QueueConfig) {
        let (ap, ap_id) = (&self.sc.aps[ai].name, topology::ap_node(self.sc, ai));
        let d = self.pipes.len() as u32;
        for (name, server, target) in [(format!("{ap}->stations"), down, PipeTarget::Destination), (format!("stations->{ap}"), Server::Fixed(up), PipeTarget::Node(ap_id))] {
            let q = AnyQueue::from_config(queue, Rng::derive(self.seed, &format!("{name}/queue")));
            self.pipes.push(Pipe::new(name, q, server, delay, target, true));
        }
        self.down_pipe_of_ap[ai] = Some(d);
        for (si, (_, role)) in self.nodes.iter().enumerate() {
            if *role == (NodeRole::Station { ap: ai }) {
                self.pipe_between[ap_id as usize][si] = Some(Hop::Pipe(d));
                self.pipe_between[si][ap_id as usize] = Some(Hop::Pipe(d + 1));
            }
        }
    }

    /// An 802.11 BSS: the AP's node (with the stages its mechanisms set) and, per station, its node
    /// and the two links between them.
    fn wifi(&mut self, ai: usize, w: &WifiConfig) {
        let (ap, ap_id) = (&self.sc.aps[ai], topology::ap_node(self.sc, ai));
        let params = BssParams::from_config(w);
        let ap_w = self.wifi_nodes.len();
        let mut rng = Rng::derive(self.seed, &format!("wifi/{}/fq", ap.name));
        let (ap_cfg, _) = crate::mac::config::default_paths(w);
        let mut ap_path = node_path(&params, &ap_cfg, &self.aps[ai], &mut rng);
        let setup = crate::mac::txpath::driver::DriverSetup { bss: &params, rates: crate::mac::config::link_rates(w).supported };
        if let Err(e) = install_path_stages(&mut self.aps[ai], &mut ap_path, &setup) {
            self.refused = Some(e);
        }
        self.wifi_nodes.push(NodeSpec { node: ap_id, bss: self.wifi_bss.len(), is_ap: true, name: ap.name.clone(), path: ap_path });
        for (si, st) in self.sc.stations.iter().enumerate() {
            if self.sc.ap_of(st) == ai {
                let sid = (self.sc.servers.len() + self.sc.aps.len() + si) as NodeId;
                self.wifi_station(ai, ap_w, &params, w, st, sid);
            }
        }
        self.wifi_bss.push((params, w.collision_ifs));
    }

    fn wifi_station(&mut self, ai: usize, ap_w: usize, params: &BssParams, bss: &WifiConfig, st: &Station, sid: NodeId) {
        let (seed, ap_id, ap) = (self.seed, topology::ap_node(self.sc, ai), &self.sc.aps[ai].name);
        let w = &*crate::mac::config::for_station(bss, st.max_nss);
        let bss_rc = crate::mac::config::default_rate_control(w);
        let ap_txv = fixed_txvector(w, &bss_rc).expect("validated");
        let txv = |rc: &Option<crate::scenario::RateControlConfig>| rc.as_ref().map(|rc| fixed_txvector(w, rc).expect("validated")).unwrap_or(ap_txv);
        let (sta_txv, dl_txv) = (txv(&st.rate_control), txv(&st.downlink_rate_control));
        let channel = ChannelModel::from_config(&st.channel.clone().unwrap_or_default(), seed, &st.name);
        // Each direction fades on a branch per receive antenna (branch 0 shared: reciprocity).
        let receiving = |n_rx: u8, dir: &str| {
            let mut c = channel.clone();
            c.set_receive_branches(n_rx, seed, &format!("channel/{}/{dir}", st.name));
            c
        };
        let (_, sta_cfg) = crate::mac::config::default_paths(w);
        let si = sid as usize - self.sc.servers.len() - self.sc.aps.len();
        let mut sta_path = node_path(params, &sta_cfg, &self.stations[si], &mut Rng::derive(seed, &format!("wifi/{}/fq", st.name)));
        let setup = crate::mac::txpath::driver::DriverSetup { bss: params, rates: crate::mac::config::link_rates(w).supported };
        if let Err(e) = install_path_stages(&mut self.stations[si], &mut sta_path, &setup) {
            self.refused = Some(e);
        }
        let dl_rc = match self.aps[ai].claimed(Role::RateControl) {
            true => None, // a mechanism chooses the downlink rates
            false => {
                let cfg = st.downlink_rate_control.as_ref().unwrap_or(&bss_rc);
                crate::mac::config::adaptive_rate_control(w, cfg, Rng::derive(seed, &format!("wifi/{ap}->{}/ratectl", st.name))).expect("validated")
            }
        };
        let ap_path = &mut self.wifi_nodes[ap_w].path;
        params.add_link(ap_path, self.wifi_links.len() as u32, dl_txv, dl_rc);
        if let Some(wt) = st.airtime_weight_us {
            let local = self.wifi_links.iter().filter(|l| l.tx == ap_id).count();
            ap_path.set_airtime_weight(local, wt as i64);
        }
        self.wifi_links.push(LinkSpec { tx: ap_id, rx: sid, txv: dl_txv, channel: receiving(w.max_nss.max(1), "downlink"), rx_antennas: w.max_nss.max(1) });
        let ul_rc_cfg = st.rate_control.as_ref().unwrap_or(&bss_rc);
        let ul_rc = crate::mac::config::adaptive_rate_control(w, ul_rc_cfg, Rng::derive(seed, &format!("wifi/{}->{ap}/ratectl", st.name))).expect("validated");
        let ul_rc = if sta_path.takes_rate_control() { ul_rc } else { None };
        params.add_link(&mut sta_path, self.wifi_links.len() as u32, sta_txv, ul_rc);
        self.wifi_links.push(LinkSpec { tx: sid, rx: ap_id, txv: sta_txv, channel: receiving(bss.max_nss.max(1), "uplink"), rx_antennas: bss.max_nss.max(1) });
        self.wifi_nodes.push(NodeSpec { node: sid, bss: self.wifi_bss.len(), is_ap: false, name: st.name.clone(), path: sta_path });
        self.pipe_between[ap_id as usize][sid as usize] = Some(Hop::Wifi(sid));
        self.pipe_between[sid as usize][ap_id as usize] = Some(Hop::Wifi(ap_id));
    }

    /// The hooks the mechanisms added on each AP, in AP order, and which nodes and pipes they serve.
    fn mechs(&mut self) -> Mechs {
        let n = self.nodes.len();
        let mut m = Mechs { of_ap: vec![0..0; n], of_station: vec![0..0; n], of_pipe: vec![0..0; self.pipes.len()], ..Default::default() };
        for (ai, node) in self.aps.iter_mut().enumerate() {
            let (ap, ap_id, down) = (&self.sc.aps[ai].name, topology::ap_node(self.sc, ai), self.down_pipe_of_ap[ai]);
            let start = m.list.len();
            m.list.extend(node.hooks.drain(..).map(|(kind, hook)| ApMech::new(kind, ap.clone(), ap_id, down, hook)));
            let r = start..m.list.len();
            m.of_ap[ap_id as usize] = r.clone();
            if let Some(p) = down {
                m.of_pipe[p as usize] = r.clone();
            }
            for (si, st) in self.sc.stations.iter().enumerate() {
                if self.sc.ap_of(st) == ai {
                    m.of_station[self.sc.servers.len() + self.sc.aps.len() + si] = r.clone();
                }
            }
        }
        m
    }
}

/// The packet log `output` asks for: every packet, none, or a selection (sampled, some flows).
fn packet_log(sc: &Scenario) -> PacketLog {
    use crate::scenario::PacketsMode;
    let o = &sc.output;
    let every = match o.packets.mode() {
        PacketsMode::None => return PacketLog::new(false),
        PacketsMode::All => 1,
        PacketsMode::Sampled => o.sample_every.unwrap_or(10) as u64,
    };
    let flows = o.flows.as_ref().map(|keep| {
        sc.flow_names().iter().map(|name| keep.contains(name)).collect()
    });
    if every == 1 && flows.is_none() {
        return PacketLog::new(true);
    }
    PacketLog::selecting(crate::stats::LogSelect::new(flows, every))
}
