//! Bad input never panics the core. Every example scenario (and trace files of random lines) is
//! mutated at random — a value replaced by an extreme number, a wrong type, a string, a key deleted, a
//! list emptied or an element duplicated — and the result must either be refused by `Scenario`'s
//! parser and validator with an error, or build and run (a bounded slice of it) without a panic.
//!
//! Cases: `LASTHOP_FUZZ_CASES` (default 600, what CI runs); `LASTHOP_FUZZ_CASES=100000 cargo test
//! --profile release-test --test fuzz` for a long local run; `LASTHOP_FUZZ_TRACE=1` prints each case first. The
//! cases come from a fixed seed, so every run of the suite tries the same ones and a failure repeats;
//! `LASTHOP_FUZZ_SEED=n` tries others (proptest's own default seeds from the OS, which had made the
//! suite's time vary by a minute: one in three runs drew a coherence time of 1e-300 ms).

use lasthop_core::scenario::Scenario;
use lasthop_core::sim::Sim;
use lasthop_core::time::SimTime;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Cases that validated and ran (the rest were refused with an error).
static RAN: AtomicU64 = AtomicU64::new(0);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every example as JSON, with the directory its relative paths resolve against.
fn examples() -> Vec<Value> {
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(root().join("examples")).expect("examples/").map(|e| e.expect("entry").path()).collect();
    paths.sort();
    for p in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "toml")) {
        let v: toml::Value = toml::from_str(&std::fs::read_to_string(&p).expect("readable")).expect("an example parses");
        let mut v = serde_json::to_value(v).expect("TOML maps to JSON");
        if let Some(o) = v.as_object_mut() {
            o.remove("variants");
        }
        out.push(v);
    }
    out
}

/// Where in a document a mutation lands: a path of keys/indices, chosen by walking down at random.
fn leaf_paths(v: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(o) => {
            for (k, c) in o {
                prefix.push(json!(k));
                leaf_paths(c, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                prefix.push(json!(i));
                leaf_paths(c, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match k {
        Value::String(s) => &mut v[s.as_str()],
        Value::Number(n) => &mut v[n.as_u64().expect("index") as usize],
        _ => unreachable!(),
    })
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)), Just(json!(-1)), Just(json!(1)), Just(json!(0.5)), Just(json!(-0.0)),
        Just(json!(1e300)), Just(json!(-1e300)), Just(json!(1e-300)), Just(json!(1e12)), Just(json!(1e9)),
        Just(json!(u64::MAX)), Just(json!(i64::MIN)), Just(json!(65_536)), Just(json!(4_294_967_296u64)),
        any::<f64>().prop_filter("JSON numbers are finite", |x| x.is_finite()).prop_map(|x| json!(x)),
        (-1000i64..100_000).prop_map(|x| json!(x)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => number(),
        1 => Just(json!(true)),
        1 => Just(json!("")),
        1 => prop::sample::select(vec!["fifo", "linux", "ns3", "wifi", "wired", "fq_codel", "law", "zhuge", "minstrel_ht", "fixed", "ap", "server", "sta0", "x"]).prop_map(|s| json!(s)),
        1 => Just(json!([])),
        1 => Just(json!({})),
        1 => Just(Value::Null),
    ]
}

#[derive(Clone, Debug)]
enum Mutation {
    /// A number replaced by another number (keeps the document's shape, so more cases validate).
    Tweak(usize, Value),
    Replace(usize, Value),
    Delete(usize),
    Duplicate(usize),
    Empty(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        8 => (any::<usize>(), number()).prop_map(|(i, v)| Mutation::Tweak(i, v)),
        4 => (any::<usize>(), value()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        2 => any::<usize>().prop_map(Mutation::Delete),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
        1 => any::<usize>().prop_map(Mutation::Empty),
    ]
}

/// Applies `m`; returns where, as `key.0.key`.
fn apply(doc: &mut Value, m: &Mutation) -> String {
    let mut paths = Vec::new();
    leaf_paths(doc, &mut Vec::new(), &mut paths);
    if paths.len() < 2 {
        return String::new();
    }
    if matches!(m, Mutation::Tweak(..)) {
        paths.retain(|p| p.is_empty() || at(doc, p).is_number());
        if paths.len() < 2 {
            return String::new();
        }
    }
    let i = match m {
        Mutation::Tweak(i, _) | Mutation::Replace(i, _) | Mutation::Delete(i) | Mutation::Duplicate(i) | Mutation::Empty(i) => *i,
    };
    let pick = |i: usize| paths[1 + i % (paths.len() - 1)].clone();
    let place = pick(i).iter().map(|k| k.to_string().trim_matches('"').to_string()).collect::<Vec<_>>().join(".");
    match m {
        Mutation::Tweak(i, v) | Mutation::Replace(i, v) => *at(doc, &pick(*i)) = v.clone(),
        Mutation::Delete(i) => {
            let p = pick(*i);
            let (last, parent) = p.split_last().expect("non-root");
            match (at(doc, parent), last) {
                (Value::Object(o), Value::String(k)) => {
                    o.remove(k);
                }
                (Value::Array(a), Value::Number(n)) => {
                    a.remove(n.as_u64().expect("index") as usize);
                }
                _ => {}
            }
        }
        Mutation::Duplicate(i) => {
            let p = pick(*i);
            let (_, parent) = p.split_last().expect("non-root");
            let target = at(doc, &p).clone();
            if let Value::Array(a) = at(doc, parent) {
                a.push(target);
            }
        }
        Mutation::Empty(i) => match at(doc, &pick(*i)) {
            Value::Array(a) => a.clear(),
            Value::Object(o) => o.clear(),
            other => *other = Value::Null,
        },
    }
    place
}

/// A trace file of random lines: numbers (huge, negative, fractional), words, blank lines.
fn trace_text() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        4 => (0u32..100_000).prop_map(|x| x.to_string()),
        1 => Just("-5".to_string()), 1 => Just("1e300".to_string()), 1 => Just("nan".to_string()),
        1 => Just("inf".to_string()), 1 => Just("0.5".to_string()), 1 => Just("x".to_string()), 1 => Just("1e-300".to_string()),
        1 => Just("18446744073709551616".to_string()),
    ];
    prop::collection::vec(prop::collection::vec(field, 0..4).prop_map(|f| f.join(" ")), 0..30).prop_map(|l| l.join("\n"))
}

