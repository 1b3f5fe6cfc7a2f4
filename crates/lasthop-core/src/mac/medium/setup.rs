//! Building the medium, and what it reports: counters, traces, and run-time changes of a node's channel
//! or transmit path.

use super::*;

impl Medium {
    /// Builds the medium. All BSSs must share a band (one slot time).
    pub fn new(bss: Vec<(BssParams, CollisionIfs)>, nodes: Vec<NodeSpec>, links: Vec<LinkSpec>, world_nodes: usize, seed: u64) -> Self {
        let timings = bss[0].0.timings;
        let (bss, collision_ifs): (Vec<_>, Vec<_>) = bss.into_iter().unzip();
        let mut node_of = vec![None; world_nodes];
        let mut ns = Vec::new();
        let mut names = Vec::new();
        for (i, s) in nodes.into_iter().enumerate() {
            node_of[s.node as usize] = Some(i as u32);
            ns.push(Node::new(&bss[s.bss], s.node, s.bss, s.is_ap, s.path, Rng::derive(seed, &format!("wifi/{}/edca", s.name))));
            names.push(s.name);
        }
        let mut ls = Vec::new();
        for l in links {
            let tx = node_of[l.tx as usize].expect("link transmitter is a Wi-Fi node");
            let rx = node_of[l.rx as usize].expect("link receiver is a Wi-Fi node");
            let b = &bss[ns[tx as usize].bss];
            let bitmap = if l.txv.standard == PhyStandard::He && b.ampdu_limits.max_mpdus > 64 { BlockAckBitmap::Compressed256 } else { BlockAckBitmap::Compressed64 };
            ns[tx as usize].links.push(ls.len() as u32);
            let err_rng = Rng::derive(seed, &format!("wifi/{}->{}/errors", names[tx as usize], names[rx as usize]));
            ls.push(Link::new(tx, rx, l, bitmap, err_rng));
        }
        Medium {
            tx_log: TxLog::default(),
            bss,
            names,
            links: ls,
            node_of,
            error_model: ErrorModel::default(),
            slot: timings.slot,
            sifs: timings.sifs,
            ack_timeout: timings.ack_timeout,
            on_air: false,
            in_flight: Vec::new(),
            access_timer: None,
            starters: Vec::new(),
            releases: Vec::new(),
            trace: None,
            collision_ifs,
            any_shared_hw: ns.iter().any(|n| n.shares_hw),
            any_timed_path: ns.iter().any(|n| n.timed_path),
            hidden: None,
            nodes: ns,
        }
    }

    /// Sets the mean SNR of both links of station `station` (a run-time command); fading stays.
    pub fn set_mean_snr(&mut self, station: NodeId, snr_db: f64) {
        let Some(n) = self.node_of.get(station as usize).copied().flatten() else { return };
        for l in self.links.iter_mut().filter(|l| l.tx == n || l.rx == n) {
            l.channel.set_mean_snr(snr_db);
        }
    }

    /// The transmit path of world node `node`, if it is a Wi-Fi node.
    pub fn path_mut(&mut self, node: NodeId) -> Option<&mut TxPath> {
        let n = self.node_of.get(node as usize).copied().flatten()?;
        Some(&mut self.nodes[n as usize].path)
    }

    /// Starts recording [`MediumTrace`] entries.
    pub fn enable_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// The entries recorded so far (empties the buffer).
    pub fn take_trace(&mut self) -> Vec<MediumTrace> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Per-node and per-link counters for `summary.json`.
    pub fn stats(&self) -> serde_json::Value {
        let nodes: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .zip(&self.names)
            .map(|(n, name)| {
                serde_json::json!({"node": name, "is_ap": n.is_ap, "mac": n.stats, "cw": n.edcaf.iter().map(|e| e.cw()).collect::<Vec<_>>(), "path": n.path.stats()})
            })
            .collect();
        let links: Vec<serde_json::Value> = self
            .links
            .iter()
            .map(|l| {
                serde_json::json!({
                    "link": format!("{}->{}", self.names[l.tx as usize], self.names[l.rx as usize]),
                    "txvector": l.txv,
                    "stats": l.stats,
                })
            })
            .collect();
        serde_json::json!({"nodes": nodes, "links": links})
    }

