//! Run-time commands: a change of a component's parameter at a given instant, from the scenario
//! (`commands = [{ at_s, target, set }]`, delivered as engine events) or from a caller stepping a
//! [`super::Sim`] (`Sim::command`, at the current time; the emulator's control socket feeds the same
//! commands to its `Sim`). A stepped command that would make a scripted one still to come unusable is
//! refused.
//!
//! | target | keys of `set` |
//! |---|---|
//! | `flows.<name>` (a `udp_cbr` or `udp_poisson` flow) | `rate_mbps` (1e-6..=1e6, 1 bit/s to 1 Tbit/s, as in a scenario): the rate from the next packet on |
//! | `stations.<name>` (a station of a Wi-Fi last hop) | `snr_db`: the mean SNR of both its links from now on (fading stays) |
//! | `aps.<name>.law` (an AP that runs Law) | `limit_q_ms`, `limit_h_ms` (0.001..=10000, as in a scenario): Law's limits from now on |
//! | `aps.<name>.hw` (an AP whose `linux` path has `hw_time_limit_us`) | `time_limit_us` (100..=1000000): the hardware time limit of the PSDUs that reach the head of a hardware queue from now on |
//! | `aps.<name>.lastpq` (an AP that runs LAST-PQ) | `demand_ms = { <flow> = ms }`, `percentile = { <flow> = β }`: a prioritized flow's demand from the next window on; `add_flows = [{ flow, demand_ms, percentile }]` (as LAST-PQ's `flows`): flows to prioritize from their next packet on (spec §16 `add_flow`) |
//! | `aps.<name>.<mechanism>` | what that mechanism's hook accepts (Zhuge, FastAck and ABC take none) |
//!
//! A command is resolved against the scenario and the commands that run before it ([`resolve`]): an
//! unknown target, a key the target does not take, or a bad value is an error naming the key.

use crate::packet::NodeId;
use crate::scenario::{Flow, LastHop, Scenario};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `commands = [{ at_s = 10, target = "flows.video", set = { rate_mbps = 5 } }]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// When it takes effect, seconds from the start (0 ≤ at_s ≤ duration_s).
    pub at_s: f64,
    /// What it changes: `flows.<name>`, `stations.<name>`, `aps.<name>.<mechanism>` or `aps.<name>.hw`
    /// (an AP's hardware time limit).
    pub target: String,
    /// The parameters to set, with their new values, per target: `flows.<name>` (`udp_cbr`,
    /// `udp_poisson`): `rate_mbps`; `stations.<name>`: `snr_db`; `aps.<name>.law`: `limit_q_ms`,
    /// `limit_h_ms`; `aps.<name>.hw`: `time_limit_us`; `aps.<name>.lastpq`: `demand_ms = { <flow> = ms
    /// }`, `percentile = { <flow> = β }`, `add_flows = [{ flow, demand_ms, percentile }]` (flows
    /// prioritized from then on).
    pub set: Map<String, Value>,
}

/// A resolved command target.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Target {
    /// A UDP flow (index); its new rate.
    FlowRate(u32, f64),
    /// A Wi-Fi station's node; its new mean SNR.
    StationSnr(NodeId, f64),
    /// The transmit path of an AP node (Law's driver, or the driver policy in ath9k's: LAST-PQ): the
    /// `set` table.
    Path(NodeId),
    /// The hook of mechanism `kind` at AP node `ap`.
    Hook { ap: NodeId, kind: &'static str },
}

/// Why a command cannot run: the key of `set` at fault (`None`: the target) and a message.
pub(crate) type Refusal = (Option<String>, String);

fn only(set: &Map<String, Value>, keys: &[&str]) -> Result<(), Refusal> {
    match set.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err((Some(k.clone()), format!("unknown key; this target takes {}", keys.join(", ")))),
        None if set.is_empty() => Err((Some(String::new()), format!("`set` is empty; this target takes {}", keys.join(", ")))),
        None => Ok(()),
    }
}

fn number(set: &Map<String, Value>, key: &str, ok: impl Fn(f64) -> bool, want: &str) -> Result<Option<f64>, Refusal> {
    match set.get(key) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if ok(x) => Ok(Some(x)),
            _ => Err((Some(key.into()), format!("must be {want}, got {}", v.as_f64().map_or_else(|| v.to_string(), crate::scenario::shown)))),
        },
    }
}

fn positive(set: &Map<String, Value>, key: &str) -> Result<Option<f64>, Refusal> {
    number(set, key, |x| x.is_finite() && x > 0.0, "a positive number")
}

