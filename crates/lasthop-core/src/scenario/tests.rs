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

#[test]
fn unknown_key_names_its_path() {
    let e = err(&OK.replace("rate_mbps = 10\n", "rate_mbps = 10\nrtae = 3\n"));
    assert_eq!(e.issues[0].kind, "unknown_field");
    assert_eq!(e.issues[0].loc.to_string(), "flows[0].rtae");
    let e = err(&OK.replace("delay_ms = 1 }", "delay_ms = 1, queue = { type = \"fifo\", pakets = 5 } }"));
    assert_eq!(e.issues[0].loc.to_string(), "aps[0].last_hop.pakets", "{e}");
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
