//! Value and cross-reference checks that the type system cannot express. Collects every issue.

use super::error::{Loc, ScenarioError, ScenarioIssue};
use super::types::*;
use serde_json::json;
use std::collections::BTreeMap;

/// Collected issues, each with a location.
#[derive(Default)]
pub(crate) struct Issues(pub(crate) Vec<ScenarioIssue>);

impl Issues {
    pub(crate) fn push(&mut self, loc: Loc, msg: impl Into<String>, input: serde_json::Value) {
        self.0.push(ScenarioIssue { kind: "value_error".into(), loc, msg: msg.into(), input: Some(input) });
    }
    pub(crate) fn positive(&mut self, loc: Loc, v: f64) {
        if !(v.is_finite() && v > 0.0) {
            self.push(loc, format!("must be a positive number, got {}", super::shown(v)), json!(v));
        } else {
            self.representable(loc, v, true);
        }
    }
    pub(crate) fn non_negative(&mut self, loc: Loc, v: f64) {
        if !(v.is_finite() && v >= 0.0) {
            self.push(loc, format!("must be zero or positive, got {}", super::shown(v)), json!(v));
        } else {
            self.representable(loc, v, false);
        }
    }
    /// A time or rate (its unit read from the key's suffix: `_s`, `_ms`, `_us`, `_mbps`) that the
    /// engine can represent: times in integer ns up to [`MAX_TIME_S`], rates in integer bit/s up to
    /// [`MAX_RATE_MBPS`]; a positive value must not round to zero.
    fn representable(&mut self, loc: Loc, v: f64, positive: bool) {
        let Some(super::error::LocItem::Key(key)) = loc.0.last() else { return };
        let (scale, unit, max) = match key.rsplit('_').next() {
            Some("s") => (1.0, "s", MAX_TIME_S),
            Some("ms") => (1e-3, "ms", MAX_TIME_S * 1e3),
            Some("us") => (1e-6, "µs", MAX_TIME_S * 1e6),
            Some("mbps") => {
                if v > MAX_RATE_MBPS {
                    self.push(loc, format!("must be at most {MAX_RATE_MBPS:e} Mbit/s (1 Tbit/s), got {v:e}"), json!(v));
                } else if positive && crate::units::BitRate::from_mbps_f64(v).is_none() {
                    self.push(loc, format!("must be at least 1 bit/s (1e-6 Mbit/s), got {v:e}"), json!(v));
                }
                return;
            }
            _ => return,
        };
        if v > max {
            self.push(loc, format!("must be at most {max:e} {unit} (about 31 years), got {v:e}"), json!(v));
        } else if positive && (v * scale * 1e9).round() < 1.0 {
            self.push(loc, format!("must be at least 1 ns (the engine's resolution), got {v:e} {unit}"), json!(v));
        }
    }
}

/// The longest time a scenario may name: 1e9 s, far below the engine's integer-ns clock limit (584
/// years), so sums of times cannot overflow.
pub const MAX_TIME_S: f64 = 1e9;
/// The fastest rate a scenario may name: 1 Tbit/s.
pub const MAX_RATE_MBPS: f64 = 1e6;