/// For each of `indices`, the scenario's commands that run before that one and add to what later ones
/// may name (LAST-PQ's `add_flows`): earlier in time, or at the same instant and listed before it
/// (commands of one instant run in list order). A command whose `at_s` is no time (refused at its own
/// path) is left out. The adds are read once, so a scenario with many commands, as a long control
/// session records, resolves in time linear in them when few add.
pub(crate) fn adds_before(sc: &Scenario, indices: impl IntoIterator<Item = usize>) -> Vec<Vec<&CommandConfig>> {
    let t = |c: &CommandConfig| crate::time::SimDuration::from_secs_f64(c.at_s);
    let adds: Vec<(usize, crate::time::SimDuration, &CommandConfig)> =
        sc.commands.iter().enumerate().filter(|(_, c)| c.set.contains_key("add_flows")).filter_map(|(j, c)| Some((j, t(c)?, c))).collect();
    indices
        .into_iter()
        .map(|i| match t(&sc.commands[i]) {
            Some(me) => adds.iter().filter(|&&(j, tc, _)| tc < me || (tc == me && j < i)).map(|&(_, _, c)| c).collect(),
            None => Vec::new(),
        })
        .collect()
}

/// Resolves `target` with `set` against the scenario and the commands that ran before (`earlier`,
/// which matter where one adds what a later one changes: LAST-PQ's `add_flows`).
pub(crate) fn resolve(sc: &Scenario, target: &str, set: &Map<String, Value>, earlier: &[&CommandConfig]) -> Result<Target, Refusal> {
    let unknown = || (None, format!("unknown target '{target}': use flows.<name>, stations.<name>, aps.<name>.<mechanism> or aps.<name>.hw"));
    let (kind, rest) = target.split_once('.').ok_or_else(unknown)?;
    match kind {
        "flows" => resolve_flow(sc, rest, set),
        "stations" => resolve_station(sc, rest, set),
        "aps" => resolve_ap(sc, rest, set, earlier),
        _ => Err(unknown()),
    }
}

fn resolve_flow(sc: &Scenario, name: &str, set: &Map<String, Value>) -> Result<Target, Refusal> {
    let found = sc.flows.iter().enumerate().find(|(i, _)| sc.flow_name(*i) == name);
    let Some((i, f)) = found else { return Err((None, format!("no flow named '{name}'"))) };
    if !matches!(f, Flow::UdpCbr(_) | Flow::UdpPoisson(_)) {
        return Err((None, format!("flow '{name}' is `{}`; run-time commands change `udp_cbr` and `udp_poisson` flows", f.kind())));
    }
    only(set, &["rate_mbps"])?;
    let rate = positive(set, "rate_mbps")?.expect("only key");
    // The scenario's own bounds for a rate (1 bit/s to 1 Tbit/s): a faster source floods the run's
    // memory with packets.
    if rate > crate::scenario::MAX_RATE_MBPS {
        return Err((Some("rate_mbps".into()), format!("must be at most 1e6 Mbit/s (1 Tbit/s), got {}", crate::scenario::shown(rate))));
    }
    if crate::units::BitRate::from_mbps_f64(rate).is_none() {
        return Err((Some("rate_mbps".into()), format!("must be at least 1 bit/s (1e-6 Mbit/s), got {}", crate::scenario::shown(rate))));
    }
    Ok(Target::FlowRate(i as u32, rate))
}

fn resolve_station(sc: &Scenario, name: &str, set: &Map<String, Value>) -> Result<Target, Refusal> {
    let Some(si) = sc.stations.iter().position(|s| s.name == name) else {
        if let Some((st, _)) = name.split_once('.').filter(|(st, _)| sc.stations.iter().any(|s| s.name == *st)) {
            return Err((None, format!("a station's target is stations.{st} (its snr_db); mechanisms are commanded at their AP, aps.<name>.<mechanism>")));
        }
        return Err((None, format!("no station named '{name}'")));
    };
    let Some(ai) = sc.find_ap_of(&sc.stations[si]) else { return Err((None, format!("station '{name}' has no AP"))) };
    if !matches!(sc.aps[ai].last_hop, LastHop::Wifi(_)) {
        return Err((None, format!("station '{name}' has no radio channel (its AP's last hop is not `wifi`)")));
    }
    only(set, &["snr_db"])?;
    let snr = number(set, "snr_db", |x| crate::channel::SNR_RANGE_DB.contains(&x), "a number of dB in -30..=100")?.expect("only key");
    Ok(Target::StationSnr((sc.servers.len() + sc.aps.len() + si) as NodeId, snr))
}

