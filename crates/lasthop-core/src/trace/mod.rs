//! Readers for link traces, with errors that name `file:line`.
//!
//! * pitree (`*.pitree-trace`, Zhuge): one `TIME_S MBPS` sample per line; the rate holds until the next
//!   sample (step-hold).
//! * Mahimahi: one integer per line, a millisecond timestamp of an opportunity to deliver 1500 bytes;
//!   repeated timestamps are several opportunities; the trace repeats with period = its last timestamp.
//! * SNR series (`TIME_S SNR_DB`), for the channel models.
//!
//! Blank lines and lines starting with `#` are skipped in the two-column formats.

use crate::scenario::{shown, MAX_RATE_MBPS, MAX_TIME_S};
use std::fmt;
use std::path::{Path, PathBuf};

/// A malformed or unreadable trace file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct TraceError {
    pub path: PathBuf,
    /// 1-based line number; 0 when the problem is the whole file.
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.reason)
        } else {
            write!(f, "{}: {}", self.path.display(), self.reason)
        }
    }
}

fn read(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|e| TraceError { path: path.to_path_buf(), line: 0, reason: format!("cannot read: {e}") })
}

/// Parses `TIME VALUE` lines with strictly increasing, non-negative times. `what` names the value,
/// `rule` says what `value_ok` asks of it.
fn two_columns(path: &Path, text: &str, what: &str, rule: &str, value_ok: impl Fn(f64) -> bool) -> Result<Vec<(f64, f64)>, TraceError> {
    let err = |line: usize, reason: String| TraceError { path: path.to_path_buf(), line, reason };
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() != 2 {
            return Err(err(i + 1, format!("expected two columns `time_s {what}`, got {} in {line:?}", cols.len())));
        }
        let t: f64 = cols[0].parse().map_err(|_| err(i + 1, format!("time {:?} is not a number", cols[0])))?;
        let v: f64 = cols[1].parse().map_err(|_| err(i + 1, format!("{what} {:?} is not a number", cols[1])))?;
        if !t.is_finite() || t < 0.0 {
            return Err(err(i + 1, format!("time must be ≥ 0, got {}", shown(t))));
        }
        if t > MAX_TIME_S {
            return Err(err(i + 1, format!("time must be at most {MAX_TIME_S:e} s (about 31 years), got {t:e}")));
        }
        if let Some(&(prev, _)) = out.last() {
            if t <= prev {
                return Err(err(i + 1, format!("times must increase: {} after {}", shown(t), shown(prev))));
            }
        }
        if !value_ok(v) {
            return Err(err(i + 1, format!("{what} must be {rule}, got {}", shown(v))));
        }
        out.push((t, v));
    }
    if out.is_empty() {
        return Err(err(0, "no samples".into()));
    }
    Ok(out)
}

/// A step-hold rate trace: `(time_ns, bits per second)`.
#[derive(Clone, Debug, PartialEq)]
pub struct RateTrace {
    pub samples: Vec<(u64, u64)>,
}

/// Reads a pitree trace. Rates must be ≥ 0 and at least one must be positive.
pub fn read_pitree(path: &Path) -> Result<RateTrace, TraceError> {
    let text = read(path)?;
    let rows = two_columns(path, &text, "Mbps", "≥ 0 and at most 1e6 (1 Tbit/s)", |v| (0.0..=MAX_RATE_MBPS).contains(&v))?;
    if rows.iter().all(|&(_, v)| v == 0.0) {
        return Err(TraceError { path: path.to_path_buf(), line: 0, reason: "every rate is zero: nothing can ever be delivered".into() });
    }
    Ok(RateTrace { samples: rows.into_iter().map(|(t, v)| ((t * 1e9).round() as u64, (v * 1e6).round() as u64)).collect() })
}

/// Mahimahi delivery opportunities, in ms from the trace start (sorted, may repeat).
#[derive(Clone, Debug, PartialEq)]
pub struct OpportunityTrace {
    pub ms: Vec<u64>,
}

/// Reads a Mahimahi trace.
pub fn read_mahimahi(path: &Path) -> Result<OpportunityTrace, TraceError> {
    let text = read(path)?;
    let err = |line: usize, reason: String| TraceError { path: path.to_path_buf(), line, reason };
    let mut ms = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let v: u64 = line.parse().map_err(|_| err(i + 1, format!("expected a millisecond timestamp (non-negative integer), got {line:?}")))?;
        if v as f64 > MAX_TIME_S * 1e3 {
            return Err(err(i + 1, format!("timestamps must be at most {:e} ms (about 31 years), got {v}", MAX_TIME_S * 1e3)));
        }
        if ms.last().is_some_and(|&p| v < p) {
            return Err(err(i + 1, format!("timestamps must not decrease: {v} after {}", ms.last().unwrap())));
        }
        ms.push(v);
    }
    if ms.is_empty() {
        return Err(err(0, "no delivery opportunities".into()));
    }
    if *ms.last().unwrap() == 0 {
        return Err(err(0, "the last timestamp must be > 0 (it is the period of the repeating trace)".into()));
    }
    Ok(OpportunityTrace { ms })
}

/// Reads an SNR series (`time_s snr_db`).
pub fn read_snr_series(path: &Path) -> Result<Vec<(f64, f64)>, TraceError> {
    let text = read(path)?;
    two_columns(path, &text, "snr_db", "a finite number", |v| v.is_finite())
}

/// Trace file formats a capacity-trace last hop accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    Pitree,
    Mahimahi,
}

