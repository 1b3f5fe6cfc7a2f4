//! `lasthop._lasthop`: the thin native module behind the `lasthop` Python package.
//!
//! It converts (JSON scenario text in, plain Python objects and little-endian column buffers out) and,
//! for a run streamed to a directory, writes its tables ([`tables`]).
//! The engine runs with the GIL released; progress and cancellation go through a [`Progress`] object
//! whose fields are atomics, so a Python thread can watch a run without touching engine state.

mod emu;
mod tables;
use lasthop_core::scenario::{json_schema, Scenario, ScenarioError};
use lasthop_core::sim::{self, RunError};
use lasthop_core::validate;
use lasthop_core::stats::{DropReason, Stage};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyBytes, PyDict, PyList};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Shared progress state of one run: simulated time reached, and a cancel flag.
#[pyclass(frozen)]
#[derive(Default)]
pub(crate) struct Progress {
    pub(crate) inner: Arc<(AtomicU64, AtomicBool)>,
}

#[pymethods]
impl Progress {
    #[new]
    fn new() -> Self {
        Progress::default()
    }
    /// Simulated time reached so far, in nanoseconds.
    #[getter]
    fn sim_time_ns(&self) -> u64 {
        self.inner.0.load(Ordering::Relaxed)
    }
    /// Asks the run to stop at its next progress check.
    fn cancel(&self) {
        self.inner.1.store(true, Ordering::Relaxed);
    }
}

fn issues_to_py<'py>(py: Python<'py>, e: &ScenarioError) -> PyResult<Bound<'py, PyList>> {
    let v = serde_json::to_value(&e.issues).expect("issues serialize");
    let json = py.import("json")?;
    json.call_method1("loads", (v.to_string(),))?.cast_into::<PyList>().map_err(Into::into)
}

/// Validates a scenario. Returns `(resolved_json, [])` or `(None, [issue, ...])`.
#[pyfunction]
fn check<'py>(py: Python<'py>, scenario_json: &str, base_dir: &str) -> PyResult<(Option<String>, Bound<'py, PyList>)> {
    match Scenario::from_json_str(scenario_json, Path::new(base_dir)) {
        Ok(sc) => Ok((Some(sc.to_json().to_string()), PyList::empty(py))),
        Err(e) => Ok((None, issues_to_py(py, &e)?)),
    }
}

/// The JSON Schema of scenario files, as JSON text.
#[pyfunction]
fn schema() -> String {
    serde_json::to_string_pretty(&json_schema()).expect("schema serializes")
}

/// The git revision this module was built from.
#[pyfunction]
fn git_revision() -> &'static str {
    env!("LASTHOP_GIT_REV")
}

/// A column's values as little-endian bytes (the dtypes handed to numpy are little-endian): the
/// values' own memory on a little-endian machine (one copy, into the Python bytes), byte-swapped
/// elsewhere. Streaming a busy run hands over about 15 columns per packet; building them byte by
/// byte cost more than the copy.
fn le_bytes<T: bytemuck::Pod>(v: &[T]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(v))
    } else {
        std::borrow::Cow::Owned(v.iter().flat_map(|x| bytemuck::bytes_of(x).iter().rev().copied().collect::<Vec<u8>>()).collect())
    }
}
fn u64_bytes(v: &[u64]) -> std::borrow::Cow<'_, [u8]> {
    le_bytes(v)
}
fn u32_bytes(v: &[u32]) -> std::borrow::Cow<'_, [u8]> {
    le_bytes(v)
}

