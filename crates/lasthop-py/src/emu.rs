//! `emulate`: a scenario in real time with real nodes (lasthop-emu), returning what `run` returns plus
//! an `emulation` dict (lag, counters, the real nodes, the command's exit).

use crate::{output_dict, Progress};
use lasthop_core::scenario::Scenario;
use lasthop_core::SimDuration;
use lasthop_emu::{EmuConfig, EmuError};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;
use std::sync::atomic::Ordering;

/// `v` (in units of `unit` seconds, as the caller gave it) as a duration of at least 1 ns.
fn duration(name: &str, v: f64, unit: f64) -> PyResult<SimDuration> {
    SimDuration::from_secs_f64(v * unit)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| PyValueError::new_err(format!("{name}: must be a positive number of at least 1 ns, got {}", lasthop_core::scenario::shown(v))))
}

#[pyfunction]
#[pyo3(signature = (scenario_json, base_dir, seed=None, duration_s=None, lag_budget_us=500.0, spin_us=100.0, command=Vec::new(), command_node=None, progress=None, stdout_to_stderr=false, pcap_dir=None, bypass=false, control=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn emulate<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base_dir: &str,
    seed: Option<u64>,
    duration_s: Option<f64>,
    lag_budget_us: f64,
    spin_us: f64,
    command: Vec<String>,
    command_node: Option<String>,
    progress: Option<&Bound<'py, Progress>>,
    stdout_to_stderr: bool,
    pcap_dir: Option<std::path::PathBuf>,
    bypass: bool,
    control: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut sc = Scenario::from_json_str(scenario_json, Path::new(base_dir)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let seed = seed.unwrap_or(sc.seed);
    let cfg = EmuConfig {
        duration: duration_s.map(|d| duration("duration_s", d, 1.0)).transpose()?,
        lag_budget: duration("lag_budget_us", lag_budget_us, 1e-6)?,
        spin: SimDuration::from_secs_f64(spin_us * 1e-6).ok_or_else(|| PyValueError::new_err("spin_us: must be >= 0"))?,
        command,
        command_node,
        command_stdout_to_stderr: stdout_to_stderr,
        pcap_dir,
        bypass,
        control,
    };
    let shared = progress.map(|p| p.get().inner.clone()).unwrap_or_default();
    let out = py.detach(|| lasthop_emu::emulate(&sc, seed, &cfg, &shared.1, &shared.0));
    let out = match out {
        Ok(o) => o,
        Err(EmuError::Scenario(m)) => return Err(PyValueError::new_err(m)),
        Err(e) => return Err(PyOSError::new_err(e.to_string())),
    };
    let cancelled = shared.1.load(Ordering::Relaxed);
    // The control socket's commands join the scenario's, so that replaying it reproduces the run.
    sc.commands.extend(out.commands.iter().cloned());
    let d = output_dict(py, &out.run, &sc, seed)?;
    let e = PyDict::new(py);
    let p999 = out.lag_percentile_ns(99.9);
    e.set_item("lag_p50_us", out.lag_percentile_ns(50.0) as f64 / 1e3)?;
    e.set_item("lag_p99_us", out.lag_percentile_ns(99.0) as f64 / 1e3)?;
    e.set_item("lag_p999_us", p999 as f64 / 1e3)?;
    e.set_item("lag_max_us", out.lag_ns.iter().map(|x| x.1).max().unwrap_or(0) as f64 / 1e3)?;
    let ids: Vec<u64> = out.lag_ns.iter().map(|x| x.0).collect();
    let lags: Vec<u64> = out.lag_ns.iter().map(|x| x.1).collect();
    e.set_item("lag_packets", (ids, lags))?;
    e.set_item("lag_budget_us", lag_budget_us)?;
    e.set_item("within_budget", p999 <= cfg.lag_budget.as_ns())?;
    e.set_item("injected", out.injected)?;
    e.set_item("written", out.written)?;
    e.set_item("unmapped", out.unmapped)?;
    e.set_item("write_failures", out.write_failures)?;
    e.set_item("ended_at_s", out.ended_at.as_secs_f64())?;
    e.set_item("ended_at_ns", out.ended_at.as_ns())?;
    let i = &out.inputs;
    let inputs = (
        i.iter().map(|x| x.at.as_ns()).collect::<Vec<u64>>(),
        i.iter().map(|x| x.port.flow).collect::<Vec<u32>>(),
        i.iter().map(|x| x.port.reverse).collect::<Vec<bool>>(),
        i.iter().map(|x| x.size).collect::<Vec<u32>>(),
        i.iter().map(|x| x.dscp).collect::<Vec<u8>>(),
        i.iter().map(|x| x.tcp.map(|t| (t.seq, t.len, t.ack))).collect::<Vec<Option<(u32, u32, u32)>>>(),
        i.iter().map(|x| crate::rtp_row(x.rtp.as_ref())).collect::<Vec<crate::RtpRow>>(),
    );
    e.set_item("inputs", inputs)?;
    e.set_item("command_status", out.command_status)?;
    e.set_item("command_killed", out.command_killed)?;
    e.set_item("interrupted", cancelled)?;
    e.set_item("control_commands", out.commands.len())?;
    e.set_item("realtime_priority", out.realtime)?;
    e.set_item("cpu_latency_held", out.cpu_latency_held)?;
    e.set_item("rtp", out.rtp.to_string())?;
    let nodes: Vec<(String, String, String)> = out.nodes.iter().map(|n| (n.name.clone(), n.netns.clone(), n.addr.to_string())).collect();
    e.set_item("nodes", nodes)?;
    d.set_item("emulation", e)?;
    if cancelled {
        return Err(PyKeyboardInterrupt::new_err("emulation interrupted"));
    }
    Ok(d)
}