impl TraceFormat {
    /// Guess from the file name: `.pitree-trace` → pitree; `.up`/`.down`/`.mahi` → Mahimahi.
    pub fn guess(path: &Path) -> Option<TraceFormat> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        if name.ends_with(".pitree-trace") || name.ends_with(".pitree") {
            Some(TraceFormat::Pitree)
        } else if name.ends_with(".up") || name.ends_with(".down") || name.ends_with(".mahi") || name.ends_with(".mahimahi") {
            Some(TraceFormat::Mahimahi)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lasthop-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn pitree_parses_and_reports_file_line() {
        let p = tmp("ok.pitree-trace", "0.2 28.6\n0.4 11.2\n");
        assert_eq!(read_pitree(&p).unwrap().samples, vec![(200_000_000, 28_600_000), (400_000_000, 11_200_000)]);
        let p = tmp("bad.pitree-trace", "0.2 28.6\n0.4 x\n");
        let e = read_pitree(&p).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().ends_with("bad.pitree-trace:2: Mbps \"x\" is not a number"), "{e}");
        let p = tmp("dec.pitree-trace", "0.4 1\n0.2 1\n");
        assert!(read_pitree(&p).unwrap_err().reason.contains("increase"));
        let p = tmp("neg.pitree-trace", "0 -1\n");
        assert_eq!(read_pitree(&p).unwrap_err().line, 1);
    }

    /// Times and rates stay within what a scenario may name (1e9 s, 1 Tbit/s); a trace whose every rate
    /// is below 1 bit/s, as read or once scaled, is refused: it can never deliver a packet (such a
    /// trace made a 2-s run spin for ever), nor can a scale take a trace past 1 Tbit/s.
    #[test]
    fn traces_stay_within_the_engines_times_and_rates() {
        let late = tmp("late.pitree-trace", "0 1\n1e300 1\n");
        let e = read_pitree(&late).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.reason.contains("at most 1e9 s"), "{e}");
        let fast = tmp("fast.pitree-trace", "0 2e6\n");
        assert!(read_pitree(&fast).unwrap_err().reason.contains("at most 1e6"), "fast");
        let slow = tmp("slow.pitree-trace", "0.2 1e-7\n0.4 1e-7\n");
        let e = crate::link::trace_server(slow.to_str().unwrap(), None, 1.0).expect_err("refused");
        assert!(e.ends_with("every rate is below 1 bit/s: nothing can ever be delivered"), "{e}");
        let ok = tmp("ok2.pitree-trace", "0.2 28.6\n0.4 0\n");
        assert!(crate::link::trace_server(ok.to_str().unwrap(), None, 1.0).is_ok(), "an outage among rates is fine");
        let e = crate::link::trace_server(ok.to_str().unwrap(), None, 1e-9).expect_err("refused");
        assert!(e.contains("below 1 bit/s once scaled by 1e-9"), "{e}");
        let e = crate::link::trace_server(ok.to_str().unwrap(), None, 1e20).expect_err("refused");
        assert!(e.contains("above the engine's 1 Tbit/s"), "{e}");
        let mahi = tmp("m.mahi", "1\n2\n");
        assert!(crate::link::trace_server(mahi.to_str().unwrap(), None, 1.0).is_ok());
        let e = crate::link::trace_server(mahi.to_str().unwrap(), None, 1e-4).expect_err("refused");
        assert!(e.ends_with("each delivery opportunity carries less than 1 byte once scaled by 1e-4: nothing can ever be delivered"), "{e}");
        let e = crate::link::trace_server(mahi.to_str().unwrap(), None, 1e20).expect_err("refused");
        assert!(e.contains("mean rate of") && e.contains("above the engine's 1 Tbit/s"), "{e}");
        let e = read_mahimahi(&tmp("late.mahi", "1\n2000000000000000\n")).unwrap_err();
        assert_eq!(e.line, 2);
        // A missing file or a directory is named as such, not as a name that does not tell the format.
        assert_eq!(crate::link::trace_server("no/such/file", None, 1.0).err().as_deref(), Some("no/such/file: no such file"));
        let dir = late.parent().unwrap().to_str().unwrap().to_string();
        assert_eq!(crate::link::trace_server(&dir, None, 1.0).err(), Some(format!("{dir}: is a directory, not a trace file")));
    }

    #[test]
    fn mahimahi_parses_and_rejects() {
        let p = tmp("ok.down", "0\n0\n1\n5\n");
        assert_eq!(read_mahimahi(&p).unwrap().ms, vec![0, 0, 1, 5]);
        let p = tmp("bad.down", "1\n2\nthree\n");
        let e = read_mahimahi(&p).unwrap_err();
        assert_eq!((e.line, e.to_string().contains("bad.down:3")), (3, true));
        let p = tmp("zero.down", "0\n");
        assert!(read_mahimahi(&p).is_err());
        assert!(read_mahimahi(Path::new("/nonexistent/x.down")).unwrap_err().reason.starts_with("cannot read"));
    }

    #[test]
    fn shared_traces_parse() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
        for f in ["zhuge/rest-wifi_0.pitree-trace", "zhuge/xu5g_0.pitree-trace"] {
            read_pitree(&root.join(f)).unwrap();
        }
        for f in ["mahimahi/Verizon-LTE-short.down", "mahimahi/ATT-LTE-driving-2016.down"] {
            read_mahimahi(&root.join(f)).unwrap();
        }
    }
}