/// Runs a scenario. Returns a dict with `packets` (column name → (numpy dtype, bytes)), `flows`
/// (list of dicts), `components`, `events`, `event_digest`, `seed` and `resolved` (scenario JSON).
/// With `pcap_dir`, `<node>.pcap` there for every end host ([`lasthop_emu::pcap::HostCaptures`]).
/// With `tables` (`{"packets": path, "tx": path, "rtt": path, "frames": path}`), those tables are
/// written to Parquet as the run goes ([`tables::TableWriter`]), in row groups of at least `chunk_rows`
/// finished rows, and `packets`, `tx`, `rtt` and `frames` of the output are empty; `pandas_version` goes
/// into the files' pandas metadata. A run that fails removes the files it began.
#[pyfunction]
#[pyo3(signature = (scenario_json, base_dir, seed=None, progress=None, pcap_dir=None, tables=None, pandas_version="", chunk_rows=65536))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base_dir: &str,
    seed: Option<u64>,
    progress: Option<&Bound<'py, Progress>>,
    pcap_dir: Option<&str>,
    tables: Option<std::collections::HashMap<String, std::path::PathBuf>>,
    pandas_version: &str,
    chunk_rows: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = Scenario::from_json_str(scenario_json, Path::new(base_dir)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let seed = seed.unwrap_or(sc.seed);
    let shared = progress.map(|p| p.get().inner.clone()).unwrap_or_default();
    let mut sim = match pcap_dir {
        None => sim::Sim::new(&sc, seed),
        Some(dir) => {
            let caps = lasthop_emu::pcap::HostCaptures::create(&sc, Path::new(dir)).map_err(|e| PyOSError::new_err(e.to_string()))?;
            sim::Sim::with_tap(&sc, seed, Box::new(caps))
        }
    };
    let mut cb = |t: lasthop_core::SimTime| {
        shared.0.store(t.as_ns(), Ordering::Relaxed);
        !shared.1.load(Ordering::Relaxed)
    };
    let Some(mut files) = tables else {
        let done = py.detach(|| sim.run_to_end(&mut cb));
        if let Err(RunError::Interrupted(t)) = done {
            return Err(PyKeyboardInterrupt::new_err(format!("run interrupted at {t}")));
        }
        let (out, tap) = sim.finish_with_tap();
        if let Some(mut tap) = tap {
            tap.close().map_err(PyOSError::new_err)?;
        }
        return output_dict(py, &out, &sc, seed);
    };
    let mut file = |name: &str| files.remove(name).ok_or_else(|| PyValueError::new_err(format!("tables: no path for `{name}`")));
    let paths = tables::TableFiles { packets: file("packets")?, tx: file("tx")?, rtt: file("rtt")?, frames: file("frames")? };
    let labels = tables::Labels { flows: sim.flow_names(), pandas_version: pandas_version.to_string() };
    let rows = chunk_rows.max(1);
    let mut writer = tables::TableWriter::start(paths, labels).map_err(PyOSError::new_err)?;
    // The engine, the hand-over and the writing all go on without the GIL.
    let done: Result<(), Result<RunError, String>> = py.detach(|| {
        while sim.run_until_rows(rows, &mut cb).map_err(Ok)? {
            if let Some(chunk) = sim.take_packet_rows(rows) {
                writer.send(tables::Chunk::Packets(chunk)).map_err(Err)?;
            }
            if let Some(log) = writer.written_packets() {
                sim.recycle_packet_rows(log);
            }
            if let Some((tx, links)) = sim.take_tx_rows(rows) {
                writer.send(tables::Chunk::Tx(tx, links)).map_err(Err)?;
            }
            if let Some(rtt) = sim.take_rtt_rows(rows) {
                writer.send(tables::Chunk::Rtt(rtt)).map_err(Err)?;
            }
            if let Some(frames) = sim.take_frame_rows(rows) {
                writer.send(tables::Chunk::Frames(frames)).map_err(Err)?;
            }
        }
        Ok(())
    });
    if let Err(e) = done {
        writer.abandon();
        return Err(match e {
            Ok(RunError::Interrupted(t)) => PyKeyboardInterrupt::new_err(format!("run interrupted at {t}")),
            Err(msg) => PyOSError::new_err(msg),
        });
    }
    let (mut out, tap) = sim.finish_with_tap();
    // The rows left at the end, then the files closed (every table has its file, rows or not).
    let rest = [
        tables::Chunk::RunEnded,
        tables::Chunk::Packets(std::mem::take(&mut out.packets)),
        tables::Chunk::Tx(std::mem::take(&mut out.tx), out.tx_links.clone()),
        tables::Chunk::Rtt(std::mem::take(&mut out.rtt)),
        tables::Chunk::Frames(std::mem::take(&mut out.frames)),
    ];
    let written = py.detach(|| rest.into_iter().try_for_each(|c| writer.send(c)).and_then(|()| writer.finish()));
    if let Err(msg) = written {
        writer.abandon();
        return Err(PyOSError::new_err(msg));
    }
    if let Some(mut tap) = tap {
        tap.close().map_err(PyOSError::new_err)?;
    }
    output_dict(py, &out, &sc, seed)
}

