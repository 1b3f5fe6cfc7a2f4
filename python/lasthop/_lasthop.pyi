"""Typed stubs of the native module ``lasthop._lasthop`` (crates/lasthop-py/src/lib.rs).

The module converts (scenario JSON in, plain Python objects and little-endian column buffers out) and
writes the tables of a run streamed to a directory, and every run's ``flows.parquet``.
Use the ``lasthop`` package API instead of calling it directly.
"""

import os
from typing import Any, TypedDict, final

__version__: str
__all__ = [
    "__version__",
    "Progress",
    "Sim",
    "check",
    "schema",
    "run",
    "FlowRows",
    "write_flows",
    "flow_dtypes",
    "emulate",
    "git_revision",
    "saturation",
    "bianchi_ofdm54",
    "ns3_model_ofdm54",
    "airtime_table",
]

class _Issue(TypedDict):
    type: str
    loc: list[str | int]
    msg: str
    input: Any

# Functional form: `from` is a Python keyword.
_FlowSummary = TypedDict(
    "_FlowSummary",
    {
        "flow": str,
        "kind": str,
        "from": str,
        "to": str,
        "sent_packets": int,
        "delivered_packets": int,
        "dropped_packets": int,
        "in_flight_packets": int,
        "loss_rate": float,
        "sent_bytes": int,
        "delivered_bytes": int,
        "throughput_mbps": float,
        "latency_mean_ms": float | None,
        "latency_p50_ms": float | None,
        "latency_p95_ms": float | None,
        "latency_p99_ms": float | None,
        "latency_p999_ms": float | None,
        "latency_max_ms": float | None,
        "rtt_p50_ms": float | None,
        "rtt_p95_ms": float | None,
        "rtt_p99_ms": float | None,
        "rtt_over_200ms_ratio": float | None,
        "loss_runs5_per_s": float | None,
        "goodput_mbps": float | None,
        "bitrate_mbps": float | None,
        "frames_decoded": int | None,
        "frames_dropped": int | None,
        "frame_latency_p50_ms": float | None,
        "frame_latency_p95_ms": float | None,
        "frame_latency_p99_ms": float | None,
        "frame_latency_p999_ms": float | None,
        "frame_deadline_miss_rate": float | None,
        "freezes": int | None,
        "freezes_per_min": float | None,
        "frozen_ratio": float | None,
        "fps_mean": float | None,
        "fps_under_10_ratio": float | None,
        "percentiles_exact": bool,
    },
)

class _RunOutput(TypedDict):
    packets: dict[str, tuple[str, bytes]]
    """Column name → (numpy dtype string, little-endian bytes). Stage columns ``t_*_ns`` hold
    ``2**64-1`` where the packet did not reach the stage; ``drop_reason`` indexes ``drop_reasons``."""
    drop_reasons: list[str]
    rtt: dict[str, tuple[str, bytes]]
    """RTT samples: ``flow`` (u32), ``t_ns``, ``rtt_ns`` (u64)."""
    frames: dict[str, tuple[str, bytes]]
    """Video frames: ``flow``, ``frame``, ``capture_ns``, ``done_ns``, ``dropped`` (u8)."""
    tx: dict[str, tuple[str, bytes]]
    """PSDU transmissions: ``t_ns``, ``link`` (u32, indexes ``tx_links``), ``mcs``, ``nss`` (u8),
    ``rate_mbps``, ``snr_db`` (f32), ``mpdus``, ``received`` (u16), ``collided`` (u8)."""
    tx_links: list[tuple[str, str]]
    flows: list[_FlowSummary]
    flow_rows: FlowRows
    """The same rows, kept in the core for ``write_flows``."""
    components: dict[str, Any]
    events: int
    event_digest: str
    seed: int
    sim_end_ns: int
    resolved: str

@final
class Progress:
    """Shared progress state of one run: simulated time reached, and a cancel flag."""

    def __new__(cls) -> Progress: ...
    @property
    def sim_time_ns(self) -> int:
        """Simulated time reached so far, in nanoseconds."""
    def cancel(self) -> None:
        """Asks the run to stop at its next progress check (it then raises KeyboardInterrupt)."""

