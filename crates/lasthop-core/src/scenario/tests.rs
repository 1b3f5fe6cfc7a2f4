use super::*;
use std::path::Path;

const OK: &str = r#"
duration_s = 2
[[servers]]
name = "srv"
[[aps]]
name = "ap"
last_hop = { type = "wired", rate_mbps = 50, delay_ms = 1 }
[[stations]]
name = "sta"
[[links]]
a = "srv"
b = "ap"
rate_mbps = 100
delay_ms = 5
[[flows]]
type = "udp_cbr"
from = "srv"
to = "sta"
rate_mbps = 10
"#;

fn err(text: &str) -> ScenarioError {
    Scenario::from_toml_str(text, Path::new(".")).expect_err("should be rejected")
}

#[test]
fn valid_scenario_parses_with_defaults() {
    let sc = Scenario::from_toml_str(OK, Path::new(".")).unwrap();
    assert_eq!(sc.seed, 1);
    let Flow::UdpCbr(f) = &sc.flows[0] else { panic!() };
    assert_eq!(f.packet_bytes, 1200);
    assert_eq!(sc.links[0].queue, QueueConfig::Fifo { packets: Some(1000), bytes: None });
}

/// Flow names key the results and name flows elsewhere: a second flow with a name already taken (an
/// unnamed flow's `flow<i>` included) is an error at its name.
#[test]
fn duplicate_flow_names_are_rejected() {
    let flow = "[[flows]]\nname = \"flow0\"\ntype = \"udp_cbr\"\nfrom = \"srv\"\nto = \"sta\"\nrate_mbps = 1\n";
    let e = err(&format!("{OK}{flow}"));
    assert_eq!(e.issues[0].loc.to_string(), "flows[1].name", "{e}");
    assert_eq!(e.issues[0].msg, "duplicate flow name 'flow0' (also flows[0])");
    assert!(Scenario::from_toml_str(&format!("{OK}{}", flow.replace("flow0", "other")), Path::new(".")).is_ok());
}

#[test]
fn unknown_key_names_its_path() {
    let e = err(&OK.replace("rate_mbps = 10\n", "rate_mbps = 10\nrtae = 3\n"));
    assert_eq!(e.issues[0].kind, "unknown_field");
    assert_eq!(e.issues[0].loc.to_string(), "flows[0].rtae");
    let e = err(&OK.replace("delay_ms = 1 }", "delay_ms = 1, queue = { type = \"fifo\", pakets = 5 } }"));
    // Nested tagged tables: the key is located in the inner one.
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.queue.pakets", "{e}");
    let e = err(&format!("bogus = 1\n{OK}"));
    assert_eq!(e.issues[0].loc.to_string(), "bogus");
}