/// A packet log's rows as columns (name → (numpy dtype, bytes)), `packet_id` included.
fn packet_columns<'py>(py: Python<'py>, log: &lasthop_core::stats::PacketLog) -> PyResult<Bound<'py, PyDict>> {
    let cols = PyDict::new(py);
    cols.set_item("flow", ("<u4", PyBytes::new(py, &u32_bytes(&log.flow))))?;
    cols.set_item("seq", ("<u8", PyBytes::new(py, &u64_bytes(&log.seq))))?;
    cols.set_item("size_bytes", ("<u4", PyBytes::new(py, &u32_bytes(&log.size))))?;
    for st in Stage::ALL {
        cols.set_item(st.column(), ("<u8", PyBytes::new(py, &u64_bytes(&log.stages[*st as usize]))))?;
    }
    cols.set_item("drop_reason", ("|u1", PyBytes::new(py, &log.drop_reason)))?;
    cols.set_item("reverse", ("|u1", PyBytes::new(py, &log.reverse)))?;
    cols.set_item("packet_id", ("<u8", PyBytes::new(py, &u64_bytes(&log.ids()))))?;
    Ok(cols)
}

/// RTT samples as columns (name → (numpy dtype, bytes)).
fn rtt_columns<'py>(py: Python<'py>, r: &lasthop_core::stats::RttSeries) -> PyResult<Bound<'py, PyDict>> {
    let rtt = PyDict::new(py);
    rtt.set_item("flow", ("<u4", PyBytes::new(py, &u32_bytes(&r.flow))))?;
    rtt.set_item("t_ns", ("<u8", PyBytes::new(py, &u64_bytes(&r.t))))?;
    rtt.set_item("rtt_ns", ("<u8", PyBytes::new(py, &u64_bytes(&r.rtt))))?;
    Ok(rtt)
}

/// Video frames as columns (name → (numpy dtype, bytes)).
fn frame_columns<'py>(py: Python<'py>, f: &lasthop_core::stats::FrameSeries) -> PyResult<Bound<'py, PyDict>> {
    let fr = PyDict::new(py);
    fr.set_item("flow", ("<u4", PyBytes::new(py, &u32_bytes(&f.flow))))?;
    fr.set_item("frame", ("<u8", PyBytes::new(py, &u64_bytes(&f.frame))))?;
    fr.set_item("capture_ns", ("<u8", PyBytes::new(py, &u64_bytes(&f.capture))))?;
    fr.set_item("done_ns", ("<u8", PyBytes::new(py, &u64_bytes(&f.done))))?;
    fr.set_item("dropped", ("|u1", PyBytes::new(py, &f.dropped)))?;
    Ok(fr)
}

/// Per-PSDU transmission rows as columns (name → (numpy dtype, bytes)).
fn tx_columns<'py>(py: Python<'py>, t: &lasthop_core::mac::medium::TxLog) -> PyResult<Bound<'py, PyDict>> {
    let tx = PyDict::new(py);
    tx.set_item("t_ns", ("<u8", PyBytes::new(py, &u64_bytes(&t.t_ns))))?;
    tx.set_item("link", ("<u4", PyBytes::new(py, &u32_bytes(&t.link))))?;
    tx.set_item("mcs", ("|u1", PyBytes::new(py, &t.mcs)))?;
    tx.set_item("nss", ("|u1", PyBytes::new(py, &t.nss)))?;
    tx.set_item("rate_mbps", ("<f4", PyBytes::new(py, &le_bytes(&t.rate_mbps))))?;
    tx.set_item("snr_db", ("<f4", PyBytes::new(py, &le_bytes(&t.snr_db))))?;
    tx.set_item("mpdus", ("<u2", PyBytes::new(py, &le_bytes(&t.mpdus))))?;
    tx.set_item("received", ("<u2", PyBytes::new(py, &le_bytes(&t.received))))?;
    tx.set_item("collided", ("|u1", PyBytes::new(py, &t.collided.iter().map(|&c| c as u8).collect::<Vec<u8>>())))?;
    Ok(tx)
}

