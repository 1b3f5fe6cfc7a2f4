"""Rich rendering of run results on stdout, and run progress on stderr, shared by the commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lasthop.result import RunResult, setup_rows


def _ms(v: Any) -> str:
    return "–" if v is None or v != v else f"{v:.2f}"


def flows_table(result: RunResult) -> Table:
    """One row per flow: route, traffic, loss, throughput and latency percentiles. Fits 80 columns
    for short names: only the text columns wrap, never the numbers (the flow type is in flows.parquet)."""
    name = result.summary["scenario"].get("name") or "scenario"
    variant = (result.summary.get("variant") or {}).get("name")
    title = f"{name} · variant {variant} · seed {result.seed}" if variant else f"{name} · seed {result.seed}"
    t = Table(title=title,
              title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("flow", "route"):
        t.add_column(col, overflow="fold")
    for col in ("sent", "loss %", "Mbit/s", "p50 ms", "p99 ms", "max ms"):
        t.add_column(col, justify="right", no_wrap=True)
    for name, m in result.summary["metrics"]["flows"].items():
        t.add_row(
            Text(name), Text(f"{m['from']} → {m['to']}"),
            f"{m['sent_packets']:,}", f"{100 * m['loss_rate']:.2f}", f"{m['throughput_mbps']:.2f}",
            _ms(m["latency_p50_ms"]), _ms(m["latency_p99_ms"]), _ms(m["latency_max_ms"]),
        )
    return t


def rows_table(title: str, rows: list[dict[str, Any]], digits: int = 3) -> Table:
    """A table of result rows (one dict each): headers wrap at their underscores rather than being cut,
    numbers never wrap, None shows as –."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for k, v in rows[0].items():
        text = isinstance(v, str)
        t.add_column(k.replace("_", " "), justify="left" if text else "right", overflow="fold", no_wrap=not text)
    for r in rows:
        t.add_row(*[f"{v:.{digits}f}" if isinstance(v, float) else "–" if v is None else str(v) for v in r.values()])
    return t


def setup_table(summary: dict[str, Any]) -> Table | None:
    """What actually ran, per node and link: transmit path, rate control, streams, mechanisms (their
    settings, the queues and the mechanisms' roles are in ``summary.json`` and the report); None for
    runs without ``components.setup``."""
    rows = setup_rows(summary)
    if not rows:
        return None
    t = Table(title="what ran", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("node", "path", "link", "rate control", "streams", "mechanisms"):
        t.add_column(col, overflow="fold", justify="right" if col == "streams" else "left")
    for r in collapse_alike(rows):
        t.add_row(Text(r["node"]), Text(r["path"]), Text(r["link"] or "–"), Text(r["rate_control"] or "–"),
                  "–" if r["streams"] is None else str(r["streams"]), Text(r["mechanisms"] or "–"))
    return t


ALIKE_RUN = 3
"""Consecutive rows of ``what ran`` alike but for their node and link are shown as one from this many on."""


def collapse_alike(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (:func:`~lasthop.result.setup_rows`) with each run of at least :data:`ALIKE_RUN`
    consecutive rows that differ only in their node and link (an AP's links to its stations, the
    stations of a BSS) shown as one: ``ap->sta0 … ap->sta9 (10)``, ``sta0 … sta9``. The run directory
    and the report keep every row."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return r["role"], r["path"], r["rate_control"], r["streams"], r["mechanisms"], r["link"] is None

    out: list[dict[str, Any]] = []
    i = 0
    while i < len(rows):
        j = i + 1
        while j < len(rows) and key(rows[j]) == key(rows[i]):
            j += 1
        if j - i < ALIKE_RUN:
            out += rows[i:j]
        else:
            first, last = rows[i], rows[j - 1]
            nodes = {r["node"] for r in rows[i:j]}
            out.append({**first, "node": first["node"] if len(nodes) == 1 else f"{first['node']} … {last['node']}",
                        "link": first["link"] and f"{first['link']} … {last['link']} ({j - i})"})
        i = j
    return out


def console() -> Console:
    """stdout, 160 columns wide when it is not a terminal (pipes, CI logs)."""
    return Console(width=None if sys.stdout.isatty() else 160, highlight=False)


def print_run(result: RunResult, out: Path) -> None:
    """The flows table, one line of totals, and the run directory."""
    con = Console(width=None if sys.stdout.isatty() else 100, highlight=False)
    con.print(flows_table(result))
    ran = setup_table(result.summary)
    if ran is not None:
        con.print(ran)
    s, agg = result.summary, result.summary["metrics"]["aggregate"]
    con.print(Text(f"{agg['delivered_packets']:,} of {agg['sent_packets']:,} packets delivered, "
                     f"{100 * agg['loss_rate']:.2f} % lost · {s['events']:,} events"))
    con.print(Text(f"event digest {s['event_digest']} · lasthop {s['lasthop_version']} ({s['git_revision']})"))
    con.print(Text(f"run directory: {out}"))


class RunProgress:
    """One line per finished run on stderr: how many of the runs to do are done, the time left at the
    pace so far, and how the run ended (``lasthop sweep``, ``lasthop reproduce``)."""

    def __init__(self) -> None:
        import time

        self.clock = time.monotonic
        self.start = self.clock()
        self.total = 0
        self.finished = 0

    def plan(self, to_run: int, complete: int) -> None:
        """``to_run`` runs are about to start; ``complete`` were found complete and are read back."""
        self.start, self.total = self.clock(), to_run
        if complete:
            click.echo(f"  {complete} point{'s' if complete != 1 else ''} already complete; {to_run} to run", err=True)

    def done(self, label: str, status: str, seconds: float) -> None:
        self.finished += 1
        left = (self.clock() - self.start) / self.finished * max(self.total - self.finished, 0)
        eta = f"{int(left // 60)}:{int(left % 60):02d}"
        what = f"done in {seconds:.1f} s" if status == "ok" else status
        click.echo(f"  [{self.finished}/{self.total}, {eta} left] {label}: {what}", err=True)