    /// Each Wi-Fi node as built: its name, whether it is an AP, its transmit path and, per link it
    /// sends on, the rate control (the run's "what actually ran").
    pub fn setup(&self) -> Vec<serde_json::Value> {
        self.nodes
            .iter()
            .zip(&self.names)
            .map(|(n, name)| {
                let info = n.path.info();
                let to = n.links.iter().map(|&l| &self.names[self.links[l as usize].rx as usize]);
                let links: Vec<serde_json::Value> = to
                    .zip(&info.rate_control)
                    .map(|(rx, rc)| serde_json::json!({"link": format!("{name}->{rx}"), "rate_control": rc.name, "detail": rc.detail, "max_nss": rc.max_nss}))
                    .collect();
                serde_json::json!({"node": name, "is_ap": n.is_ap, "path": info.path, "queues": info.queues, "links": links})
            })
            .collect()
    }

    /// Each link's transmitting and receiving node names, in link order (the `link` of [`TxLog`]).
    pub fn link_names(&self) -> Vec<(String, String)> {
        self.links.iter().map(|l| (self.names[l.tx as usize].clone(), self.names[l.rx as usize].clone())).collect()
    }

    /// Airtime per link, ns (for fairness metrics).
    pub fn link_airtime(&self) -> Vec<(NodeId, NodeId, u64)> {
        self.links.iter().map(|l| (self.nodes[l.tx as usize].node, l.rx_node, l.stats.airtime_ns)).collect()
    }
}

impl Node {
    /// A node of BSS `bss` (parameters `b`) with one EDCAF per AC it uses.
    fn new(b: &BssParams, node: NodeId, bss: usize, is_ap: bool, path: TxPath, mut rng: Rng) -> Self {
        let acs: &[AccessCategory] = if b.qos { &AccessCategory::ALL } else { &AccessCategory::ALL[2..3] };
        let edcaf = acs.iter().map(|ac| Edcaf::new(b.edca(is_ap, *ac), b.qos, b.cw_reset_retries, &mut rng)).collect();
        Node {
            node,
            bss,
            is_ap,
            qos: b.qos,
            edcaf,
            links: Vec::new(),
            hw: Default::default(),
            rng,
            ref_time: SimTime::ZERO,
            exchange: None,
            spare: Vec::new(),
            txop_start: SimTime::ZERO,
            continue_eidx: None,
            shares_hw: path.shares_hardware(),
            timed_path: path.has_timers(),
            wakeup_timer: None,
            deadline_timers: [None; 4],
            hw_vacated: [SimTime::ZERO; 4],
            sensed: 0,
            stats: NodeStats::default(),
            path,
        }
    }
}

impl Link {
    /// The link `tx` → `rx` (medium node indices) of `spec`.
    fn new(tx: u32, rx: u32, spec: LinkSpec, bitmap: BlockAckBitmap, err_rng: Rng) -> Self {
        debug_assert!(spec.channel.branches() >= spec.rx_antennas as usize, "a fading branch per receive antenna (ChannelModel::set_receive_branches)");
        Link {
            tx,
            rx,
            rx_node: spec.rx,
            txv: spec.txv,
            channel: spec.channel,
            data_gain: std::array::from_fn(|nss| {
                let nss = nss.max(1) as u8;
                (crate::phy::error::diversity_gain_db(spec.rx_antennas, nss), crate::channel::diversity_order(spec.rx_antennas, nss))
            }),
            err_rng,
            bitmap,
            per_memo: (u64::MAX, 0, spec.txv, 0.0),
            rx_next: [0; 4],
            held: Default::default(),
            stats: LinkStats::default(),
        }
    }
}