/// A finished run as the dict `run` returns.
pub(crate) fn output_dict<'py>(py: Python<'py>, out: &sim::RunOutput, sc: &Scenario, seed: u64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("packets", packet_columns(py, &out.packets)?)?;
    d.set_item("rtt", rtt_columns(py, &out.rtt)?)?;
    d.set_item("frames", frame_columns(py, &out.frames)?)?;
    d.set_item("tx", tx_columns(py, &out.tx)?)?;
    d.set_item("tx_links", out.tx_links.clone())?;
    let reasons: Vec<&str> = (0u8..=5).map(|c| DropReason::from_code(c).name()).collect();
    d.set_item("drop_reasons", reasons)?;
    let json = py.import("json")?;
    let flows = serde_json::to_string(&out.flows).expect("flows serialize");
    d.set_item("flows", json.call_method1("loads", (flows,))?)?;
    d.set_item("flow_rows", FlowRows(out.flows.clone()))?;
    d.set_item("components", json.call_method1("loads", (out.components.to_string(),))?)?;
    d.set_item("events", out.events)?;
    d.set_item("event_digest", format!("{:016x}", out.event_digest))?;
    d.set_item("seed", seed)?;
    d.set_item("sim_end_ns", out.sim_end.as_ns())?;
    let mut resolved = sc.to_json();
    resolved["seed"] = seed.into();
    d.set_item("resolved", resolved.to_string())?;
    Ok(d)
}

/// An injected packet's RTP fields as Python sees them: (RTCP?, transport seq, transport-cc bytes).
pub(crate) type RtpRow = Option<(bool, Option<u16>, Option<Vec<u8>>)>;

pub(crate) fn rtp_row(r: Option<&sim::InjectedRtp>) -> RtpRow {
    match r? {
        sim::InjectedRtp::Media { transport_seq } => Some((false, Some(*transport_seq), None)),
        sim::InjectedRtp::Rtcp { twcc } => Some((true, None, twcc.clone())),
    }
}

/// A delivered external packet as Python sees it: (flow, reverse, id, size, dscp, sent_ns, delivered_ns).
type EgressRow = (u32, bool, u64, u32, u8, u64, u64);

/// A model stepped from Python (`lasthop.Sim`): the open loop of `lasthop_core::sim::Sim`. Each call
/// that runs the engine releases the GIL.
#[pyclass(name = "Sim", module = "lasthop._lasthop")]
struct PySim {
    inner: Option<sim::Sim>,
    sc: Scenario,
    seed: u64,
}

impl PySim {
    fn sim(&mut self) -> PyResult<&mut sim::Sim> {
        self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("this Sim has finished"))
    }
}