/// Builds and runs (at most 0.2 simulated s of) a scenario that validated; a panic fails the case.
fn exercise(sc: &Scenario) {
    let mut sim = Sim::new(sc, 1);
    let stop = sim.end().min(SimTime::from_ms(200));
    let mut steps = 0u32;
    while sim.next_wakeup().is_some_and(|t| t <= stop) && steps < 50_000 {
        sim.step();
        steps += 1;
    }
    let out = sim.finish();
    serde_json::to_string(&out.components).expect("components serialize");
}

fn check(doc: &Value, base: &Path, what: &str) -> Result<(), TestCaseError> {
    let text = serde_json::to_string(doc).expect("JSON");
    if std::env::var_os("LASTHOP_FUZZ_TRACE").is_some() {
        // What a crash that cannot be caught (a stack overflow, an abort) was running.
        eprintln!("case: {what}");
    }
    let mut refused = None;
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match Scenario::from_json_str(&text, base) {
        Ok(sc) => {
            exercise(&sc);
            RAN.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => refused = Some(e.to_string()),
    }));
    if let Some(msg) = refused {
        // A number is shown as a reader writes it: 1e300, not its 301 digits (`scenario::shown`).
        let longest = msg.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0);
        if longest > 24 {
            return Err(TestCaseError::fail(format!("a {longest}-digit number in `{msg}` after {what}")));
        }
    }
    {
        if let Err(e) = run {
            let msg = e.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| e.downcast_ref::<String>().cloned()).unwrap_or_default();
            return Err(TestCaseError::fail(format!("panic `{msg}` after {what}")));
        }
    }
    Ok(())
}

/// The runner: `cases` cases drawn from `LASTHOP_FUZZ_SEED` (default 0).
fn runner(cases: u32) -> TestRunner {
    let seed: u64 = match std::env::var("LASTHOP_FUZZ_SEED") {
        Ok(s) => s.parse().unwrap_or_else(|_| panic!("LASTHOP_FUZZ_SEED must be a whole number, got {s:?}")),
        Err(_) => 0,
    };
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(Config { cases, failure_persistence: None, ..Config::default() }, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn cases() -> u32 {
    std::env::var("LASTHOP_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(600)
}

#[test]
fn mutated_examples_are_refused_or_run() {
    let docs = examples();
    let base = root().join("examples");
    let mut runner = runner(cases());
    let strategy = (0..docs.len(), prop::collection::vec(mutation(), 1..4));
    runner
        .run(&strategy, |(i, ms)| {
            let mut doc = docs[i].clone();
            let what: Vec<String> = ms.iter().map(|m| format!("{} {m:?}", apply(&mut doc, m))).collect();
            check(&doc, &base, &format!("example {i}: {}", what.join("; ")))
        })
        .unwrap();
    eprintln!("{} mutated examples, {} validated and ran, none panicked", cases(), RAN.load(Ordering::Relaxed));
}

#[test]
fn random_trace_files_are_refused_or_run() {
    let dir = std::env::temp_dir().join(format!("lasthop-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut runner = runner(cases() / 4 + 1);
    runner
        .run(&(trace_text(), prop::sample::select(vec!["pitree", "mahimahi", "snr"])), |(text, kind)| {
            let file = dir.join(format!("t.{kind}"));
            std::fs::write(&file, &text).expect("write trace");
            let f = file.display().to_string();
            let (last_hop, channel) = match kind {
                "snr" => (json!({ "type": "wifi", "profile": "linux", "rate_control": { "type": "minstrel_ht" } }), json!({ "type": "snr_trace", "file": f })),
                fmt => (json!({ "type": "capacity_trace", "trace": f, "format": fmt }), json!({ "type": "fixed_snr", "snr_db": 30 })),
            };
            let doc = json!({
                "duration_s": 1, "servers": [{ "name": "server" }], "aps": [{ "name": "ap", "last_hop": last_hop }],
                "stations": [{ "name": "c", "channel": channel }],
                "links": [{ "a": "server", "b": "ap", "rate_mbps": 100, "delay_ms": 1 }],
                "flows": [{ "type": "udp_cbr", "from": "server", "to": "c", "rate_mbps": 5 }],
            });
            check(&doc, &dir, &format!("{kind} trace {text:?}"))
        })
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
