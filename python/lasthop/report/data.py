"""Run directories read for a report, and what the report derives from their packet logs.

Everything here is vectorised numpy over the columns of ``packets.parquet`` (read with pyarrow, only
the columns needed), so a run of millions of packets takes seconds. What is plotted is reduced first:
a latency distribution to about 2,000 points (all of its tail), time series to fixed bins, and the
per-layer breakdown to the mean over at most :data:`BREAKDOWN_SAMPLE` packets per flow (a fixed
stride, so the same run gives the same picture).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from lasthop.errors import RunDirError
from lasthop.result import PACKETS_FILE, RunResult, read_table
from lasthop.stats import binned_percentiles

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunDirError", "Run", "RunSeries", "FlowSeries", "open_run", "analyse", "STAGES", "LAYERS", "QUEUES"]

Floats = npt.NDArray[np.float64]

STAGES = ("t_sent_ns", "t_wired_enq_ns", "t_wired_tx_ns", "t_qdisc_enq_ns", "t_qdisc_deq_ns", "t_txq_enq_ns",
          "t_txq_deq_ns", "t_hw_enq_ns", "t_hw_head_ns", "t_air_start_ns", "t_air_end_ns", "t_delivered_ns")
"""The stage timestamps of ``packets.parquet``, in path order of the Linux AP transmit path."""

LAYER_FROM = {
    "t_sent_ns": "host", "t_wired_enq_ns": "wired", "t_wired_tx_ns": "wired", "t_qdisc_enq_ns": "qdisc",
    "t_qdisc_deq_ns": "qdisc", "t_txq_enq_ns": "txq", "t_txq_deq_ns": "driver", "t_hw_enq_ns": "hw",
    "t_hw_head_ns": "hw", "t_air_start_ns": "air", "t_air_end_ns": "air",
}
"""The layer a packet is in from a stage until the next stage it reaches (in time).