fn resolve_ap(sc: &Scenario, rest: &str, set: &Map<String, Value>, earlier: &[&CommandConfig]) -> Result<Target, Refusal> {
    let Some((name, mech)) = rest.rsplit_once('.') else { return Err((None, format!("use aps.{rest}.<mechanism>"))) };
    let Some(ai) = sc.aps.iter().position(|a| a.name == name) else {
        if let Some((ap, more)) = rest.split_once('.').filter(|(ap, _)| sc.aps.iter().any(|a| a.name == *ap)) {
            let mech = more.split('.').next().unwrap_or(more);
            let example = if mech == "lastpq" { " (e.g. demand_ms = { <flow> = 20 })" } else { "" };
            return Err((None, format!("a target ends at the mechanism, aps.{ap}.{mech}; what it changes goes in `set`{example}")));
        }
        return Err((None, format!("no access point named '{name}'")));
    };
    if mech == "hw" {
        return resolve_hw(sc, ai, set);
    }
    let Some((_, m)) = sc.aps[ai].mechanisms().find(|(_, m)| m.kind() == mech) else {
        return Err((None, format!("access point '{name}' runs no mechanism `{mech}`")));
    };
    use crate::mech::Mechanism;
    let keys = m.command_keys();
    if keys.is_empty() {
        let key = set.keys().next().cloned();
        return Err((key, format!("mechanism `{mech}` takes no run-time commands")));
    }
    only(set, keys)?;
    if m.law().is_some() {
        for key in ["limit_q_ms", "limit_h_ms"] {
            number(set, key, |x| crate::mech::law::LIMIT_MS.contains(&x), "a number of milliseconds in 0.001..=10000")?;
        }
        return Ok(Target::Path(crate::sim::topology::ap_node(sc, ai)));
    }
    if let crate::mech::MechanismConfig::Lastpq(p) = m {
        let target = format!("aps.{rest}");
        let added: Vec<&Value> = earlier.iter().filter(|c| c.target == target).filter_map(|c| c.set.get("add_flows")).collect();
        resolve_lastpq(sc, ai, &target, p, &added, set)?;
        return Ok(Target::Path(crate::sim::topology::ap_node(sc, ai)));
    }
    Ok(Target::Hook { ap: crate::sim::topology::ap_node(sc, ai), kind: m.kind() })
}

/// `aps.<name>.hw`: the hardware time limit of an AP whose `linux` path was given one (the medium
/// enforces deadlines only on such paths, and Law's stages set theirs with `limit_h_ms`).
fn resolve_hw(sc: &Scenario, ai: usize, set: &Map<String, Value>) -> Result<Target, Refusal> {
    let a = &sc.aps[ai];
    let limited = match &a.last_hop {
        LastHop::Wifi(w) => matches!(crate::mac::config::default_paths(w).0, crate::mac::wifi_config::TxPathConfig::Linux { hw_time_limit_us: Some(_), .. }),
        _ => false,
    };
    if !limited || a.mechanisms().any(|(_, m)| m.law().is_some()) {
        return Err((None, format!("access point '{}' has no hardware time limit to change: give its `linux` path one (ap_path = {{ type = \"linux\", hw_time_limit_us = ... }})", a.name)));
    }
    only(set, &["time_limit_us"])?;
    number(set, "time_limit_us", |x| (100.0..=1e6).contains(&x), "a number of µs in 100..=1000000")?;
    Ok(Target::Path(crate::sim::topology::ap_node(sc, ai)))
}

