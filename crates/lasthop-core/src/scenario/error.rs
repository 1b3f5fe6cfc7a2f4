//! Structured scenario errors: every issue carries a location (`flows[2].rate_mbps`), an error type and a
//! one-line message, like pydantic-core's `ErrorDetails`.

use std::fmt;

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
    pub fn index(&self, i: usize) -> Loc {
        let mut v = self.0.clone();
        v.push(LocItem::Index(i));
        Loc(v)
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

impl ScenarioError {
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