So wired = queue, serialization and propagation of wired links; qdisc = the network-layer queue (the
stand-in last hop's queue); txq = the mac80211 TXQ; driver = txq dequeue to hardware queue; hw = the
hardware queue and channel access until the first attempt; air = first attempt to delivery (retries,
BlockAck, reordering). Ordering by time, not by column, also fits uplink packets (station queues and
air first, then the wired link)."""

LAYERS = ("host", "wired", "qdisc", "txq", "driver", "hw", "air")

QUEUES = {
    "wired": ("t_wired_enq_ns", "t_wired_tx_ns"),
    "qdisc": ("t_qdisc_enq_ns", "t_qdisc_deq_ns"),
    "txq": ("t_txq_enq_ns", "t_txq_deq_ns"),
    "driver": ("t_txq_deq_ns", "t_hw_enq_ns"),
    "hw": ("t_hw_enq_ns", "t_air_end_ns"),
}
"""Queue occupancy per layer: a packet is in it from the first stage until the second."""

ROUND_TRIP_KINDS = frozenset({"ping"})
"""Flow kinds whose latency (in ``flows.parquet``, and so in the report) is the round trip."""

BREAKDOWN_SAMPLE = 200_000
CCDF_POINTS = 1_000
MAX_BINS = 3_000


@dataclass
class Run:
    """An opened run directory: its summary and flows table (packets are read by :func:`analyse`)."""

    path: Path
    shown: str
    """The path as the user gave it (used in messages)."""
    summary: dict[str, Any]
    flows: pd.DataFrame
    label: str = ""

    @property
    def variant(self) -> str | None:
        v = self.summary.get("variant")
        return str(v["name"]) if isinstance(v, dict) and v.get("name") else None

    @property
    def scenario_name(self) -> str:
        return str((self.summary.get("scenario") or {}).get("name") or "")

    @property
    def flow_names(self) -> list[str]:
        return [str(f) for f in self.flows["flow"]] if "flow" in self.flows.columns else []


@dataclass
class FlowSeries:
    """What the plots show for one flow of one run (forward packets only: not its ACKs or replies)."""

    name: str
    ccdf_ms: Floats
    """Latencies (ms) of delivered packets sent after the warm-up, a subset of the sorted values ..."""
    ccdf_p: Floats
    """... and the fraction of packets at least that late (1 down to 1/n)."""
    latency_p50_ms: Floats
    """Per time bin (by send time), NaN where nothing was delivered."""
    latency_p99_ms: Floats
    throughput_mbps: Floats
    """Per time bin (by delivery time)."""
    breakdown_ms: dict[str, float] = field(default_factory=dict)
    """Mean time per layer (``LAYERS``) of delivered packets; sums to the mean latency."""
    delivered: int = 0
    round_trip: bool = False
    """Latency is the round trip (a ``ping`` flow), not one-way."""


@dataclass
class RunSeries:
    """The packet-derived series of one run; ``has_packets`` is False when the run logged none."""

    has_packets: bool
    bin_s: float
    t_s: Floats
    """Bin start times in seconds."""
    warmup_s: float
    flows: list[FlowSeries]
    queues: dict[str, Floats]
    """Per layer present in the run: the largest number of packets in it during each bin."""


def frame_delays(run: Run) -> dict[str, Floats]:
    """Per video flow: the delay (capture → decode, ms) of every frame captured after the warm-up, with
    the frames given up as +inf (they count in the tail, never delivered); empty without frames."""
    res = RunResult.load(run.path)
    frames = res.frames
    if frames.empty:
        return {}
    warm_ns = float((run.summary.get("scenario") or {}).get("warmup_s", 0.0)) * 1e9
    frames = frames[frames["capture_ns"].astype("float64") >= warm_ns]
    out: dict[str, Floats] = {}
    for flow, f in frames.groupby("flow", observed=True, sort=False):
        delay = f["delay_ms"].to_numpy(dtype=np.float64, na_value=np.inf).copy()
        delay[f["dropped"].to_numpy(dtype=bool)] = np.inf
        out[str(flow)] = np.sort(delay)
    return out


@dataclass
class RadioSeries:
    """What the air did over time in one run, per time bin: each video flow's sending rate, and for each
    station the SNR and MCS of the AP's transmissions to it (NaN where it sent none)."""

    t_s: Floats
    bin_s: float
    sent_mbps: dict[str, Floats]
    """Per video flow: the bytes its packets carried in the flow's direction (media, FEC, retransmissions),
    by send time."""
    snr_db: dict[str, Floats]
    """Per station: the mean SNR the AP's PSDUs to it were received at (collisions left out)."""
    mcs: dict[str, Floats]
    """Per station: the median MCS of the AP's PSDUs to it (BlockAckReqs left out)."""


def radio(run: Run, video: list[str]) -> RadioSeries | None:
    """The run's :class:`RadioSeries` (``None`` without a Wi-Fi medium), in the packet series' bins."""
    res = RunResult.load(run.path)
    tx = res.tx
    if tx.empty:
        return None
    scenario = run.summary.get("scenario") or {}
    end_ns = float(run.summary.get("sim_end_ns") or float(scenario.get("duration_s") or 1.0) * 1e9)
    bin_s = _bin_size(end_ns)
    nbins = max(1, math.ceil(end_ns / 1e9 / bin_s))
    aps = {str(a.get("name")) for a in scenario.get("aps", []) if isinstance(a, dict)}
    data = tx[tx["src"].astype(str).isin(aps) & (tx["mpdus"] > 0)]
    snr, mcs = {}, {}
    for station, d in data.groupby("dst", observed=True, sort=True):
        bins = _bins(d["t_ns"].to_numpy(dtype=np.float64), bin_s, nbins)
        ok = np.isfinite(d["snr_db"].to_numpy(dtype=np.float64)) & (bins >= 0)
        total = np.bincount(bins[ok], weights=d["snr_db"].to_numpy(dtype=np.float64)[ok], minlength=nbins)[:nbins]
        count = np.bincount(bins[ok], minlength=nbins)[:nbins]
        with np.errstate(invalid="ignore", divide="ignore"):
            snr[str(station)] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        mcs[str(station)] = binned_percentiles(bins, d["mcs"].to_numpy(dtype=np.float64), nbins, (50.0,))[0]
    sent = {}
    if video:
        p = res.packets
        for flow in video:
            f = p[(p["flow"] == flow) & ~p["reverse"].astype(bool)]
            bins = _bins(f["t_sent_ns"].to_numpy(dtype=np.float64, na_value=np.nan), bin_s, nbins)
            ok = bins >= 0
            sent[flow] = np.bincount(bins[ok], weights=f["size_bytes"].to_numpy(dtype=np.float64)[ok],
                                     minlength=nbins)[:nbins] * 8 / bin_s / 1e6
    return RadioSeries(t_s=np.arange(nbins, dtype=np.float64) * bin_s, bin_s=bin_s, sent_mbps=sent, snr_db=snr, mcs=mcs)


def deadlines_ms(run: Run) -> dict[str, float]:
    """Each flow's frame deadline (``deadline_ms``), where the scenario gives one."""
    out = {}
    for i, f in enumerate((run.summary.get("scenario") or {}).get("flows", [])):
        if isinstance(f, dict) and f.get("deadline_ms") is not None:
            out[str(f.get("name") or f"flow{i}")] = float(f["deadline_ms"])
    return out


def open_run(path: str | os.PathLike[str]) -> Run:
    """Reads a run directory with :meth:`RunResult.load <lasthop.RunResult.load>` (which checks it and
    raises :class:`RunDirError` naming the path); its packets are read by :func:`analyse`."""
    res = RunResult.load(path)
    return Run(path=Path(path), shown=os.fspath(path), summary=res.summary, flows=res.flows)


# -- packets ------------------------------------------------------------------------------------------

def _bin_size(end_ns: float) -> float:
    """100 ms bins, widened (to 0.2/0.5/1/2/5… s) so that a long run has at most MAX_BINS of them."""
    b = 0.1
    steps = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
    for s in steps:
        if end_ns / 1e9 / b <= MAX_BINS:
            break
        b = s
    return b


def analyse(run: Run) -> RunSeries:
    """Reads ``packets.parquet`` and derives every series the report plots."""
    import pyarrow as pa
    import pyarrow.compute as pc

    scenario = run.summary.get("scenario") or {}
    warmup_ns = float(scenario.get("warmup_s") or 0.0) * 1e9
    end_ns = float(run.summary.get("sim_end_ns") or float(scenario.get("duration_s") or 1.0) * 1e9)
    bin_s = _bin_size(end_ns)
    nbins = max(1, math.ceil(end_ns / (bin_s * 1e9)))
    t_s = np.arange(nbins, dtype=np.float64) * bin_s
    names = read_table(run.shown, PACKETS_FILE, schema_only=True).names
    stages = [s for s in STAGES if s in names]
    extra = [c for c in ("seq", "reverse", "drop_reason", "size_bytes") if c in names]
    table = read_table(run.shown, PACKETS_FILE, columns=["flow", *extra, *stages])
    if table.num_rows == 0 or "t_sent_ns" not in stages or "t_delivered_ns" not in stages:
        return RunSeries(has_packets=False, bin_s=bin_s, t_s=t_s, warmup_s=warmup_ns / 1e9, flows=[], queues={})

    flow_col = table.column("flow").combine_chunks()
    if not pa.types.is_dictionary(flow_col.type):
        flow_col = pc.dictionary_encode(flow_col)
    codes = flow_col.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = [str(x) for x in flow_col.dictionary.to_pylist()]
    n = table.num_rows
    t = {s: pc.cast(table.column(s), pa.float64()).to_numpy() for s in stages}
    pk = _Packets(
        t=t, stages=stages, forward=~_bools(table, "reverse", n), delivered=~np.isnan(t["t_delivered_ns"]),
        seq=table.column("seq").to_numpy().astype(np.int64) if "seq" in extra else np.arange(n, dtype=np.int64),
        size=table.column("size_bytes").to_numpy().astype(np.float64) if "size_bytes" in extra else np.zeros(n),
        sent_bin=_bins(t["t_sent_ns"], bin_s, nbins), deliv_bin=_bins(t["t_delivered_ns"], bin_s, nbins),
        nbins=nbins, bin_s=bin_s, warmup_ns=warmup_ns)
    dropped = _bools(table, "drop_reason", n)
    del table

    kinds = dict(zip(run.flow_names, (str(k) for k in run.flows["kind"]))) if "kind" in run.flows.columns else {}
    flows = []
    for name in run.flow_names or dictionary:
        mine = codes == (dictionary.index(name) if name in dictionary else -1)
        flows.append(_flow_series(name, mine, pk, round_trip=kinds.get(name) in ROUND_TRIP_KINDS))
    queues = {layer: _occupancy(t[a], t[b], dropped, bin_s, nbins)
              for layer, (a, b) in QUEUES.items() if a in t and b in t and not np.isnan(t[a]).all()}
    return RunSeries(has_packets=True, bin_s=bin_s, t_s=t_s, warmup_s=warmup_ns / 1e9, flows=flows, queues=queues)


@dataclass
class _Packets:
    """The columns of one run's packet log, as numpy arrays (times as float ns, NaN if not reached)."""

    t: dict[str, Floats]
    stages: list[str]
    forward: npt.NDArray[np.bool_]
    delivered: npt.NDArray[np.bool_]
    seq: npt.NDArray[np.int64]
    size: Floats
    sent_bin: npt.NDArray[np.int64]
    deliv_bin: npt.NDArray[np.int64]
    nbins: int
    bin_s: float
    warmup_ns: float


def _bools(table: Any, name: str, n: int) -> npt.NDArray[np.bool_]:
    """A boolean column as numpy; for a non-boolean column (``drop_reason``) whether it is set."""
    import pyarrow as pa

    if name not in table.column_names:
        return np.zeros(n, dtype=bool)
    col = table.column(name)
    if pa.types.is_boolean(col.type):
        return np.asarray(col.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    return np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _bins(t_ns: Floats, bin_s: float, nbins: int) -> npt.NDArray[np.int64]:
    """The bin of each time, -1 for NaN; times past the end go to the last bin."""
    with np.errstate(invalid="ignore"):
        b = np.floor(t_ns / (bin_s * 1e9))
    out = np.where(np.isnan(b), -1, np.clip(b, 0, nbins - 1)).astype(np.int64)
    return out


def _flow_series(name: str, mine: npt.NDArray[np.bool_], pk: _Packets, round_trip: bool) -> FlowSeries:
    """A flow's series. Latency is one-way (send → delivery) for its forward packets, or for a
    ``ping`` flow the round trip (request sent → its reply delivered, matched by ``seq``), as in the
    flows table. The breakdown then adds the request's and the reply's layers."""
    sent, deliv = pk.t["t_sent_ns"], pk.t["t_delivered_ns"]
    ok = np.flatnonzero(mine & pk.forward & pk.delivered)
    thr = np.bincount(pk.deliv_bin[ok], weights=pk.size[ok], minlength=pk.nbins)[:pk.nbins] * 8 / pk.bin_s / 1e6
    if round_trip:
        first, last = _pairs(np.flatnonzero(mine & pk.forward), np.flatnonzero(mine & ~pk.forward & pk.delivered),
                             pk.seq)
    else:
        first, last = ok, ok
    start = sent[first]
    lat_all = (deliv[last] - start) / 1e6
    p50, p99 = binned_percentiles(pk.sent_bin[first], lat_all, pk.nbins, (50.0, 99.0))
    counted = start >= pk.warmup_ns
    lat = np.sort(lat_all[counted])
    x, p = _ccdf(lat)
    parts = [_breakdown(pk.t, pk.stages, first[counted])]
    if round_trip:
        parts.append(_breakdown(pk.t, pk.stages, last[counted]))
    breakdown = {layer: sum(b.get(layer, 0.0) for b in parts) for layer in LAYERS} if parts[0] else {}
    return FlowSeries(name=name, ccdf_ms=x, ccdf_p=p, latency_p50_ms=p50, latency_p99_ms=p99,
                      throughput_mbps=thr, breakdown_ms=breakdown, delivered=int(lat.size), round_trip=round_trip)


def _pairs(requests: npt.NDArray[np.intp], replies: npt.NDArray[np.intp],
           seq: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Row indices of (request, reply) pairs with the same ``seq``; replies without a request are left out."""
    order = np.argsort(seq[requests], kind="stable")
    sorted_seq = seq[requests][order]
    pos = np.searchsorted(sorted_seq, seq[replies])
    found = pos < sorted_seq.size
    found[found] = sorted_seq[pos[found]] == seq[replies][found]
    return requests[order[pos[found]]], replies[found]


def _ccdf(sorted_ms: Floats) -> tuple[Floats, Floats]:
    """Points of the complementary CDF P(latency ≥ x): evenly spread over the body, and every
    quantile of the tail down to the single worst packet (geometric in 1 − p)."""
    n = sorted_ms.size
    if n == 0:
        return np.empty(0), np.empty(0)
    body = np.linspace(0, n - 1, CCDF_POINTS)
    tail = n - np.geomspace(1, n, CCDF_POINTS)
    idx = np.unique(np.concatenate([body, tail]).astype(np.int64).clip(0, n - 1))
    return sorted_ms[idx], (n - idx) / n


def _breakdown(t: dict[str, Floats], stages: list[str], idx: npt.NDArray[np.intp]) -> dict[str, float]:
    """Mean time (ms) per layer of the selected packets: each packet's stage times sorted, each gap
    charged to the layer of the stage that starts it (``LAYER_FROM``)."""
    if idx.size == 0:
        return {}
    if idx.size > BREAKDOWN_SAMPLE:
        idx = idx[:: math.ceil(idx.size / BREAKDOWN_SAMPLE)]
    m = np.column_stack([t[s][idx] for s in stages])
    order = np.argsort(m, axis=1, kind="stable")  # NaN (stage not reached) sorts last
    ts = np.take_along_axis(m, order, axis=1)
    gaps = np.nan_to_num(np.diff(ts, axis=1), nan=0.0)
    layer_of = np.array([LAYERS.index(LAYER_FROM[s]) if s in LAYER_FROM else -1 for s in stages])
    start_layer = layer_of[order[:, :-1]]
    out = {}
    for i, layer in enumerate(LAYERS):
        out[layer] = float(np.where(start_layer == i, gaps, 0.0).sum(axis=1).mean() / 1e6)
    return out


def _occupancy(enq: Floats, deq: Floats, dropped: npt.NDArray[np.bool_], bin_s: float,
               nbins: int) -> Floats:
    """The largest number of packets between ``enq`` and ``deq`` during each bin.

    A packet that entered and never left is still there at the end, unless it was dropped: its leave
    time is not logged, so it is left out (an underestimate where an AQM drops). Packets that pass
    through in zero time never count; at equal times a departure comes before an arrival.
    """
    inside = ~np.isnan(enq) & ~(np.isnan(deq) & dropped)
    e, d = enq[inside], deq[inside]
    stayed = np.isnan(d) | (d > e)
    e, d = e[stayed], d[stayed]
    d = d[~np.isnan(d)]
    out = np.zeros(nbins)
    if e.size == 0:
        return out
    times = np.concatenate([e, d])
    steps = np.concatenate([np.ones(e.size), -np.ones(d.size)])
    order = np.lexsort((steps, times))
    times, level = times[order], np.cumsum(steps[order])
    b = _bins(times, bin_s, nbins)
    np.maximum.at(out, b, level)
    # A bin without events keeps the level the previous events left.
    edges = np.arange(nbins, dtype=np.float64) * bin_s * 1e9
    before = np.searchsorted(times, edges, side="left") - 1
    carried = np.where(before >= 0, level[before.clip(0)], 0.0)
    return np.maximum(out, carried)
