//! Scenario files: the typed, documented description of one run.
//!
//! A scenario is data. TOML (or JSON) goes through serde with `deny_unknown_fields`; every pluggable entry
//! is a table tagged by `type` (`queue = { type = "fifo", packets = 1000 }`) so later model variants add
//! new tags without breaking existing files. Parsing reports the field path of the first structural error
//! (`flows[2].rate_mbps: invalid type ...`); [`validate`] then checks values and cross-references and
//! reports every problem it finds, each with its path. The JSON Schema comes from the same types
//! ([`json_schema`]).
//!
//! Units are carried in the key names (`duration_s`, `rate_mbps`, `delay_ms`, `packet_bytes`) so a
//! file reads unambiguously without a unit parser.

mod error;
mod types;
mod validate;
mod validate_wifi;

pub use error::{shown, Loc, LocItem, ScenarioError, ScenarioIssue};
pub use types::*;
pub use validate::{validate, MAX_RATE_MBPS, MAX_TIME_S};

use std::path::Path;

impl Scenario {
    /// Parses a scenario from a JSON document and validates it. `base_dir` resolves relative file paths
    /// (traces) against the scenario file's directory.
    pub fn from_json_str(json: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
        let mut de = serde_json::Deserializer::from_str(json);
        let sc: Scenario = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let mut err = ScenarioError::from_path_error(e);
            if let Ok(doc) = serde_json::from_str::<serde_json::Value>(json) {
                err.refine_in_tagged_table(&doc);
            }
            err
        })?;
        de.end().map_err(|e| ScenarioError::single(Loc::root(), "json_invalid", e.to_string(), None))?;
        sc.resolved(base_dir)
    }

    /// Parses a scenario from TOML text and validates it.
    pub fn from_toml_str(text: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
        let value: toml::Value = toml::from_str(text).map_err(|e| {
            let msg = e.message().to_string();
            let loc = match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].lines().count().max(1);
                    format!("line {line}")
                }
                None => String::new(),
            };
            ScenarioError::single(Loc::root(), "toml_syntax", format!("{msg} {loc}").trim().to_string(), None)
        })?;
        let json = serde_json::to_string(&value).expect("TOML values map to JSON");
        Self::from_json_str(&json, base_dir)
    }

    /// Reads a TOML (`.toml`) or JSON (`.json`) scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ScenarioError::single(Loc::root(), "file_unreadable", format!("cannot read {}: {e}", path.display()), None)
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        if path.extension().is_some_and(|e| e == "json") {
            Self::from_json_str(&text, base)
        } else {
            Self::from_toml_str(&text, base)
        }
    }

    fn resolved(mut self, base_dir: &Path) -> Result<Scenario, ScenarioError> {
        self.resolve_paths(base_dir);
        validate(&self)?;
        Ok(self)
    }

    /// The resolved scenario as JSON (defaults filled in, paths absolute): loading it reproduces the run.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("scenario serializes")
    }
}

/// The JSON Schema of scenario files.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Scenario)).expect("schema serializes")
}

#[cfg(test)]
mod tests;