#[test]
fn wrong_type_and_unknown_variant() {
    let e = err(&OK.replace("rate_mbps = 10\n", "rate_mbps = \"fast\"\n"));
    assert_eq!(e.issues[0].kind, "invalid_type");
    assert_eq!(e.issues[0].loc.to_string(), "flows[0].rate_mbps", "{e}");
    // Two levels of tagged tables, and a negative count into an unsigned field.
    let e = err(&OK.replace("delay_ms = 1 }", "delay_ms = 1, queue = { type = \"fifo\", packets = -5 } }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.queue.packets", "{e}");
    let e = err(&OK.replace("type = \"udp_cbr\"", "type = \"udp_cbx\""));
    assert_eq!(e.issues[0].kind, "unknown_type");
    assert!(e.to_string().contains("udp_cbx"), "{e}");
}

#[test]
fn impossible_values_are_all_reported() {
    let text = OK.replace("duration_s = 2", "duration_s = -1").replace("rate_mbps = 10\n", "rate_mbps = 0\n");
    let e = err(&text);
    let locs: Vec<String> = e.issues.iter().map(|i| i.loc.to_string()).collect();
    assert!(locs.contains(&"duration_s".to_string()), "{locs:?}");
    assert!(locs.contains(&"flows[0].rate_mbps".to_string()), "{locs:?}");
}

#[test]
fn references_are_checked() {
    let e = err(&OK.replace("to = \"sta\"", "to = \"nobody\""));
    assert_eq!(e.issues[0].loc.to_string(), "flows[0].to");
    // A server with no link cannot reach the station.
    let e = err(&OK.replace("[[links]]\na = \"srv\"", "[[servers]]\nname = \"lonely\"\n[[links]]\na = \"srv\"").replace("from = \"srv\"", "from = \"lonely\""));
    assert!(e.to_string().contains("cannot be reached"), "{e}");
}

#[test]
fn schema_is_generated() {
    let s = json_schema();
    assert!(s["properties"]["duration_s"].is_object());
    assert_eq!(s["additionalProperties"], serde_json::json!(false));
}

/// `mechanism = { type = "law", ... }` on a Wi-Fi last hop: defaults fill in; unknown keys, wrong
/// types and impossible values come back as errors with their paths; what Law replaces must be unset.
#[test]
fn law_mechanism_is_checked_with_paths() {
    // `mechanism = {...}` goes on the AP, anything after it (", key = ...") on the last hop.
    let wifi = |m: &str| {
        let (mech, hop) = m.split_once("}, ").map(|(a, b)| (format!("{a}}}"), format!(", {b}"))).unwrap_or((m.to_string(), String::new()));
        OK.replace("last_hop = { type = \"wired\", rate_mbps = 50, delay_ms = 1 }", &format!("{mech}\nlast_hop = {{ type = \"wifi\"{hop} }}"))
    };
    let sc = Scenario::from_toml_str(&wifi("mechanism = { type = \"law\", limit_q_ms = 54 }"), Path::new(".")).unwrap();
    let Some(p) = sc.aps[0].law() else { panic!() };
    assert_eq!((p.limit_q_ms, p.limit_h_ms, p.hw_psdus, p.sw_retries), (54.0, 3.0, 2, 1));
    let e = err(&wifi("mechanism = { type = \"law\", limit_qq_ms = 54 }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanism.limit_qq_ms", "{e}");
    let e = err(&wifi("mechanism = { type = \"law\", limit_h_ms = \"3\" }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanism.limit_h_ms", "{e}");
    let e = err(&wifi("mechanism = { type = \"law\", limit_h_ms = -3 }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanism.limit_h_ms", "{e}");
    assert!(e.to_string().contains("must be a number of milliseconds in 0.001..=10000, got -3"), "{e}");
    let e = err(&wifi("mechanism = { type = \"law\", ewma_old_weight = 1.0 }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanism.ewma_old_weight", "{e}");
    let e = err(&wifi("mechanism = { type = \"lawful\" }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanism.type", "{e}");
    let e = err(&wifi("mechanism = { type = \"law\" }, ap_path = { type = \"linux\" }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.ap_path", "{e}");
    let e = err(&wifi("mechanism = { type = \"law\" }, rate_control = { type = \"minstrel_ht\" }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.rate_control", "{e}");
    let e = err(&wifi("mechanism = { type = \"law\" }").replace("name = \"sta\"\n", "name = \"sta\"\ndownlink_rate_control = { type = \"thompson\" }\n"));
    assert_eq!(e.issues[0].loc.to_string(), "stations[0].downlink_rate_control", "{e}");
    let s = json_schema().to_string();
    assert!(s.contains("limit_q_ms") && s.contains("MechanismConfig"), "the schema documents the mechanism");
}

/// `mechanisms = [...]`: several mechanisms on one AP, each checked at its own path; two that fill one
/// role, `mechanism` and `mechanisms` together, and Law off Wi-Fi are errors where they are written.
#[test]
fn mechanism_lists_are_checked_with_paths() {
    let ap = |m: &str, hop: &str| OK.replace("last_hop = { type = \"wired\", rate_mbps = 50, delay_ms = 1 }", &format!("{m}\nlast_hop = {hop}"));
    let wifi = "{ type = \"wifi\" }";
    let sc = Scenario::from_toml_str(&ap("mechanisms = [{ type = \"law\" }, { type = \"zhuge\" }]", wifi), Path::new(".")).unwrap();
    let kinds: Vec<String> = sc.aps[0].mechanisms().map(|(loc, m)| format!("{loc}={}", m.kind())).collect();
    assert_eq!(kinds, ["mechanisms[0]=law", "mechanisms[1]=zhuge"]);
    assert!(sc.aps[0].law().is_some());
    let e = err(&ap("mechanisms = [{ type = \"zhuge\" }, { type = \"fastack\" }]", wifi));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanisms[1]", "{e}");
    assert_eq!(e.issues[0].msg, "zhuge and fastack both act on the flows' feedback");
    let e = err(&ap("mechanisms = [{ type = \"law\" }, { type = \"abc\" }, { type = \"law\" }]", wifi));
    assert_eq!((e.issues.len(), e.issues[0].loc.to_string()), (1, "aps[0].mechanisms[2]".into()), "{e}");
    assert_eq!(e.issues[0].msg, "law and law both set the driver's policy");
    let e = err(&ap("mechanisms = [{ type = \"zhuge\", profile = \"exact\" }]", wifi));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanisms[0].profile", "{e}");
    let e = err(&ap("mechanisms = [{ type = \"abc\" }, { type = \"law\" }]", "{ type = \"wired\", rate_mbps = 50 }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanisms[1].type", "{e}");
    let e = err(&ap("mechanism = { type = \"abc\" }\nmechanisms = [{ type = \"zhuge\" }]", wifi));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].mechanism", "{e}");
    // The list form is written back only when used, so resolved files of one-mechanism APs keep their bytes.
    let one = Scenario::from_toml_str(&ap("mechanism = { type = \"abc\" }", wifi), Path::new(".")).unwrap();
    assert!(one.to_json()["aps"][0].get("mechanisms").is_none());
    assert_eq!(sc.to_json()["aps"][0]["mechanisms"][1]["type"], "zhuge");
}

/// `rate_control = { type = "llra", ... }` parses with a nested Minstrel table; a bad value names the
/// rate-control table and the field.
#[test]
fn llra_rate_control_is_checked() {
    let wifi = |rc: &str| OK.replace("last_hop = { type = \"wired\", rate_mbps = 50, delay_ms = 1 }", &format!("last_hop = {{ type = \"wifi\", rate_control = {rc} }}"));
    let sc = Scenario::from_toml_str(&wifi("{ type = \"llra\", delay_budget_ms = 30, minstrel = { max_rates = 1, max_retry = 7 } }"), Path::new(".")).unwrap();
    let LastHop::Wifi(w) = &sc.aps[0].last_hop else { panic!() };
    let Some(RateControlConfig::Llra(p)) = &w.rate_control else { panic!() };
    assert_eq!((p.delay_budget_ms, p.quantile, p.minstrel.max_rates, p.minstrel.max_retry), (30.0, 0.99, 1, 7));
    let e = err(&wifi("{ type = \"llra\", quantile = 1.5 }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.rate_control", "{e}");
    assert!(e.to_string().contains("quantile"), "{e}");
}

/// The Linux transmit path's driver settings are checked with their paths whether or not a qdisc is
/// set: a zero hardware-queue depth, a t_irq beyond 1 ms, a hardware time limit under 100 µs.
#[test]
fn linux_path_settings_are_checked_with_paths() {
    let hop = |path: &str| OK.replace("last_hop = { type = \"wired\", rate_mbps = 50, delay_ms = 1 }", &format!("last_hop = {{ type = \"wifi\", ap_path = {path} }}"));
    assert!(Scenario::from_toml_str(&hop("{ type = \"linux\", t_irq_us = 30 }"), Path::new(".")).is_ok());
    let e = err(&hop("{ type = \"linux\", t_irq_us = 5000 }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.ap_path.t_irq_us", "{e}");
    assert!(e.to_string().contains("at most 1000"), "{e}");
    assert!(Scenario::from_toml_str(&hop("{ type = \"linux\", hw_time_limit_us = 3000 }"), Path::new(".")).is_ok());
    let e = err(&hop("{ type = \"linux\", hw_time_limit_us = 50 }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.ap_path.hw_time_limit_us", "{e}");
    let e = err(&hop("{ type = \"linux\", hw_depth_aggr = 0 }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.ap_path.hw_depth_aggr", "{e}");
}

/// `hidden_nodes` names two different Wi-Fi nodes that do not exchange frames; every other pair is an
/// error at its path.
#[test]
fn hidden_nodes_are_checked_with_paths() {
    let sc = |hidden: &str| {
        format!(
            "duration_s = 1\nhidden_nodes = {hidden}\n[[aps]]\nname = \"ap1\"\nlast_hop = {{ type = \"wifi\" }}\n[[aps]]\nname = \"ap2\"\nlast_hop = {{ type = \"wifi\" }}\n\
             [[aps]]\nname = \"wired\"\nlast_hop = {{ type = \"wired\", rate_mbps = 10 }}\n\
             [[stations]]\nname = \"sta1\"\nap = \"ap1\"\n[[stations]]\nname = \"sta1b\"\nap = \"ap1\"\n[[stations]]\nname = \"sta2\"\nap = \"ap2\"\n"
        )
    };
    let ok = Scenario::from_toml_str(&sc(r#"[["ap1", "ap2"], ["sta1", "sta1b"], ["sta1", "ap2"]]"#), Path::new(".")).unwrap();
    assert_eq!(ok.hidden_nodes.len(), 3);
    let e = err(&sc(r#"[["ap1", "nobody"]]"#));
    assert_eq!((e.issues[0].loc.to_string(), e.issues[0].msg.as_str()), ("hidden_nodes[0][1]".into(), "no access point or station named 'nobody'"), "{e}");
    let e = err(&sc(r#"[["ap1", "ap2"], ["wired", "ap1"]]"#));
    assert_eq!(e.issues[0].loc.to_string(), "hidden_nodes[1][0]", "{e}");
    assert!(e.issues[0].msg.contains("not on a Wi-Fi last hop"), "{e}");
    let e = err(&sc(r#"[["sta1", "sta1"]]"#));
    assert_eq!(e.issues[0].loc.to_string(), "hidden_nodes[0]", "{e}");
    let e = err(&sc(r#"[["sta2", "ap2"]]"#));
    assert_eq!(e.issues[0].loc.to_string(), "hidden_nodes[0]", "{e}");
    assert!(e.issues[0].msg.contains("exchange frames"), "{e}");
    let e = err(&sc(r#"[["ap1"]]"#));
    assert_eq!(e.issues[0].loc.to_string(), "hidden_nodes[0]", "{e}");
    // Left out, it stays out of the resolved scenario (and so out of every digest).
    let none = Scenario::from_toml_str(&sc("[]"), Path::new(".")).unwrap();
    assert!(!serde_json::to_string(&none).unwrap().contains("hidden_nodes"));
}
