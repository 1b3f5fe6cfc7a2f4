"""The result of one run: per-packet and per-flow DataFrames and a deterministic summary.

Run directory layout (written by :meth:`RunResult.save`)::

    packets.parquet   one row per packet (see PACKET_COLUMNS)
    flows.parquet     one row per flow (sent/delivered/dropped, loss, throughput, latency percentiles,
                      RTT, video frame metrics)
    rtt.parquet       every RTT sample (flow, time, RTT)
    frames.parquet    every video frame decoded or given up (flow, frame, capture, done, delay)
    tx.parquet        every PSDU transmission on the Wi-Fi medium (time, link, MCS, rate, SNR, MPDUs)
    summary.json      lasthop version, git revision, seed, resolved scenario, metrics, event digest
                      (and ``variant``: name, description, set, when the scenario was a variant)

Each file is written to a temporary name in the same directory and renamed into place, and
``summary.json`` is written last: its presence marks a complete run. The summary holds nothing that
depends on the host or the wall clock, so two runs of a scenario with the same seed produce
byte-identical ``summary.json`` files.

Timestamps are integer nanoseconds of simulated time in pandas' nullable ``Int64`` dtype: a packet that
never reached a stage has ``<NA>`` there (the core's ``2**64-1`` marker). ``latency_ms`` is a plain
``float64`` with ``NaN`` for packets that were not delivered, so numpy reductions work on it directly.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from lasthop import _lasthop
from lasthop.errors import RunDirError
from lasthop.stats import jain

if TYPE_CHECKING:
    import pandas as pd

    from lasthop.scenario import Scenario

__all__ = ["RunResult", "SUMMARY_FORMAT", "NOT_REACHED", "dumps_summary", "read_table", "setup_rows"]

SUMMARY_FORMAT = "lasthop-run/1"
"""Version tag of the run directory layout, stored in ``summary.json`` as ``format``."""

NOT_REACHED = 2**64 - 1
"""The core's marker for a stage a packet did not reach (becomes ``<NA>``)."""

PACKETS_FILE, FLOWS_FILE, SUMMARY_FILE = "packets.parquet", "flows.parquet", "summary.json"
RTT_FILE, FRAMES_FILE, TX_FILE = "rtt.parquet", "frames.parquet", "tx.parquet"
RUN_FILES = (PACKETS_FILE, FLOWS_FILE, RTT_FILE, FRAMES_FILE, TX_FILE, SUMMARY_FILE)

_Lazy = Union["pd.DataFrame", Callable[[], "pd.DataFrame"]]


