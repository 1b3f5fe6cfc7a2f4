//! Structured scenario errors: every issue carries a location (`flows[2].rate_mbps`), an error type and a
//! one-line message, like pydantic-core's `ErrorDetails`.

use std::fmt;

/// `v` as an error message shows it: as written for everyday magnitudes, in exponent form when it is
/// huge or tiny (Rust's `{}` writes 1e300 with all its 301 digits).
pub fn shown(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e15).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// One step of a location path.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum LocItem {
    Key(String),
    Index(usize),
}

/// A location inside a scenario document.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Loc(pub Vec<LocItem>);

impl Loc {
    pub fn root() -> Self {
        Loc(Vec::new())
    }
    pub fn key(&self, k: &str) -> Loc {
        let mut v = self.0.clone();
        v.push(LocItem::Key(k.to_string()));
        Loc(v)
    }
    /// `self` followed by the steps of `rel`.
    pub fn join(&self, rel: &Loc) -> Loc {
        Loc(self.0.iter().chain(&rel.0).cloned().collect())
    }
    pub fn index(&self, i: usize) -> Loc {
        let mut v = self.0.clone();
        v.push(LocItem::Index(i));
        Loc(v)
    }
    /// `self` followed by the steps of a dotted path as components report them (`flows.0.demand_ms`:
    /// numeric parts are indices; an empty path adds nothing).
    pub fn dotted(&self, path: &str) -> Loc {
        let steps = path.split('.').filter(|p| !p.is_empty()).map(|p| p.parse().map_or_else(|_| LocItem::Key(p.to_string()), LocItem::Index));
        Loc(self.0.iter().cloned().chain(steps).collect())
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return write!(f, "<scenario>");
        }
        for (i, item) in self.0.iter().enumerate() {
            match item {
                LocItem::Key(k) if i == 0 => write!(f, "{k}")?,
                LocItem::Key(k) => write!(f, ".{k}")?,
                LocItem::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// One problem found in a scenario.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ScenarioIssue {
    /// Machine-readable kind, e.g. `unknown_field`, `invalid_type`, `value_error`, `missing_file`.
    #[serde(rename = "type")]
    pub kind: String,
    pub loc: Loc,
    pub msg: String,
    /// The offending input, when known.
    pub input: Option<serde_json::Value>,
}

impl fmt::Display for ScenarioIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.loc, self.msg)
    }
}

/// All problems found in a scenario (never empty).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct ScenarioError {
    pub issues: Vec<ScenarioIssue>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.issues.iter().map(|i| i.to_string()).collect();
        write!(f, "{}", lines.join("\n"))
    }
}