#[pymethods]
impl PySim {
    #[new]
    #[pyo3(signature = (scenario_json, base_dir, seed=None))]
    fn new(scenario_json: &str, base_dir: &str, seed: Option<u64>) -> PyResult<Self> {
        let sc = Scenario::from_json_str(scenario_json, Path::new(base_dir)).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let seed = seed.unwrap_or(sc.seed);
        Ok(PySim { inner: Some(sim::Sim::new(&sc, seed)), sc, seed })
    }
    /// The model's clock, ns.
    #[getter]
    fn now_ns(&mut self) -> PyResult<u64> {
        Ok(self.sim()?.now().as_ns())
    }
    /// The end of the run, ns.
    #[getter]
    fn end_ns(&mut self) -> PyResult<u64> {
        Ok(self.sim()?.end().as_ns())
    }
    /// When the model next has something to do (ns), or None when nothing is due before the end.
    fn next_wakeup_ns(&mut self) -> PyResult<Option<u64>> {
        Ok(self.sim()?.next_wakeup().map(|t| t.as_ns()))
    }
    /// Processes every event due at or before `t_ns` and moves the clock there; returns the count.
    fn advance_to(&mut self, py: Python<'_>, t_ns: u64) -> PyResult<u64> {
        let s = self.sim()?;
        Ok(py.detach(|| s.advance_to(lasthop_core::SimTime::from_ns(t_ns))))
    }
    /// Every component's counters and state so far, as JSON (`summary.json`'s `components`).
    fn components_json(&mut self) -> PyResult<String> {
        Ok(self.sim()?.components().to_string())
    }
    /// Applies a run-time command now; `set_json` is the `set` table as JSON.
    /// The result's scenario records it as a `commands` entry at this time, so that running it with
    /// the seed gives this run.
    fn command(&mut self, target: &str, set_json: &str) -> PyResult<()> {
        let set: serde_json::Map<String, serde_json::Value> = serde_json::from_str(set_json).map_err(|e| PyValueError::new_err(format!("set: {e}")))?;
        self.sim()?.command(target, &set).map_err(|e| PyValueError::new_err(e.to_string()))
    }
    /// Hands a packet of `external` flow `flow` to the model now; returns its id. `rtp_seq`: an RTP
    /// packet's transport-wide sequence number; `rtcp`: it is RTCP, with `rtcp_twcc` the bytes of its
    /// transport-cc feedback message if it has one.
    #[pyo3(signature = (flow, size, reverse=false, dscp=None, tcp=None, rtp_seq=None, rtcp=false, rtcp_twcc=None))]
    #[allow(clippy::too_many_arguments)]
    fn inject(&mut self, flow: &str, size: u32, reverse: bool, dscp: Option<u8>, tcp: Option<(u32, u32, u32)>, rtp_seq: Option<u16>, rtcp: bool, rtcp_twcc: Option<Vec<u8>>) -> PyResult<u64> {
        let s = self.sim()?;
        let port = s.port(flow, reverse).ok_or_else(|| PyValueError::new_err(format!("no `external` flow named '{flow}'")))?;
        let tcp = tcp.map(|(seq, len, ack)| sim::InjectedTcp { seq, len, ack });
        let rtp = match (rtcp, rtp_seq) {
            (true, _) => Some(sim::InjectedRtp::Rtcp { twcc: rtcp_twcc }),
            (false, Some(transport_seq)) => Some(sim::InjectedRtp::Media { transport_seq }),
            (false, None) => None,
        };
        s.inject(port, sim::Injected { size, dscp, tcp, rtp }).map_err(|e| PyValueError::new_err(e.to_string()))
    }
    /// The packets of external flows delivered since the last call: (flow, reverse, id, size, dscp,
    /// sent_ns, delivered_ns) tuples.
    fn drain_egress(&mut self) -> PyResult<Vec<EgressRow>> {
        let out = self.sim()?.drain_egress();
        Ok(out.into_iter().map(|e| (e.flow, e.reverse, e.id, e.size, e.dscp, e.sent.as_ns(), e.delivered.as_ns())).collect())
    }
    /// Ends the run: the same dict as `run`, for what the model did up to now.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.take().ok_or_else(|| PyRuntimeError::new_err("this Sim has finished"))?;
        self.sc.commands.extend(s.stepped_commands().iter().cloned());
        let out = py.detach(|| s.finish());
        output_dict(py, &out, &self.sc, self.seed)
    }
}

/// A run's rows of `flows.parquet` as the core made them, kept by its result until it is saved, so that
/// the core writes the file from them without going through Python.
#[pyclass(frozen, module = "lasthop._lasthop")]
pub(crate) struct FlowRows(Vec<lasthop_core::stats::FlowSummary>);

/// Writes `flows.parquet` at `path` from a run's `flow_rows` ([`tables::write_flows`]).
#[pyfunction]
fn write_flows(py: Python<'_>, path: std::path::PathBuf, rows: &Bound<'_, FlowRows>, pandas_version: &str) -> PyResult<()> {
    let flows = &rows.get().0;
    py.detach(|| tables::write_flows(&path, flows, pandas_version)).map_err(PyOSError::new_err)
}

/// `flows.parquet`'s columns in order, each with the pandas dtype it reads back as.
#[pyfunction]
fn flow_dtypes() -> Vec<(&'static str, &'static str)> {
    tables::flow_dtypes()
}