@final
class Sim:
    """A model stepped from Python (``lasthop.Sim`` wraps it); times are integer nanoseconds."""

    def __new__(cls, scenario_json: str, base_dir: str, seed: int | None = None) -> Sim: ...
    @property
    def now_ns(self) -> int:
        """The model's clock."""
    @property
    def end_ns(self) -> int:
        """The end of the run."""
    def next_wakeup_ns(self) -> int | None:
        """When the model next has something to do, or None when nothing is due before the end."""
    def advance_to(self, t_ns: int) -> int:
        """Processes every event due at or before ``t_ns`` (GIL released); returns the count."""
    def components_json(self) -> str:
        """Every component's counters and state so far, as JSON."""
    def command(self, target: str, set_json: str) -> None:
        """Applies a run-time command now. Raises ValueError naming the target or key at fault."""
    def inject(self, flow: str, size: int, reverse: bool = False, dscp: int | None = None,
               tcp: tuple[int, int, int] | None = None, rtp_seq: int | None = None, rtcp: bool = False,
               rtcp_twcc: bytes | None = None) -> int:
        """Hands a packet of external flow ``flow`` to the model now; returns its packet id."""
    def drain_egress(self) -> list[tuple[int, bool, int, int, int, int, int]]:
        """Delivered external packets: ``(flow, reverse, id, size, dscp, sent_ns, delivered_ns)``."""
    def finish(self) -> _RunOutput:
        """Ends the run; raises RuntimeError if it already finished."""

def check(scenario_json: str, base_dir: str) -> tuple[str | None, list[_Issue]]:
    """Validates a scenario. Returns ``(resolved_json, [])`` or ``(None, [issue, ...])``."""

def schema() -> str:
    """The JSON Schema of scenario files, as JSON text."""

def git_revision() -> str:
    """The git revision this module was built from (``unknown`` outside git, ``-dirty`` suffix)."""

def emulate(
    scenario_json: str,
    base_dir: str,
    seed: int | None = None,
    duration_s: float | None = None,
    lag_budget_us: float = 500.0,
    spin_us: float = 100.0,
    command: list[str] = ...,
    command_node: str | None = None,
    progress: Progress | None = None,
    stdout_to_stderr: bool = False,
    pcap_dir: str | None = None,
    bypass: bool = False,
    control: str | None = None,
) -> dict[str, Any]:
    """Runs the scenario in real time with its external flows' endpoints as real namespaces
    (lasthop-emu); ``run``'s dict plus ``emulation``. ValueError: nothing to emulate / unknown node;
    OSError: set-up failed; KeyboardInterrupt: cancelled through ``progress``."""

def run(
    scenario_json: str,
    base_dir: str,
    seed: int | None = None,
    progress: Progress | None = None,
    pcap_dir: str | None = None,
    tables: dict[str, str] | None = None,
    pandas_version: str = "",
    chunk_rows: int = 65536,
) -> _RunOutput:
    """Runs a scenario with the GIL released; with ``pcap_dir``, writes ``<node>.pcap`` there for every
    end host of a flow. With ``tables`` (``{"packets": path, "tx": path, "rtt": path, "frames": path}``),
    those tables are written to Parquet at those paths as the run goes, in row groups of at least
    ``chunk_rows`` finished rows, by a thread of the core (their pandas metadata names
    ``pandas_version``), and the output's own tables are empty; a run that fails removes them. Raises
    ValueError for an invalid scenario, OSError when a capture or a table cannot be written (naming
    the file), and KeyboardInterrupt when ``progress.cancel()`` stopped it."""

@final
class FlowRows:
    """A run's rows of ``flows.parquet``, as the core made them (opaque)."""

def write_flows(path: str | os.PathLike[str], rows: FlowRows, pandas_version: str) -> None:
    """Writes ``flows.parquet`` at ``path`` (typed from the core's flow row whatever values are missing;
    synced). OSError names the file."""

def flow_dtypes() -> list[tuple[str, str]]:
    """``flows.parquet``'s columns in order, each with the pandas dtype it reads back as (``str``, which
    pandas 2 makes ``object``; ``int64``, ``Int64``, ``float64``, ``bool``)."""

# -- validation and benchmark helpers (802.11 model) ------------------------------------------------------

def saturation(
    scenario: str,
    n: int,
    seed: int = 1,
    warmup_s: float = 1.0,
    measure_s: float = 10.0,
) -> dict[str, Any]:
    """One saturated anchor run (``validate ns3``, ``bench``; ``bianchi_11a_54`` and, with RTS/CTS,
    ``bianchi_11a_54_rts`` for ``validate bianchi``):
    throughput, Jain index, p_fail, events.
    Raises ValueError for an unknown scenario name or bad numbers."""

def bianchi_ofdm54(n: int, rts_cts: bool = False) -> tuple[float, float, float]:
    """Bianchi's model for 802.11a 54 Mb/s with ``n`` stations, basic access or (``rts_cts``) RTS/CTS
    ahead of every frame: ``(tau, p, throughput_mbps)``."""

def ns3_model_ofdm54(n: int, sim_mbps: float) -> float | None:
    """ns-3's modified-Bianchi reference for 802.11a 54/24 Mb/s (wifi-model.md §7.3), the closer of its
    DIFS and EIFS variants to ``sim_mbps``; ``None`` if its table has no ``n``."""

def airtime_table(standard: str, lengths: list[int], sgi_round4: bool = True) -> list[dict[str, Any]]:
    """Every valid TxVector of ``standard`` (ofdm, ht, vht, he) with its PPDU duration (ns) per PSDU
    length."""