/// serde's message with what it expected said in the scenario's words, not Rust's (`expected f64` is
/// `expected a number`, `expected u8` a whole number in 0..=255, an internally tagged enum a table with
/// a `type`).
fn plain_expected(msg: &str) -> String {
    let Some((head, expected)) = msg.rsplit_once(", expected ") else { return msg.to_string() };
    let plain = match expected {
        "f64" | "f32" => "a number".to_string(),
        "u8" => "a whole number in 0..=255".to_string(),
        "u16" => "a whole number in 0..=65535".to_string(),
        "u32" => "a whole number in 0..=4294967295".to_string(),
        "u64" | "usize" => "a whole number ≥ 0".to_string(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".to_string(),
        "variant identifier" => "the name of one of its types".to_string(),
        e if e.starts_with("internally tagged enum") => "a table with a `type` key".to_string(),
        e => e.to_string(),
    };
    format!("{head}, expected {plain}")
}

/// serde's description of a JSON value in "invalid type/value" messages (`string "x"`, `integer `-1``).
fn unexpected(v: &serde_json::Value) -> String {
    use serde_json::Value as V;
    match v {
        V::String(s) => format!("string {s:?}"),
        V::Bool(b) => format!("boolean `{b}`"),
        // As serde_json writes it in its messages (`20.0`, `1e+300`), not as Rust's `{}` writes the f64.
        V::Number(n) if n.is_f64() => format!("floating point `{n}`"),
        V::Number(n) => format!("integer `{n}`"),
        V::Array(_) => "sequence".into(),
        V::Object(_) => "map".into(),
        V::Null => "null".into(),
    }
}

/// Every location under `v` (relative) whose value serde would describe as `desc`.
fn find_described(v: &serde_json::Value, desc: &str, at: &mut Vec<LocItem>, found: &mut Vec<Vec<LocItem>>) {
    if unexpected(v) == desc && !at.is_empty() {
        found.push(at.clone());
    }
    match v {
        serde_json::Value::Object(m) => {
            for (k, c) in m {
                at.push(LocItem::Key(k.clone()));
                find_described(c, desc, at, found);
                at.pop();
            }
        }
        serde_json::Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                at.push(LocItem::Index(i));
                find_described(c, desc, at, found);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The value at `loc` in `doc`.
fn at<'a>(doc: &'a serde_json::Value, loc: &[LocItem]) -> Option<&'a serde_json::Value> {
    let mut node = doc;
    for item in loc {
        node = match (item, node) {
            (LocItem::Key(k), serde_json::Value::Object(m)) => m.get(k)?,
            (LocItem::Index(i), serde_json::Value::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Every location (relative, below `v`) of an object holding a key/value pair that `hit` accepts.
fn find_key(v: &serde_json::Value, hit: &dyn Fn(&str, &serde_json::Value) -> bool, at: &mut Vec<LocItem>, found: &mut Vec<Vec<LocItem>>) {
    match v {
        serde_json::Value::Object(m) => {
            if m.iter().any(|(k, c)| hit(k, c)) {
                found.push(at.clone());
            }
            for (k, c) in m {
                at.push(LocItem::Key(k.clone()));
                find_key(c, hit, at, found);
                at.pop();
            }
        }
        serde_json::Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                at.push(LocItem::Index(i));
                find_key(c, hit, at, found);
                at.pop();
            }
        }
        _ => {}
    }
}

impl ScenarioError {
    /// serde loses the path below a `type`-tagged table (it buffers the table to read the tag first), so a
    /// wrong type inside one is reported at the table. When exactly one value under that table matches
    /// the offending value in the message, extend the location to it (`flows[0]` → `flows[0].rate_mbps`).
    ///
    /// The same holds for tagged tables nested in a tagged table (`mechanism` inside `last_hop`): an
    /// unknown key or an unknown `type` is reported at the outer table; when exactly one table below it
    /// has that key (or that `type`), the location moves there (`aps[0].last_hop.mechanism.limit_qq_ms`).
    pub(crate) fn refine_in_tagged_table(&mut self, doc: &serde_json::Value) {
        let Some(issue) = self.issues.first_mut() else { return };
        match issue.kind.as_str() {
            "invalid_type" | "invalid_value" => {
                let Some(desc) = issue.msg.split_once(": ").and_then(|(_, rest)| rest.split(", expected").next()) else { return };
                let Some(node) = at(doc, &issue.loc.0) else { return };
                let mut found = Vec::new();
                find_described(node, desc, &mut Vec::new(), &mut found);
                if let [one] = found.as_slice() {
                    issue.loc.0.extend(one.iter().cloned());
                }
            }
            "unknown_field" => {
                let Some((LocItem::Key(name), parent)) = issue.loc.0.split_last() else { return };
                let Some(node) = at(doc, parent) else { return };
                if node.get(name).is_some() {
                    return;
                }
                let mut found = Vec::new();
                find_key(node, &|k, _| k == name, &mut Vec::new(), &mut found);
                if let [one] = found.as_slice() {
                    let name = LocItem::Key(name.clone());
                    issue.loc.0.pop();
                    issue.loc.0.extend(one.iter().cloned());
                    issue.loc.0.push(name);
                }
            }
            "unknown_type" => {
                let Some(tag) = issue.msg.split('`').nth(1) else { return };
                let Some(node) = at(doc, &issue.loc.0) else { return };
                let mut found = Vec::new();
                find_key(node, &|k, v| k == "type" && v.as_str() == Some(tag), &mut Vec::new(), &mut found);
                if let [one] = found.as_slice() {
                    issue.loc.0.extend(one.iter().cloned());
                    issue.loc.0.push(LocItem::Key("type".into()));
                    return;
                }
                // An unknown value of a plain enum key (`profile = "exact"`) inside a tagged table.
                let mut found = Vec::new();
                find_key(node, &|_, v| v.as_str() == Some(tag), &mut Vec::new(), &mut found);
                if let [one] = found.as_slice() {
                    let Some(obj) = at(node, one).and_then(|o| o.as_object()) else { return };
                    let keys: Vec<&String> = obj.iter().filter(|(_, v)| v.as_str() == Some(tag)).map(|(k, _)| k).collect();
                    if let [key] = keys.as_slice() {
                        issue.loc.0.extend(one.iter().cloned());
                        issue.loc.0.push(LocItem::Key((*key).clone()));
                    }
                }
            }
            _ => {}
        }
    }

    pub fn single(loc: Loc, kind: &str, msg: impl Into<String>, input: Option<serde_json::Value>) -> Self {
        ScenarioError { issues: vec![ScenarioIssue { kind: kind.to_string(), loc, msg: msg.into(), input }] }
    }

    pub(crate) fn from_path_error(e: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let mut loc = Loc::root();
        for seg in e.path().iter() {
            match seg {
                serde_path_to_error::Segment::Seq { index } => loc.0.push(LocItem::Index(*index)),
                serde_path_to_error::Segment::Map { key } => loc.0.push(LocItem::Key(key.clone())),
                serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => {}
            }
        }
        let inner = e.into_inner();
        let raw = inner.to_string();
        // serde_json appends " at line L column C" (of the JSON we built from TOML): meaningless to users.
        let msg = match raw.rfind(" at line ") {
            Some(i) => raw[..i].to_string(),
            None => raw,
        };
        let msg = plain_expected(&msg);
        let kind = if msg.starts_with("unknown field") {
            "unknown_field"
        } else if msg.starts_with("missing field") {
            "missing"
        } else if msg.starts_with("unknown variant") {
            "unknown_type"
        } else if msg.starts_with("invalid type") {
            "invalid_type"
        } else {
            "invalid_value"
        };
        // Name the unknown key in the location, so `links[0].queue.pakets` points at the culprit.
        if kind == "unknown_field" {
            if let Some(name) = msg.split('`').nth(1) {
                if loc.0.last() != Some(&LocItem::Key(name.to_string())) {
                    loc.0.push(LocItem::Key(name.to_string()));
                }
            }
        }
        ScenarioError::single(loc, kind, msg, None)
    }
}