def dumps_summary(summary: Mapping[str, Any]) -> str:
    """The canonical JSON text of a summary (sorted keys, 2-space indent, trailing newline)."""
    return json.dumps(summary, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


class RunResult:
    """What a run produced. ``packets`` and ``flows`` are pandas DataFrames; ``summary`` is a dict."""

    def __init__(self, summary: dict[str, Any], flows: _Lazy,
                 packets: pd.DataFrame | Callable[[], pd.DataFrame],
                 rtt: _Lazy | None = None, frames: _Lazy | None = None, tx: _Lazy | None = None,
                 files: Mapping[str, Path] | None = None, flow_rows: _lasthop.FlowRows | None = None) -> None:
        self.summary = summary
        self._flows = flows
        # The core's rows of the flows table, which `save` hands back to the core's writer.
        self._flow_rows = flow_rows
        self._packets = packets
        # Where tables already are on disk (a streamed or loaded run): saving copies those files.
        self._files: dict[str, Path] = dict(files or {})
        self._rtt: _Lazy = rtt if rtt is not None else (lambda: _empty_series(RTT_COLUMNS))
        self._frames: _Lazy = frames if frames is not None else (lambda: _empty_series(FRAME_COLUMNS))
        self._tx: _Lazy = tx if tx is not None else (lambda: _empty_series(TX_COLUMNS))

    @property
    def flows(self) -> pd.DataFrame:
        """One row per flow (the columns of ``flows.parquet``, typed whichever values are missing:
        counts ``int64``, counts a flow may lack nullable ``Int64``, metrics ``float64`` with NaN, names
        ``str``, ``object`` under pandas 2), built on first access. A copy to change: :meth:`save` writes
        the flows as the run produced them."""
        if callable(self._flows):
            self._flows = self._flows()
        return self._flows

    @property
    def rtt(self) -> pd.DataFrame:
        """Every RTT sample: ``flow``, ``t_ns`` (when the sender took it), ``rtt_ms``. TCP: one per ACK
        (echoed timestamp); RTC: one per packet reported in TWCC feedback; ping: one per reply."""
        if callable(self._rtt):
            self._rtt = self._rtt()
        return self._rtt

    @property
    def frames(self) -> pd.DataFrame:
        """Every video frame decoded or given up: ``flow``, ``frame``, ``capture_ns``, ``done_ns``
        (decode or discard time), ``delay_ms`` (done − capture) and ``dropped``."""
        if callable(self._frames):
            self._frames = self._frames()
        return self._frames

    @property
    def tx(self) -> pd.DataFrame:
        """Every PSDU transmission on the Wi-Fi medium (an attempt; BlockAckReqs too), in time order:
        ``t_ns`` (its start), ``link`` (``"ap->laptop"``), ``src``, ``dst``, ``mcs``, ``nss``, ``rate_mbps``,
        ``snr_db`` (the link's SNR at one receive antenna, before the receiver's diversity gain and
        order; NaN for a collision), ``mpdus``, ``received`` and ``collided``. Empty without a Wi-Fi
        last hop."""
        if callable(self._tx):
            self._tx = self._tx()
        return self._tx

    @property
    def packets(self) -> pd.DataFrame:
        """One row per packet, built on first access."""
        if callable(self._packets):
            self._packets = self._packets()
        return self._packets

    @property
    def stats(self) -> dict[str, pd.DataFrame]:
        """Per-component counters as DataFrames (flattened column names like ``stats.ppdus``):
        ``"links"`` (wired pipes and the stand-in last hop), and for a Wi-Fi last hop ``"wifi_links"``
        (one row per transmitter → receiver: PPDUs, MPDUs, airtime, rate) and ``"wifi_nodes"`` (one row
        per node: MAC counters, contention windows, transmit-path counters incl. rate-control tables)."""
        import pandas as pd

        comp = self.summary.get("components", {})
        out = {"links": pd.json_normalize(comp.get("links") or [])}
        wifi = comp.get("wifi") or {}
        if wifi:
            out["wifi_links"] = pd.json_normalize(wifi.get("links") or [])
            out["wifi_nodes"] = pd.json_normalize(wifi.get("nodes") or [], max_level=2)
        return out

    @property
    def setup(self) -> pd.DataFrame:
        """What actually ran, one row per node and link it sends on (:func:`setup_rows`): the transmit
        path, queues, rate control and streams as built, and the mechanisms installed."""
        import pandas as pd

        return pd.DataFrame(setup_rows(self.summary), columns=list(SETUP_COLUMNS))

    @property
    def seed(self) -> int:
        return int(self.summary["seed"])

    @property
    def scenario(self) -> Scenario:
        """The resolved scenario of this run (running it with ``seed`` reproduces the run)."""
        from lasthop.scenario import Scenario

        return Scenario(self.summary["scenario"], variant=self.summary.get("variant"))

    def summary_json(self) -> str:
        """``summary`` as canonical JSON: exactly the bytes of ``summary.json``."""
        return dumps_summary(self.summary)

    def __repr__(self) -> str:
        name = self.summary["scenario"].get("name") or "scenario"
        flows = len(self.summary["metrics"]["flows"])
        return f"<RunResult {name!r} seed={self.seed} flows={flows} events={self.summary['events']}>"

    # -- building from the core -----------------------------------------------------------------------

    @classmethod
    def _from_native(cls, out: Mapping[str, Any], variant: Mapping[str, Any] | None = None,
                     streamed: Mapping[str, Path] | None = None) -> RunResult:
        """The result of a run from the core's dict; with ``streamed`` (table name → file), those tables
        are the files written as the run went, and the core's rows of them are ignored."""
        flows = list(out["flows"])
        names = [f["flow"] for f in flows]
        summary = _summary(out, flows)
        if variant is not None:
            summary["variant"] = dict(variant)
        cols, reasons = out["packets"], list(out["drop_reasons"])
        rtt, frames, tx, tx_links = out.get("rtt"), out.get("frames"), out.get("tx"), out.get("tx_links", [])
        files = dict(streamed or {})

        def table(name: str, build: Callable[[], pd.DataFrame]) -> Callable[[], pd.DataFrame]:
            path = files.get(name)
            return build if path is None else (lambda: _read_frame(path))

        return cls(summary, lambda: _flows_frame(flows),
                   table("packets", lambda: _packets_frame(cols, reasons, names)),
                   rtt=table("rtt", lambda: _rtt_frame(rtt, names)) if rtt is not None else None,
                   frames=table("frames", lambda: _frames_frame(frames, names)) if frames is not None else None,
                   tx=table("tx", lambda: _tx_frame(tx, tx_links)) if tx is not None else None, files=files,
                   flow_rows=out["flow_rows"])

    # -- run directories ------------------------------------------------------------------------------

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Writes ``packets.parquet``, ``flows.parquet`` and (last) ``summary.json`` into ``directory``.

        An existing ``summary.json`` there is removed first, so the directory never looks complete
        while it mixes files of two runs. Returns the directory. A result streamed to a directory
        (``lasthop.run(..., out=)``) or loaded copies its table files rather than reading them into
        memory, and ``flows.parquet`` is always written from the core's rows (or copied): the tables are
        saved as the run produced them, not as changed in memory.
        """
        import shutil

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / SUMMARY_FILE).unlink(missing_ok=True)

        def parquet(df: pd.DataFrame) -> Callable[[Path], None]:
            def write(tmp: Path) -> None:
                import pandas as pd
                import pyarrow as pa
                import pyarrow.parquet as pq

                t = pa.Table.from_pandas(df, preserve_index=False)
                categories = {c: [str(x) for x in df[c].cat.categories] for c in df.columns
                              if isinstance(df[c].dtype, pd.CategoricalDtype)}
                t = t.replace_schema_metadata({**(t.schema.metadata or {}), CATEGORIES_KEY: json.dumps(categories).encode()})
                pq.write_table(t, tmp, **_parquet_options(t.schema))
            return write

        def table(name: str, on_disk: Path | None, df: Callable[[], pd.DataFrame]) -> None:
            if on_disk is None:
                _atomic_write(d / name, parquet(df()))
            elif on_disk.resolve() != (d / name).resolve():
                _atomic_write(d / name, lambda tmp: shutil.copyfile(on_disk, tmp))

        table(PACKETS_FILE, self._files.get("packets"), lambda: self.packets)
        rows = self._flow_rows
        if rows is not None:
            _atomic_write(d / FLOWS_FILE, lambda tmp: _lasthop.write_flows(tmp, rows, pandas_version()))
        else:
            table(FLOWS_FILE, self._files.get("flows"), lambda: self.flows)
        table(RTT_FILE, self._files.get("rtt"), lambda: self.rtt)
        table(FRAMES_FILE, self._files.get("frames"), lambda: self.frames)
        table(TX_FILE, self._files.get("tx"), lambda: self.tx)
        text = self.summary_json()
        _atomic_write(d / SUMMARY_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        _fsync_dir(d)
        return d

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> RunResult:
        """Reads a run directory written by :meth:`save`: the summary and flows table now, the packet,
        RTT and frame tables on first access.

        Raises :class:`~lasthop.errors.RunDirError` naming the directory as given: no such directory, no
        ``summary.json`` (an unfinished or interrupted run), a file that cannot be parsed or is not
        lasthop's. ``packets.parquet`` is checked here (its schema).
        """
        import pandas as pd

        d, shown = Path(directory), os.fspath(directory)
        summary = _read_summary(d, shown)
        flows = read_table(directory, FLOWS_FILE).to_pandas()
        if "flow" not in flows.columns:
            raise RunDirError(f"{os.path.join(shown, FLOWS_FILE)}: not a lasthop flows table (no `flow` column)")
        read_table(directory, PACKETS_FILE, schema_only=True)

        def optional(name: str, columns: Mapping[str, str]) -> Callable[[], pd.DataFrame]:
            # Run directories written before these files existed load with empty tables.
            return lambda: _read_frame(d / name) if (d / name).exists() else _empty_series(columns)

        return cls(summary, flows, lambda: _read_frame(d / PACKETS_FILE),
                   rtt=optional(RTT_FILE, RTT_COLUMNS), frames=optional(FRAMES_FILE, FRAME_COLUMNS),
                   tx=optional(TX_FILE, TX_COLUMNS),
                   files={k: d / f for k, f in (("packets", PACKETS_FILE), ("flows", FLOWS_FILE), ("rtt", RTT_FILE), ("tx", TX_FILE))
                          if (d / f).exists()})


def _parquet_options(schema: Any) -> dict[str, Any]:
    """How lasthop writes a kept run's tables: dictionary encoding only for the categorical columns (flow
    and link names, drop reasons). Times, sizes and rates are nearly all distinct, and dictionary-encoding
    them cost a third of the writing time (the core's writer of streamed runs does the same)."""
    import pyarrow as pa

    return {"use_dictionary": [f.name for f in schema if pa.types.is_dictionary(f.type)]}


STREAMED_FILES = {"packets": PACKETS_FILE, "tx": TX_FILE, "rtt": RTT_FILE, "frames": FRAMES_FILE}
"""The tables a run streamed to its directory writes as it goes (``lasthop.run(..., out=)``)."""


def streamed_temporaries(d: Path) -> dict[str, Path]:
    """Where a run streamed to directory ``d`` writes each of :data:`STREAMED_FILES` until it is
    complete (:func:`_temporary`, so :func:`remove_stale_temporaries` finds what a killed run left)."""
    return {name: _temporary(d / f, "streaming") for name, f in STREAMED_FILES.items()}


def put_streamed_in_place(d: Path, temporaries: Mapping[str, Path]) -> dict[str, Path]:
    """Renames a complete streamed run's tables to their names (the core synced them to disk when it
    closed them); returns each table's file."""
    files = {name: d / STREAMED_FILES[name] for name in temporaries}
    for name, tmp in temporaries.items():
        os.replace(tmp, files[name])
    return files


def _read_frame(path: Path) -> pd.DataFrame:
    """A table file of a run directory as the DataFrame users get (:func:`read_table`: categories
    restored, a bad file a :class:`~lasthop.errors.RunDirError` naming it)."""
    return read_table(path.parent, path.name).to_pandas()


def pandas_version() -> str:
    """The installed pandas' version (for the metadata of the tables the core writes), read without
    importing pandas: from the name of its distribution's directory beside it (``pandas-X.dist-info``,
    named so by the wheel format), else from :mod:`importlib.metadata`, whose import alone (its email
    parser) took 40–90 ms of a streamed run's start."""
    import importlib.util

    spec = importlib.util.find_spec("pandas")
    if spec is not None and spec.origin:
        found = list(Path(spec.origin).parent.parent.glob("pandas-*.dist-info"))
        if len(found) == 1:
            return found[0].name.removeprefix("pandas-").removesuffix(".dist-info")
    import importlib.metadata

    return importlib.metadata.version("pandas")


SETUP_COLUMNS = ("node", "role", "path", "queues", "link", "rate_control", "rate_control_detail", "streams", "mechanisms",
                 "mechanism_roles")
"""The columns of :func:`setup_rows`."""


def setup_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What actually ran (``components.setup`` of ``summary``, built by the core from the objects it
    ran, not from the scenario): one row per node and link it sends on (one row without a link for a
    wired AP that runs mechanisms). ``mechanisms`` names the node's mechanisms in install order
    (``law, zhuge``), ``mechanism_roles`` adds what each took over (``law: set the driver's policy, …,
    choose the downlink rates; zhuge: …``). Empty for runs saved before it existed."""
    rows: list[dict[str, Any]] = []
    for n in (summary.get("components") or {}).get("setup") or []:
        ms = n.get("mechanisms", [])
        names, roles = ", ".join(m["name"] for m in ms), "; ".join(f"{m['name']}: {', '.join(m['roles'])}" if m["roles"] else m["name"] for m in ms)
        node = {"node": n["node"], "role": "AP" if n["is_ap"] else "station", "path": n["path"], "queues": n["queues"]}
        links = n["links"] or [{"link": None, "rate_control": None, "detail": None, "max_nss": None}]
        rows += [{**node, "link": li["link"], "rate_control": li["rate_control"], "rate_control_detail": li["detail"],
                  "streams": li["max_nss"], "mechanisms": names, "mechanism_roles": roles} for li in links]
    return rows


def _read_summary(d: Path, shown: str) -> dict[str, Any]:
    """The ``summary.json`` of run directory ``d`` (``shown`` as the user gave it), checked."""
    if not d.exists():
        raise RunDirError(f"{shown}: no such directory")
    if not d.is_dir():
        raise RunDirError(f"{shown}: not a directory (expected a run directory)")
    sfile = d / SUMMARY_FILE
    if not sfile.is_file():
        what = "a complete run directory" if any((d / f).exists() for f in RUN_FILES) else "a run directory"
        raise RunDirError(f"{shown}: not {what} (no {SUMMARY_FILE}; an unfinished or interrupted run has none)")
    try:
        summary = json.loads(sfile.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise RunDirError(f"{os.path.join(shown, SUMMARY_FILE)}: cannot read: {e}") from None
    if not isinstance(summary, dict) or not str(summary.get("format", "")).startswith(SUMMARY_FORMAT.split("/")[0]):
        raise RunDirError(f"{os.path.join(shown, SUMMARY_FILE)}: not a lasthop run summary (no format '{SUMMARY_FORMAT}')")
    return summary


CATEGORIES_KEY = b"lasthop.categories"
"""Schema metadata of lasthop's tables: each categorical column's categories, in order (JSON)."""


def _with_categories(table: Any) -> Any:
    """``table`` with each categorical column's dictionary the categories its file names
    (:data:`CATEGORIES_KEY`), whatever the row groups kept: Parquet writers other than pyarrow (the
    core's) keep in each row group only the values it uses, in the order met, so a flow without packets
    or a drop reason that never happened would vanish and the order follow the run."""
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = (table.schema.metadata or {}).get(CATEGORIES_KEY)
    for name, categories in (json.loads(raw) if raw else {}).items():
        i = table.schema.get_field_index(name)
        if i < 0 or not categories:
            continue
        field = table.schema.field(i)
        values = pa.array(categories, field.type.value_type)
        chunks = []
        for c in table.column(i).chunks:
            at = pc.index_in(c.dictionary.cast(values.type), value_set=values)
            if at.null_count > c.dictionary.null_count:
                raise ValueError(f"column {name!r} holds values not among the categories its file names")
            chunks.append(pa.DictionaryArray.from_arrays(pc.take(at, c.indices).cast(field.type.index_type), values))
        table = table.set_column(i, field, pa.chunked_array(chunks, type=field.type))
    return table


def read_table(directory: str | os.PathLike[str], name: str, columns: Sequence[str] | None = None,
               schema_only: bool = False) -> Any:
    """One parquet file of a run directory as a pyarrow table (only ``columns``, if given; categorical
    columns with their categories in order, :func:`_with_categories`), or its schema only; a missing or
    unreadable file is a :class:`~lasthop.errors.RunDirError` naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    shown, path = os.fspath(directory), Path(directory) / name
    try:
        return pq.read_schema(path) if schema_only else _with_categories(pq.read_table(path, columns=columns))
    except FileNotFoundError:
        raise RunDirError(f"{shown}: not a complete run directory (no {name})") from None
    except (OSError, pa.ArrowException, ValueError, KeyError) as e:
        raise RunDirError(f"{os.path.join(shown, name)}: cannot read: {_first_line(e)}") from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _summary(out: Mapping[str, Any], flows: list[dict[str, Any]]) -> dict[str, Any]:
    scenario = json.loads(out["resolved"])
    canonical = json.dumps(scenario, sort_keys=True, separators=(",", ":"))
    per_flow = {f["flow"]: {k: v for k, v in f.items() if k != "flow"} for f in flows}
    return {
        "format": SUMMARY_FORMAT,
        "lasthop_version": _lasthop.__version__,
        "git_revision": _lasthop.git_revision(),
        "seed": int(out["seed"]),
        "scenario": scenario,
        "scenario_sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "sim_end_ns": int(out["sim_end_ns"]),
        "metrics": {"flows": per_flow, "aggregate": _aggregate(flows)},
        "components": out["components"],
        "events": int(out["events"]),
        "event_digest": out["event_digest"],
    }


def _aggregate(flows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("sent_packets", "delivered_packets", "dropped_packets", "in_flight_packets", "sent_bytes",
            "delivered_bytes")
    agg: dict[str, Any] = {k: sum(int(f[k]) for f in flows) for k in keys}
    agg["flows"] = len(flows)
    agg["loss_rate"] = agg["dropped_packets"] / agg["sent_packets"] if agg["sent_packets"] else 0.0
    thr = [float(f["throughput_mbps"]) for f in flows]
    agg["throughput_mbps"] = sum(thr)
    agg["jain_throughput"] = jain(thr)
    return agg


PACKET_COLUMNS = {
    "flow": "flow name (categorical; matches flows.parquet `flow`)",
    "flow_id": "flow index in the scenario (uint32)",
    "seq": "per-flow sequence number (uint64)",
    "size_bytes": "IP packet size (uint32)",
    "packet_id": "the packet's id (uint64): its row number, unless output.packets / output.flows logged a selection",
    "t_*_ns": "simulated ns when the packet reached each stage (Int64, <NA> if never)",
    "latency_ms": "one-way latency t_delivered - t_sent in ms (float64, NaN if not delivered)",
    "drop_reason": "why it was dropped (categorical, <NA> if not dropped)",
}


class _Cat(NamedTuple):
    """A categorical column: integer ``codes`` (-1: missing) into ``categories``."""
    codes: Any
    categories: list[str]


class _Masked(NamedTuple):
    """A nullable int64 column: ``values`` where ``mask`` is False, missing where it is True."""
    values: Any
    mask: Any


def _frame(columns: Mapping[str, Any]) -> pd.DataFrame:
    """A table's columns (numpy arrays, :class:`_Cat`, :class:`_Masked`) as the DataFrame users get."""
    import numpy as np
    import pandas as pd

    def series(c: Any) -> Any:
        if isinstance(c, _Cat):
            return pd.Categorical.from_codes(c.codes.astype(np.int64), categories=pd.Index(c.categories))
        if isinstance(c, _Masked):
            return pd.arrays.IntegerArray(np.where(c.mask, 0, c.values).astype(np.int64), c.mask)
        return c

    return pd.DataFrame({name: series(c) for name, c in columns.items()})


def _column(cols: Mapping[str, tuple[str, bytes]], name: str) -> Any:
    """A column the core handed over (dtype, bytes), as a read-only numpy view in native byte order."""
    import numpy as np

    dtype, buf = cols[name]
    a = np.frombuffer(buf, dtype=dtype)
    return a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))


def _packets_columns(cols: Mapping[str, tuple[str, bytes]], reasons: list[str], flow_names: list[str]) -> dict[str, Any]:
    import numpy as np

    flow = _column(cols, "flow")
    data: dict[str, Any] = {
        "flow": _Cat(flow, flow_names),
        "flow_id": flow,
        "seq": _column(cols, "seq"),
        "size_bytes": _column(cols, "size_bytes"),
        # The packet's id (the `id` of Sim.inject, the emulator's lag.parquet): the row number unless
        # `output.packets = "sampled"` or `output.flows` logged only some packets.
        "packet_id": _column(cols, "packet_id") if "packet_id" in cols else np.arange(len(flow), dtype=np.uint64),
    }
    for name in cols:
        if name.startswith("t_") and name.endswith("_ns"):
            raw = _column(cols, name)
            data[name] = _Masked(raw, raw == np.uint64(NOT_REACHED))
    sent, delivered = _column(cols, "t_sent_ns"), _column(cols, "t_delivered_ns")
    ok = delivered != np.uint64(NOT_REACHED)
    latency = np.full(len(sent), np.nan)
    latency[ok] = (delivered[ok] - sent[ok]).astype(np.float64) / 1e6
    data["latency_ms"] = latency
    data["drop_reason"] = _Cat(_column(cols, "drop_reason").astype(np.int8) - 1, reasons[1:])  # 0 = not dropped → -1
    # Packets against the flow's direction: TCP ACKs, echo replies, RTCP feedback.
    data["reverse"] = _column(cols, "reverse").astype(bool) if "reverse" in cols else np.zeros(len(flow), dtype=bool)
    return data


def _packets_frame(cols: Mapping[str, tuple[str, bytes]], reasons: list[str], flow_names: list[str]) -> pd.DataFrame:
    return _frame(_packets_columns(cols, reasons, flow_names))


RTT_COLUMNS = {"flow": "category", "t_ns": "int64", "rtt_ms": "float64"}
FRAME_COLUMNS = {"flow": "category", "frame": "int64", "capture_ns": "int64", "done_ns": "int64",
                 "delay_ms": "float64", "dropped": "bool"}
TX_COLUMNS = {"t_ns": "int64", "link": "category", "src": "category", "dst": "category", "mcs": "int64",
              "nss": "int64", "rate_mbps": "float64", "snr_db": "float64", "mpdus": "int64", "received": "int64",
              "collided": "bool"}


def _flows_frame(flows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The flows table from the core's rows, with the dtypes ``flows.parquet`` reads back as."""
    import pandas as pd

    return pd.DataFrame({name: pd.Series([f[name] for f in flows], dtype=dtype) for name, dtype in _lasthop.flow_dtypes()})


def _empty_series(columns: Mapping[str, str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({k: pd.Series(dtype=v) for k, v in columns.items()})


def _rtt_columns(cols: Mapping[str, tuple[str, bytes]], flow_names: list[str]) -> dict[str, Any]:
    import numpy as np

    return {
        "flow": _Cat(_column(cols, "flow"), flow_names),
        "t_ns": _column(cols, "t_ns").astype(np.int64),
        "rtt_ms": _column(cols, "rtt_ns").astype(np.float64) / 1e6,
    }


def _rtt_frame(cols: Mapping[str, tuple[str, bytes]], flow_names: list[str]) -> pd.DataFrame:
    return _frame(_rtt_columns(cols, flow_names))


def _frames_columns(cols: Mapping[str, tuple[str, bytes]], flow_names: list[str]) -> dict[str, Any]:
    import numpy as np

    capture, done = _column(cols, "capture_ns").astype(np.int64), _column(cols, "done_ns").astype(np.int64)
    return {
        "flow": _Cat(_column(cols, "flow"), flow_names),
        "frame": _column(cols, "frame").astype(np.int64),
        "capture_ns": capture,
        "done_ns": done,
        "delay_ms": (done - capture).astype(np.float64) / 1e6,
        "dropped": _column(cols, "dropped").astype(bool),
    }


def _frames_frame(cols: Mapping[str, tuple[str, bytes]], flow_names: list[str]) -> pd.DataFrame:
    return _frame(_frames_columns(cols, flow_names))


def _tx_columns(cols: Mapping[str, tuple[str, bytes]], links: Sequence[Sequence[str]]) -> dict[str, Any]:
    import numpy as np

    link = _column(cols, "link").astype(np.int64)

    def end(i: int) -> _Cat:
        values = list(dict.fromkeys(x[i] for x in links))
        codes = np.asarray([values.index(x[i]) for x in links], dtype=np.int64)
        return _Cat(codes[link] if len(link) else link, values)

    return {
        "t_ns": _column(cols, "t_ns").astype(np.int64),
        "link": _Cat(link, [f"{a}->{b}" for a, b in links]),
        "src": end(0),
        "dst": end(1),
        "mcs": _column(cols, "mcs").astype(np.int64),
        "nss": _column(cols, "nss").astype(np.int64),
        "rate_mbps": _column(cols, "rate_mbps").astype(np.float64),
        "snr_db": _column(cols, "snr_db").astype(np.float64),
        "mpdus": _column(cols, "mpdus").astype(np.int64),
        "received": _column(cols, "received").astype(np.int64),
        "collided": _column(cols, "collided").astype(bool),
    }


def _tx_frame(cols: Mapping[str, tuple[str, bytes]], links: Sequence[Sequence[str]]) -> pd.DataFrame:
    return _frame(_tx_columns(cols, links))


def _atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Writes through ``write(tmp)`` to a temporary name beside ``path``, fsyncs, then renames."""
    tmp = _temporary(path, "tmp")
    try:
        write(tmp)
        _fsync_replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


_TEMPORARY_KINDS = ("streaming", "tmp")


def _temporary(path: Path, kind: str) -> Path:
    """The name this process writes ``path`` under until it is complete: ``.NAME.KIND-PID`` beside it
    (``kind``: ``streaming`` for a table streamed during a run, ``tmp`` for an atomic write)."""
    assert kind in _TEMPORARY_KINDS
    return path.with_name(f".{path.name}.{kind}-{os.getpid()}")


def remove_stale_temporaries(d: Path) -> list[Path]:
    """Removes from run directory ``d`` the temporary files (:func:`_temporary`:
    ``.packets.parquet.streaming-PID``, ``.summary.json.tmp-PID``, ...) that a process which no longer
    exists left behind (killed before it could clean up), so a run redone there leaves exactly the files
    of an uninterrupted one. Files of a live process are kept. Returns what it removed."""
    import re

    pattern = re.compile(rf"\.(?P<name>[^/]+)\.(?:{'|'.join(_TEMPORARY_KINDS)})-(?P<pid>\d+)")
    removed = []
    for f in d.glob(".*"):
        m = pattern.fullmatch(f.name)
        if m is None or m["name"] not in RUN_FILES or _alive(int(m["pid"])):
            continue
        f.unlink(missing_ok=True)
        removed.append(f)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _fsync_replace(tmp: Path, path: Path) -> None:
    """Flushes ``tmp`` to disk, then renames it to ``path``."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