/// LAST-PQ's `add_flows` (flows of this AP's downlink, not prioritized yet, each with a usable demand)
/// and `demand_ms = { <flow> = ms }` / `percentile = { <flow> = β }` (tables of numbers for prioritized
/// flows: the scenario's, those `added` by earlier commands and by this one). A changed flow's demand
/// must be usable with the other field as the flow was given it.
fn resolve_lastpq(sc: &Scenario, ai: usize, target: &str, p: &crate::mech::lastpq::LastPqParams, added: &[&Value], set: &Map<String, Value>) -> Result<(), Refusal> {
    use crate::mech::lastpq::FlowDemand;
    let c = p.controller();
    let mut known: Vec<FlowDemand> = p.flows.clone();
    // Earlier commands were resolved when they were given, so their lists parse.
    known.extend(added.iter().filter_map(|v| serde_json::from_value::<Vec<FlowDemand>>((*v).clone()).ok()).flatten());
    if let Some(v) = set.get("add_flows") {
        let list = v.as_array().filter(|l| !l.is_empty()).ok_or_else(|| (Some("add_flows".to_string()), format!("must be a non-empty list of {{ flow, demand_ms, percentile }}, e.g. add_flows = [{{ flow = \"t1\", demand_ms = 30 }}], got {v}")))?;
        for (i, item) in list.iter().enumerate() {
            let at = |k: &str| Some(format!("add_flows.{i}{}{k}", if k.is_empty() { "" } else { "." }));
            let entry = "an entry is a table { flow = \"<name>\", demand_ms = <ms>, percentile = <β, default 95> }";
            if !item.is_object() {
                return Err((at(""), format!("{entry}, got {item}")));
            }
            let d: FlowDemand = serde_json::from_value(item.clone()).map_err(|e| (at(""), format!("{e} ({entry})")))?;
            let Some(j) = (0..sc.flows.len()).find(|&j| sc.flow_name(j) == d.flow) else {
                return Err((at("flow"), format!("no flow named '{}'", d.flow)));
            };
            let to = &sc.flows[j].common().to;
            if sc.stations.iter().find(|s| s.name == *to).and_then(|s| sc.find_ap_of(s)) != Some(ai) {
                return Err((at("flow"), format!("flow '{}' goes to '{to}', not to a station of '{}': LAST-PQ prioritizes the AP's downlink", d.flow, sc.aps[ai].name)));
            }
            if known.iter().any(|k| k.flow == d.flow) {
                return Err((at("flow"), format!("'{}' is prioritized already", d.flow)));
            }
            crate::mech::lastpq::check_demand(&c, d.demand_ms, d.percentile).map_err(|(k, r)| (at(k), r))?;
            known.push(d);
        }
    }
    let value = |key: &str, name: &str| set.get(key).and_then(|t| t.get(name)).and_then(Value::as_f64);
    for (key, v) in set.iter().filter(|(k, _)| *k != "add_flows") {
        let Some(table) = v.as_object().filter(|t| !t.is_empty()) else {
            return Err((Some(key.clone()), format!("must be a non-empty table of flow name = value, e.g. {key} = {{ vr = 15 }}, got {v}")));
        };
        for (name, x) in table {
            let at = |field: &str| Some(format!("{field}.{name}"));
            let Some(d) = known.iter().find(|d| d.flow == *name) else {
                let names: Vec<&str> = known.iter().map(|d| d.flow.as_str()).collect();
                let here = if names.is_empty() { "none yet".to_string() } else { names.join(", ") };
                // A scenario command that adds it, but only after this one, is the likely slip.
                let later = sc.commands.iter().enumerate().find(|(_, c)| {
                    c.target == target && c.set.get("add_flows").and_then(Value::as_array).is_some_and(|l| l.iter().any(|e| e.get("flow").and_then(Value::as_str) == Some(name.as_str())))
                });
                let hint = match later {
                    Some((k, c)) => format!("commands[{k}] adds it at {} s, after this command", crate::scenario::shown(c.at_s)),
                    None => "add it with add_flows".into(),
                };
                return Err((at(key), format!("'{name}' is not a flow LAST-PQ prioritizes here (it prioritizes {here}; {hint})")));
            };
            if !x.is_number() {
                return Err((at(key), format!("must be a number, got {x}")));
            }
            let (ms, pct) = (value("demand_ms", name).unwrap_or(d.demand_ms), value("percentile", name).unwrap_or(d.percentile));
            crate::mech::lastpq::check_demand(&c, ms, pct).map_err(|(field, r)| (at(field), r))?;
        }
    }
    Ok(())
}

impl super::world::World {
    /// Applies a resolved command now.
    pub(super) fn apply_command(&mut self, now: crate::time::SimTime, t: &Target, set: &Map<String, Value>) -> Result<(), Refusal> {
        match *t {
            Target::FlowRate(f, mbps) => {
                if let Some(h) = self.sources[f as usize].host.as_mut() {
                    h.set_rate(crate::units::BitRate::from_mbps_f64(mbps).expect("resolved"));
                }
            }
            Target::StationSnr(node, db) => self.medium.as_mut().expect("a Wi-Fi station has a medium").set_mean_snr(node, db),
            Target::Path(ap) => {
                let path = self.medium.as_mut().and_then(|m| m.path_mut(ap)).expect("resolved: the AP runs the mechanism on its path");
                path.on_command(now, set).map_err(|(k, msg)| (Some(k), msg))?;
            }
            Target::Hook { ap, kind } => return self.mech_command(now, ap, kind, set),
        }
        Ok(())
    }
}