/// One saturated anchor run (`validate ns3`, `bench`): throughput, Jain index, p_fail, events.
#[pyfunction]
#[pyo3(signature = (scenario, n, seed=1, warmup_s=1.0, measure_s=10.0))]
fn saturation<'py>(py: Python<'py>, scenario: &str, n: u32, seed: u64, warmup_s: f64, measure_s: f64) -> PyResult<Bound<'py, PyAny>> {
    let bianchi = [validate::saturation::BIANCHI, validate::saturation::BIANCHI_RTS];
    if !validate::saturation::SCENARIOS.contains(&scenario) && !bianchi.contains(&scenario) {
        return Err(PyValueError::new_err(format!("unknown scenario '{scenario}'; known: {}, {}", validate::saturation::SCENARIOS.join(", "), bianchi.join(", "))));
    }
    let valid = |x: f64, min: f64| x.is_finite() && x >= min;
    if n == 0 || !valid(warmup_s, 0.0) || !valid(measure_s, f64::MIN_POSITIVE) {
        return Err(PyValueError::new_err("n must be ≥ 1, warmup_s ≥ 0 and measure_s > 0"));
    }
    let name = scenario.to_string();
    let r = py.detach(move || validate::saturation::run(&name, n, seed, warmup_s, measure_s).map(|(r, _)| r));
    let r = r.expect("scenario name checked above");
    let json = py.import("json")?;
    json.call_method1("loads", (serde_json::to_string(&r).expect("serializes"),))
}

/// Bianchi's model for 802.11a 54 Mb/s (ACK 24 Mb/s, 1500 B, DIFS collision time), basic access or
/// (`rts_cts`) RTS/CTS ahead of every frame.
#[pyfunction]
#[pyo3(signature = (n, rts_cts=false))]
fn bianchi_ofdm54(n: u32, rts_cts: bool) -> (f64, f64, f64) {
    use validate::bianchi::BianchiParams;
    let r = validate::bianchi::solve(&if rts_cts { BianchiParams::ofdm_54_rts() } else { BianchiParams::ofdm_54() }, n);
    (r.tau, r.p, r.throughput_mbps)
}

/// ns-3's modified-Bianchi reference (wifi-model.md §7.3) closer to `sim_mbps`, if it has `n`.
#[pyfunction]
fn ns3_model_ofdm54(n: u32, sim_mbps: f64) -> Option<f64> {
    validate::bianchi::ns3_model_closer(n, sim_mbps)
}

/// Every valid TxVector of a standard with its PPDU duration (ns) for each PSDU length.
#[pyfunction]
#[pyo3(signature = (standard, lengths, sgi_round4=true))]
fn airtime_table<'py>(py: Python<'py>, standard: &str, lengths: Vec<u32>, sgi_round4: bool) -> PyResult<Bound<'py, PyAny>> {
    use lasthop_core::phy::{airtime, mcs};
    let std: mcs::PhyStandard = serde_json::from_value(serde_json::Value::String(standard.into()))
        .map_err(|_| PyValueError::new_err(format!("unknown standard '{standard}' (ofdm, ht, vht, he)")))?;
    let opts = airtime::AirtimeOptions { sgi_round4, ns3_compat_vht_sigb: false };
    let rows: Vec<serde_json::Value> = mcs::all_valid_txvectors(std)
        .into_iter()
        .map(|tx| {
            let d: Vec<u64> = lengths.iter().map(|&l| airtime::ppdu_duration_with(&tx, l, mcs::Band::Ghz5, opts).as_ns()).collect();
            serde_json::json!({"txvector": tx, "n_dbps": tx.n_dbps(), "n_es": tx.n_es(), "rate_bps": tx.data_rate().bps(), "durations_ns": d})
        })
        .collect();
    let json = py.import("json")?;
    json.call_method1("loads", (serde_json::Value::Array(rows).to_string(),))
}

#[pymodule]
fn _lasthop(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Progress>()?;
    m.add_class::<PySim>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(write_flows, m)?)?;
    m.add_class::<FlowRows>()?;
    m.add_function(wrap_pyfunction!(flow_dtypes, m)?)?;
    m.add_function(wrap_pyfunction!(emu::emulate, m)?)?;
    m.add_function(wrap_pyfunction!(git_revision, m)?)?;
    m.add_function(wrap_pyfunction!(saturation, m)?)?;
    m.add_function(wrap_pyfunction!(bianchi_ofdm54, m)?)?;
    m.add_function(wrap_pyfunction!(ns3_model_ofdm54, m)?)?;
    m.add_function(wrap_pyfunction!(airtime_table, m)?)?;
    Ok(())
}