/// Checks values and references; returns every problem found.
pub fn validate(sc: &Scenario) -> Result<(), ScenarioError> {
    let mut is = Issues::default();
    let root = Loc::root();
    is.positive(root.key("duration_s"), sc.duration_s);
    is.non_negative(root.key("warmup_s"), sc.warmup_s);
    if sc.warmup_s.is_finite() && sc.duration_s.is_finite() && sc.warmup_s >= sc.duration_s && sc.duration_s > 0.0 {
        is.push(root.key("warmup_s"), format!("must be shorter than duration_s ({})", super::shown(sc.duration_s)), json!(sc.warmup_s));
    }
    let names = check_nodes(sc, &mut is);
    super::validate_wifi::check_bands(sc, &mut is);
    super::validate_wifi::check_hidden(sc, &mut is);
    for (i, l) in sc.links.iter().enumerate() {
        check_link(l, &root.key("links").index(i), &names, &mut is);
        // Routes take one link between two nodes: a second one was silently the one that carried traffic.
        let ends = |l: &WiredLink| if l.a <= l.b { (l.a.clone(), l.b.clone()) } else { (l.b.clone(), l.a.clone()) };
        if let Some(j) = sc.links[..i].iter().position(|o| ends(o) == ends(l)) {
            is.push(root.key("links").index(i), format!("'{}' and '{}' are joined already (links[{j}]): one link between two nodes", l.a, l.b), json!(null));
        }
    }
    let flow_names = sc.flow_names();
    for (i, f) in sc.flows.iter().enumerate() {
        check_flow(sc, f, &root.key("flows").index(i), &names, &mut is);
        // Flow names key the results (`metrics.flows`, the `flow` column) and name flows in commands and
        // mechanisms: one name, one flow (an unnamed flow is `flow<i>`, which a given name may take).
        if let Some(j) = flow_names[..i].iter().position(|n| *n == flow_names[i]) {
            is.push(root.key("flows").index(i).key("name"), format!("duplicate flow name '{}' (also flows[{j}])", flow_names[i]), json!(flow_names[i]));
        }
    }
    check_output(sc, &root.key("output"), &mut is);
    if is.0.is_empty() {
        // Commands name nodes and flows: resolve them once those are known to be sound.
        check_commands(sc, &mut is);
    }
    if is.0.is_empty() {
        Ok(())
    } else {
        Err(ScenarioError { issues: is.0 })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum NodeKind {
    Server,
    Ap,
    Station,
}

fn check_nodes(sc: &Scenario, is: &mut Issues) -> BTreeMap<String, NodeKind> {
    let mut names = BTreeMap::new();
    let root = Loc::root();
    let mut add = |is: &mut Issues, loc: Loc, name: &str, kind| {
        if name.is_empty() {
            is.push(loc, "must not be empty", json!(name));
        } else if names.insert(name.to_string(), kind).is_some() {
            is.push(loc, format!("duplicate node name '{name}'"), json!(name));
        }
    };
    for (i, s) in sc.servers.iter().enumerate() {
        add(is, root.key("servers").index(i).key("name"), &s.name, NodeKind::Server);
    }
    if sc.aps.is_empty() {
        is.push(root.key("aps"), "at least one access point is required", json!([]));
    }
    for (i, a) in sc.aps.iter().enumerate() {
        let loc = root.key("aps").index(i);
        add(is, loc.key("name"), &a.name, NodeKind::Ap);
        check_last_hop(&a.last_hop, a.law(), &loc.key("last_hop"), is);
        check_mechanisms(sc, a, &loc, is);
    }
    for (i, s) in sc.stations.iter().enumerate() {
        let loc = root.key("stations").index(i);
        add(is, loc.key("name"), &s.name, NodeKind::Station);
        super::validate_wifi::check_station(sc, s, &loc, is);
        check_station_mechanisms(sc, s, &loc, is);
        match &s.ap {
            Some(ap) if !sc.aps.iter().any(|a| &a.name == ap) => {
                is.push(loc.key("ap"), format!("no access point named '{ap}'"), json!(ap));
            }
            None if sc.aps.len() > 1 => {
                is.push(loc.key("ap"), "required when the scenario has more than one access point", json!(null));
            }
            _ => {}
        }
    }
    names
}

fn check_last_hop(lh: &LastHop, law: Option<&crate::mech::law::LawParams>, loc: &Loc, is: &mut Issues) {
    match lh {
        LastHop::Wired { rate_mbps, uplink_rate_mbps, delay_ms, queue } => {
            is.positive(loc.key("rate_mbps"), *rate_mbps);
            if let Some(u) = uplink_rate_mbps {
                is.positive(loc.key("uplink_rate_mbps"), *u);
            }
            is.non_negative(loc.key("delay_ms"), *delay_ms);
            check_queue(queue, &loc.key("queue"), is);
        }
        LastHop::Wifi(w) => super::validate_wifi::check_wifi(w, law, loc, is),
        LastHop::CapacityTrace { trace, format, delay_ms, uplink_rate_mbps, scale, queue } => {
            is.positive(loc.key("scale"), *scale);
            if let Err(e) = crate::link::trace_server(trace, *format, if scale.is_finite() && *scale > 0.0 { *scale } else { 1.0 }) {
                is.0.push(ScenarioIssue { kind: "trace_error".into(), loc: loc.key("trace"), msg: e, input: Some(json!(trace)) });
            }
            is.non_negative(loc.key("delay_ms"), *delay_ms);
            is.positive(loc.key("uplink_rate_mbps"), *uplink_rate_mbps);
            check_queue(queue, &loc.key("queue"), is);
        }
    }
}

/// The AP's mechanisms: each one's values, where it can run, and that no two claim one role.
fn check_mechanisms(sc: &Scenario, a: &AccessPoint, loc: &Loc, is: &mut Issues) {
    use crate::mech::Mechanism;
    if a.mechanism.is_some() && !a.mechanisms.is_empty() {
        is.push(loc.key("mechanism"), "give either `mechanism` or `mechanisms`, not both", json!(null));
    }
    let mut claims = check_node_mechanisms(sc, a, loc, is);
    for (rel, m) in a.mechanisms() {
        let at = loc.join(&rel);
        check_mechanism(sc, m, &at, is);
        if let crate::mech::MechanismConfig::Lastpq(p) = m {
            check_prioritized_flows(sc, a, p, &at, is);
        }
        match &a.last_hop {
            LastHop::Wifi(w) => check_needs_linux_path(m, &a.run_path(w), "ap_path", &at, is),
            _ if m.law().is_some() || m.sets_path_stage() => {
                is.push(at.key("type"), format!("`{}` needs a `wifi` last hop", m.kind()), json!(m.kind()));
            }
            _ => {}
        }
        let conflict = m.roles().iter().find_map(|&role| claims.iter().find(|(r, _)| *r == role).map(|(_, first)| (role, *first)));
        match conflict {
            Some((role, first)) => {
                let e = crate::mech::InstallError::Conflict { role, first: first.into(), second: m.kind().into() };
                is.push(at, e.to_string(), json!(m.kind()));
            }
            None => claims.extend(m.roles().iter().map(|&r| (r, m.kind()))),
        }
    }
}

/// A mechanism that sets a transmit-path stage needs a path that has the stage.
fn check_needs_linux_path(m: &crate::mech::MechanismConfig, path: &TxPathConfig, key: &str, at: &Loc, is: &mut Issues) {
    if let (Some(why), false) = (m.needs_linux_path(), matches!(path, TxPathConfig::Linux { .. })) {
        is.push(at.key("type"), format!("`{}` needs the `linux` transmit path here: {why} (set {key} = {{ type = \"linux\" }})", m.kind()), json!(m.kind()));
    }
}

/// The AP's `node_mechanisms` (every node of its BSS): transmit-path stages on AP and station paths
/// that have them. Returns the roles they claim on each node.
fn check_node_mechanisms<'a>(sc: &Scenario, a: &'a AccessPoint, loc: &Loc, is: &mut Issues) -> Vec<(crate::mech::Role, &'a str)> {
    let mut claims: Vec<(crate::mech::Role, &str)> = Vec::new();
    for (j, m) in a.node_mechanisms.iter().enumerate() {
        let at = loc.key("node_mechanisms").index(j);
        check_mechanism(sc, m, &at, is);
        if !m.runs_on_stations() {
            is.push(at.key("type"), format!("`{}` cannot run on every node (only transmit-path stages can: `qair`)", m.kind()), json!(m.kind()));
            continue;
        }
        match &a.last_hop {
            LastHop::Wifi(w) => {
                let (ap, sta) = (a.run_path(w), crate::mac::config::default_paths(w).1);
                check_needs_linux_path(m, &ap, "ap_path", &at, is);
                check_needs_linux_path(m, &sta, "sta_path", &at, is);
            }
            _ => is.push(at.key("type"), format!("`{}` needs a `wifi` last hop", m.kind()), json!(m.kind())),
        }
        claim_roles(m, &at, &mut claims, is);
    }
    claims
}

/// Records `m`'s roles, or reports a conflict with a mechanism already on the node.
fn claim_roles<'a>(m: &'a crate::mech::MechanismConfig, at: &Loc, claims: &mut Vec<(crate::mech::Role, &'a str)>, is: &mut Issues) {
    use crate::mech::Mechanism;
    if let Some(&(role, first)) = claims.iter().find(|(r, _)| m.roles().contains(r)) {
        let e = crate::mech::InstallError::Conflict { role, first: first.into(), second: m.kind().into() };
        is.push(at.clone(), e.to_string(), json!(m.kind()));
    } else {
        claims.extend(m.roles().iter().map(|&r| (r, m.kind())));
    }
}

/// A station's mechanisms: transmit-path stages only, on a station path that has them, one per role (its
/// AP's `node_mechanisms` come first).
fn check_station_mechanisms(sc: &Scenario, s: &Station, loc: &Loc, is: &mut Issues) {
    let ap = sc.find_ap_of(s).map(|ai| &sc.aps[ai]);
    let wifi = ap.and_then(|a| match &a.last_hop {
        LastHop::Wifi(w) => Some(w),
        _ => None,
    });
    let mut claims: Vec<(crate::mech::Role, &str)> = Vec::new();
    for m in ap.map(|a| a.node_mechanisms.as_slice()).unwrap_or_default() {
        claim_roles(m, loc, &mut claims, &mut Issues::default());
    }
    for (j, m) in s.mechanisms.iter().enumerate() {
        let at = loc.key("mechanisms").index(j);
        check_mechanism(sc, m, &at, is);
        if !m.runs_on_stations() {
            is.push(at.key("type"), format!("`{}` runs at an access point", m.kind()), json!(m.kind()));
            continue;
        }
        match wifi {
            Some(w) => check_needs_linux_path(m, &crate::mac::config::default_paths(w).1, "sta_path", &at, is),
            None => is.push(at.key("type"), format!("`{}` needs a `wifi` last hop", m.kind()), json!(m.kind())),
        }
        claim_roles(m, &at, &mut claims, is);
    }
}

/// LAST-PQ's flows: named flows that end at a station of this AP.
fn check_prioritized_flows(sc: &Scenario, a: &AccessPoint, p: &crate::mech::lastpq::LastPqParams, loc: &Loc, is: &mut Issues) {
    for (i, d) in p.flows.iter().enumerate() {
        let at = loc.key("flows").index(i).key("flow");
        let found = sc.flows.iter().enumerate().find(|(j, _)| sc.flow_name(*j) == d.flow);
        let Some((_, f)) = found else {
            is.push(at, format!("no flow named '{}'", d.flow), json!(d.flow));
            continue;
        };
        let to = f.common().to;
        let here = sc.stations.iter().find(|s| s.name == to).and_then(|s| sc.find_ap_of(s)).is_some_and(|ai| sc.aps[ai].name == a.name);
        if !here {
            is.push(at, format!("flow '{}' goes to '{to}', not to a station of '{}': LAST-PQ prioritizes the AP's downlink", d.flow, a.name), json!(d.flow));
        }
    }
}

fn check_mechanism(sc: &Scenario, m: &crate::mech::MechanismConfig, loc: &Loc, is: &mut Issues) {
    if let Err((path, reason)) = m.validate() {
        is.push(loc.dotted(&path), reason, json!(null));
    }
    let known = sc.flow_names();
    let named = [("flows", m.flows()), ("tagged_flows", if let crate::mech::MechanismConfig::Qair(q) = m { Some(q.tagged_flows.as_slice()) } else { None })];
    for (key, names) in named {
        for (i, n) in names.into_iter().flatten().enumerate() {
            if !known.contains(n) {
                is.push(loc.key(key).index(i), format!("no flow named '{n}'"), json!(n));
            }
        }
    }
}

fn check_tcp(tcp: &crate::transport::tcp::TcpParams, loc: &Loc, is: &mut Issues) {
    if !(536..=65_000).contains(&tcp.mss) {
        is.push(loc.key("tcp").key("mss"), "must be in 536..=65000", json!(tcp.mss));
    }
    is.positive(loc.key("tcp").key("delack_ms"), tcp.delack_ms);
    is.positive(loc.key("tcp").key("rto_min_ms"), tcp.rto_min_ms);
    if let Some(m) = tcp.max_pacing_rate_mbps {
        if !(m.is_finite() && (0.01..=1e5).contains(&m)) {
            is.push(loc.key("tcp").key("max_pacing_rate_mbps"), format!("must be between 0.01 and 100000 Mbit/s, got {}", super::shown(m)), json!(m));
        }
    }
    if let Err(e) = tcp.cc.validate() {
        is.push(loc.key("tcp").key("cc").key(e.field), e.reason, json!(null));
    }
}

pub(crate) fn check_queue(q: &QueueConfig, loc: &Loc, is: &mut Issues) {
    match q {
        QueueConfig::Fifo { packets, bytes } => {
            if *packets == Some(0) {
                is.push(loc.key("packets"), "must be at least 1", json!(0));
            }
            if *bytes == Some(0) {
                is.push(loc.key("bytes"), "must be at least 1", json!(0));
            }
            if packets.is_none() && bytes.is_none() {
                is.push(loc.clone(), "a fifo needs a bound: set `packets` and/or `bytes`", json!(null));
            }
        }
        QueueConfig::Codel(p) => param_issue(p.validate(), loc, is),
        QueueConfig::FqCodel(p) => param_issue(p.validate(), loc, is),
        QueueConfig::Pie(p) => param_issue(p.validate(), loc, is),
    }
}

fn param_issue(r: Result<(), crate::queue::ParamError>, loc: &Loc, is: &mut Issues) {
    if let Err(e) = r {
        // A nested parameter's field names its table: `codel.interval_us`.
        let at = e.field.split('.').fold(loc.clone(), |l, k| l.key(k));
        is.push(at, e.reason, json!(null));
    }
}

fn check_link(l: &WiredLink, loc: &Loc, names: &BTreeMap<String, NodeKind>, is: &mut Issues) {
    for (key, end) in [("a", &l.a), ("b", &l.b)] {
        match names.get(end) {
            None => is.push(loc.key(key), format!("no server or access point named '{end}'"), json!(end)),
            Some(NodeKind::Station) => {
                is.push(loc.key(key), format!("'{end}' is a station; stations reach the network through their AP"), json!(end))
            }
            Some(_) => {}
        }
    }
    if l.a == l.b {
        is.push(loc.key("b"), "a link must join two different nodes", json!(l.b));
    }
    is.positive(loc.key("rate_mbps"), l.rate_mbps);
    is.non_negative(loc.key("delay_ms"), l.delay_ms);
    check_queue(&l.queue, &loc.key("queue"), is);
}

fn check_packet_bytes(b: u32, loc: &Loc, is: &mut Issues) {
    if !(28..=65535).contains(&b) {
        is.push(loc.key("packet_bytes"), "must be in 28..=65535 (IP packet size)", json!(b));
    }
}

fn check_flow(sc: &Scenario, f: &Flow, loc: &Loc, names: &BTreeMap<String, NodeKind>, is: &mut Issues) {
    check_flow_common(sc, f.common(), loc, names, is);
    match f {
        Flow::UdpCbr(UdpCbr { rate_mbps, packet_bytes, .. }) | Flow::UdpPoisson(UdpPoisson { rate_mbps, packet_bytes, .. }) => {
            is.positive(loc.key("rate_mbps"), *rate_mbps);
            check_packet_bytes(*packet_bytes, loc, is);
        }
        Flow::TcpVideo(TcpVideo { deadline_ms, video, tcp, .. }) => {
            is.positive(loc.key("deadline_ms"), *deadline_ms);
            if let Err((field, reason)) = video.validate() {
                is.push(loc.key("video").key(field), reason, json!(null));
            }
            check_tcp(tcp, loc, is);
        }
        Flow::Tcp(Tcp { bytes, tcp, .. }) => {
            if *bytes == Some(0) {
                is.push(loc.key("bytes"), "must be at least 1", json!(0));
            }
            check_tcp(tcp, loc, is);
        }
        Flow::Rtc(Rtc { deadline_ms, rtc, .. }) => {
            is.positive(loc.key("deadline_ms"), *deadline_ms);
            if let Err((path, reason)) = rtc.validate() {
                let mut at = loc.key("rtc");
                for part in path.split('.') {
                    at = at.key(part);
                }
                is.push(at, reason, json!(null));
            }
        }
        Flow::Ping(Ping { interval_ms, packet_bytes, .. }) => {
            is.positive(loc.key("interval_ms"), *interval_ms);
            check_packet_bytes(*packet_bytes, loc, is);
            // The pinger is a constant-rate source of one packet per interval.
            let longest_ms = *packet_bytes as f64 * 8.0 * 1e3;
            if interval_ms.is_finite() && *interval_ms > longest_ms {
                is.push(loc.key("interval_ms"), format!("must be at most {longest_ms} ms for {packet_bytes}-byte packets (1 bit/s), got {interval_ms:e}"), json!(interval_ms));
            }
        }
        Flow::External(External { rtp: Some(r), .. }) => {
            if !(1..=14).contains(&r.twcc_extension_id) {
                is.push(loc.key("rtp").key("twcc_extension_id"), format!("must be a one-byte header extension ID, 1..=14, got {}", r.twcc_extension_id), json!(r.twcc_extension_id));
            }
        }
        Flow::External(_) => {}
        Flow::Saturated(Saturated { packet_bytes, backlog, .. }) => {
            check_packet_bytes(*packet_bytes, loc, is);
            if *backlog == 0 {
                is.push(loc.key("backlog"), "must be at least 1", json!(backlog));
            }
        }
    }
}

/// The fields every flow has: its endpoints, its times and its DSCP.
fn check_flow_common(sc: &Scenario, c: FlowCommon<'_>, loc: &Loc, names: &BTreeMap<String, NodeKind>, is: &mut Issues) {
    for (key, end) in [("from", c.from), ("to", c.to)] {
        if !names.contains_key(end) {
            is.push(loc.key(key), format!("no node named '{end}'"), json!(end));
        }
    }
    if c.from == c.to {
        is.push(loc.key("to"), "a flow needs two different endpoints", json!(c.to));
    } else if names.contains_key(c.from) && names.contains_key(c.to) && !crate::sim::topology::reachable(sc, c.from, c.to) {
        is.push(loc.key("to"), format!("'{}' cannot be reached from '{}': add a link", c.to, c.from), json!(c.to));
    }
    is.non_negative(loc.key("start_s"), c.start_s);
    if c.start_s.is_finite() && sc.duration_s.is_finite() && sc.duration_s > 0.0 && c.start_s >= sc.duration_s {
        is.push(loc.key("start_s"), format!("starts after the run ends (duration_s = {})", super::shown(sc.duration_s)), json!(c.start_s));
    }
    if let Some(stop) = c.stop_s {
        if !(stop.is_finite() && stop > c.start_s) {
            is.push(loc.key("stop_s"), format!("must be after start_s ({})", super::shown(c.start_s)), json!(stop));
        } else {
            is.non_negative(loc.key("stop_s"), stop);
        }
    }
    if c.dscp > 63 {
        is.push(loc.key("dscp"), "must be in 0..=63", json!(c.dscp));
    }
}

fn check_commands(sc: &Scenario, is: &mut Issues) {
    let before = crate::sim::command::adds_before(sc, 0..sc.commands.len());
    for (i, c) in sc.commands.iter().enumerate() {
        let loc = Loc::root().key("commands").index(i);
        if !(c.at_s.is_finite() && (0.0..=sc.duration_s).contains(&c.at_s)) {
            is.push(loc.key("at_s"), format!("must be within the run, 0..={} s", super::shown(sc.duration_s)), json!(c.at_s));
        }
        if let Err((key, msg)) = crate::sim::command::resolve(sc, &c.target, &c.set, &before[i]) {
            match key {
                // A nested key (`demand_ms.vr`, `add_flows.0.flow`) as its path inside `set`, with the
                // value there (a JSON pointer takes list indices as they are).
                Some(k) => {
                    let pointer: String = k.split('.').filter(|p| !p.is_empty()).map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1"))).collect();
                    let value = serde_json::Value::Object(c.set.clone()).pointer(&pointer).cloned();
                    is.push(loc.key("set").dotted(&k), msg, value.unwrap_or(json!(null)))
                }
                None => is.push(loc.key("target"), msg, json!(c.target)),
            }
        }
    }
}

/// `output`: a sampling step only with `packets = "sampled"` (and at least 1), flows that exist.
fn check_output(sc: &Scenario, loc: &Loc, is: &mut Issues) {
    let o = &sc.output;
    match (o.packets.mode(), o.sample_every) {
        (PacketsMode::Sampled, Some(0)) => is.push(loc.key("sample_every"), "must be at least 1", json!(0)),
        (PacketsMode::Sampled, _) => {}
        (_, Some(n)) => is.push(loc.key("sample_every"), "only with packets = \"sampled\"", json!(n)),
        _ => {}
    }
    let names = sc.flow_names();
    let listed: Vec<&String> = o.flows.iter().flatten().collect();
    for (i, f) in listed.iter().enumerate() {
        if !names.contains(f) {
            is.push(loc.key("flows").index(i), format!("no flow named '{f}' (the flows: {})", names.join(", ")), json!(f));
        } else if let Some(j) = listed[..i].iter().position(|g| g == f) {
            is.push(loc.key("flows").index(i), format!("'{f}' is listed already (flows[{j}])"), json!(f));
        }
    }
    if o.flows.is_some() && o.packets.mode() == PacketsMode::None {
        is.push(loc.key("flows"), "selects the flows whose packets are logged; with packets = \"none\" none are (leave it out, or log \"all\" or \"sampled\")", json!(null));
    }
}
