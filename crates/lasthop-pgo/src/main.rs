//! `lasthop-pgo-train SECONDS FILE...`: runs every scenario of the given files, and each of their
//! `[[variants]]`, for at most SECONDS of simulated time, through the engine as `lasthop run --out`
//! drives it (rows taken out in chunks and discarded). Built with `-Cprofile-generate`, it writes the
//! profile from which `make build` optimizes the native module (`profile.sh` beside this crate).
//!
//! Variants are applied here as `lasthop.variants` applies them (`unset`, then `set`, at paths such as
//! `aps[0].last_hop.ap_path`), for the bare-key paths the examples use; any other path is an error. A
//! `set`'s entries are applied in key order (the TOML table here does not keep the file's order), so a
//! `set` whose paths nest, which could depend on that order, is an error too.

use std::path::Path;
use std::process::ExitCode;

use lasthop_core::scenario::Scenario;
use toml::{Table, Value};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cap, files)) = args.split_first().and_then(|(c, f)| Some((c.parse::<f64>().ok().filter(|&c| c > 0.0)?, f))) else {
        eprintln!("usage: lasthop-pgo-train SECONDS FILE... (SECONDS > 0: the longest simulated time of a run)");
        return ExitCode::from(2);
    };
    let mut failed = false;
    for file in files {
        let runs = runs_of(Path::new(file)).unwrap_or_else(|e| {
            eprintln!("{file}: {e}");
            failed = true;
            Vec::new()
        });
        for (name, doc) in runs {
            if let Err(e) = run(doc, Path::new(file), cap) {
                eprintln!("{file} ({name}): {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The file's base scenario and each of its variants, as documents without `variants`.
fn runs_of(path: &Path) -> Result<Vec<(String, Value)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut base: Table = toml::from_str(&text).map_err(|e| e.to_string())?;
    let variants = base.remove("variants");
    let base = Value::Table(base);
    let mut runs = vec![("base".to_string(), base.clone())];
    for v in variants.as_ref().and_then(Value::as_array).into_iter().flatten() {
        let name = v.get("name").and_then(Value::as_str).unwrap_or("?").to_string();
        let mut doc = base.clone();
        let unset = v.get("unset").map(|u| u.as_array().ok_or(format!("variant {name}: `unset` is not an array"))).transpose()?;
        for p in unset.into_iter().flatten() {
            let p = p.as_str().ok_or(format!("variant {name}: an unset path is not a string"))?;
            edit(&mut doc, &parse(p)?, None).map_err(|e| format!("variant {name}: unset {p}: {e}"))?;
        }
        let set = v.get("set").map(|t| t.as_table().ok_or(format!("variant {name}: `set` is not a table"))).transpose()?;
        let paths: Vec<&String> = set.into_iter().flat_map(|t| t.keys()).collect();
        if let Some((a, b)) = paths.iter().flat_map(|a| paths.iter().map(move |b| (a, b))).find(|(a, b)| a != b && nests(a, b)) {
            return Err(format!("variant {name}: set paths {a} and {b} nest"));
        }
        for (p, value) in set.into_iter().flatten() {
            edit(&mut doc, &parse(p)?, Some(value.clone())).map_err(|e| format!("variant {name}: set {p}: {e}"))?;
        }
        runs.push((name, doc));
    }
    Ok(runs)
}

/// Whether path `b` lies under path `a` (`aps[0]` and `aps[0].name`, `x` and `x[1]`).
fn nests(a: &str, b: &str) -> bool {
    b.strip_prefix(a).is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// A step of a variant's path: a table's key or an array's index.
#[derive(Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// `aps[0].last_hop.ap_path` → keys and indices.
fn parse(path: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let mut pieces = part.split('[');
        let key = pieces.next().unwrap_or_default();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(format!("path {path}: `{part}` is not a bare key"));
        }
        steps.push(Step::Key(key.to_string()));
        for index in pieces {
            let i = index.strip_suffix(']').and_then(|i| i.parse().ok());
            steps.push(Step::Index(i.ok_or(format!("path {path}: `[{index}` is not an index"))?));
        }
    }
    Ok(steps)
}

/// Sets (or with `None` removes) the value at `steps` under `node`, creating missing tables on the way.
fn edit(node: &mut Value, steps: &[Step], value: Option<Value>) -> Result<(), String> {
    let (step, rest) = steps.split_first().expect("a path has a step");
    match (step, node) {
        (Step::Key(k), Value::Table(t)) if rest.is_empty() => match value {
            Some(v) => {
                t.insert(k.clone(), v);
                Ok(())
            }
            None => t.remove(k).map(drop).ok_or(format!("no key `{k}`")),
        },
        (Step::Key(k), Value::Table(t)) => edit(t.entry(k.clone()).or_insert_with(|| Value::Table(Table::new())), rest, value),
        (Step::Index(i), Value::Array(a)) if *i < a.len() => match (rest.is_empty(), value) {
            (true, Some(v)) => {
                a[*i] = v;
                Ok(())
            }
            (true, None) => {
                a.remove(*i);
                Ok(())
            }
            (false, value) => edit(&mut a[*i], rest, value),
        },
        (Step::Index(i), _) => Err(format!("no item [{i}]")),
        (Step::Key(k), _) => Err(format!("`{k}` follows something that is not a table")),
    }
}

/// Runs `doc` for at most `cap` simulated seconds, taking its rows out as `lasthop run --out` does.
fn run(mut doc: Value, file: &Path, cap: f64) -> Result<(), String> {
    let duration = doc.get("duration_s").and_then(|d| d.as_float().or(d.as_integer().map(|i| i as f64)));
    if duration.is_none_or(|d| d > cap) {
        doc.as_table_mut().expect("a scenario is a table").insert("duration_s".into(), Value::Float(cap));
    }
    let text = toml::to_string(&doc).map_err(|e| e.to_string())?;
    let sc = Scenario::from_toml_str(&text, file.parent().unwrap_or(Path::new("."))).map_err(|e| e.to_string())?;
    let mut sim = lasthop_core::sim::Sim::new(&sc, sc.seed);
    let rows = 65_536;
    while sim.run_until_rows(rows, &mut |_| true).map_err(|e| e.to_string())? {
        if let Some(c) = sim.take_packet_rows(rows) {
            sim.recycle_packet_rows(c);
        }
        let _ = (sim.take_tx_rows(rows), sim.take_rtt_rows(rows), sim.take_frame_rows(rows));
    }
    sim.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        toml::from_str("[[aps]]\nname = \"ap\"\nlast_hop = { type = \"wifi\" }\n[[aps]]\nname = \"b\"\n").unwrap()
    }

    #[test]
    fn a_variant_sets_and_unsets_at_its_paths() {
        let mut d = doc();
        edit(&mut d, &parse("aps[0].last_hop.ap_path").unwrap(), Some(Value::String("fifo".into()))).unwrap();
        edit(&mut d, &parse("aps[1].mechanism.type").unwrap(), Some(Value::String("law".into()))).unwrap();
        edit(&mut d, &parse("aps[0].name").unwrap(), None).unwrap();
        edit(&mut d, &parse("aps[1]").unwrap(), None).unwrap();
        let want: Value = toml::from_str("[[aps]]\nlast_hop = { type = \"wifi\", ap_path = \"fifo\" }\n").unwrap();
        assert_eq!(d, want);
    }

    /// Every example and each of its variants is one the trainer can run: a path it cannot apply would
    /// leave the module without its profile (the build would only warn).
    #[test]
    fn the_trainer_reads_every_example() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                files += 1;
                for (name, doc) in runs_of(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
                    let text = toml::to_string(&doc).unwrap();
                    Scenario::from_toml_str(&text, &dir).unwrap_or_else(|e| panic!("{} ({name}): {e}", path.display()));
                }
            }
        }
        assert!(files >= 10, "{files} examples in {}", dir.display());
    }

    #[test]
    fn nested_set_paths_are_refused() {
        assert!(nests("aps[0]", "aps[0].name") && nests("x", "x[1]") && !nests("aps[0]", "aps[0]x") && !nests("a.b", "a.c"));
        let dir = std::env::temp_dir().join(format!("lasthop-pgo-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("nested.toml");
        std::fs::write(&file, "duration_s = 1\n[[variants]]\nname = \"v\"\nset = { \"aps[0]\" = {}, \"aps[0].name\" = \"x\" }\n").unwrap();
        let err = runs_of(&file).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("set paths aps[0] and aps[0].name nest"), "{err}");
    }

    #[test]
    fn a_path_that_does_not_fit_is_an_error() {
        let mut d = doc();
        assert!(parse("aps[x].name").unwrap_err().contains("`[x]` is not an index"));
        assert!(parse("\"quoted\".key").unwrap_err().contains("is not a bare key"));
        assert_eq!(edit(&mut d, &parse("aps[2].name").unwrap(), None).unwrap_err(), "no item [2]");
        assert_eq!(edit(&mut d, &parse("aps[0].name.x").unwrap(), None).unwrap_err(), "`x` follows something that is not a table");
        assert_eq!(edit(&mut d, &parse("aps[0].gone").unwrap(), None).unwrap_err(), "no key `gone`");
    }
}
