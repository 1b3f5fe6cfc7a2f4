"""``lasthop report``: one offline HTML page comparing run directories.

    from lasthop.report import build_report
    html = build_report(["runs/cq/fifo", "runs/cq/fq_codel"], "runs/cq/report")

The page (``report.html``) embeds its figures as PNG data URIs and needs no network; the same PNGs
are written beside it. It shows the runs, a table with one row per (run, flow) and every numeric
column of ``flows.parquet``, latency CCDFs per flow with a log tail axis, per-run time series
(latency, throughput, queue lengths per layer) and the per-layer latency breakdown. Runs are labelled
by the variant recorded in ``summary.json``, else by their directory name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lasthop.errors import LasthopError
from lasthop.report.data import Run, RunDirError, RunSeries, analyse, deadlines_ms, frame_delays, open_run, radio

__all__ = ["build_report", "open_runs", "default_out", "RunDirError", "REPORT_FILE"]

REPORT_FILE = "report.html"


def open_runs(paths: Sequence[str | os.PathLike[str]]) -> list[Run]:
    """Opens every run directory (raising :class:`RunDirError` for the first bad one) and labels the
    runs: the variant name if the summary records one, else the directory name, made unique."""
    runs = [open_run(p) for p in paths]
    plain = [r.variant or r.path.resolve().name or "run" for r in runs]
    labels = [f"{r.path.resolve().parent.name}/{label}" if plain.count(label) > 1 and not r.variant else label
              for r, label in zip(runs, plain)]
    seen: dict[str, int] = {}
    for run, label in zip(runs, labels):
        seen[label] = seen.get(label, 0) + 1
        run.label = label if seen[label] == 1 else f"{label} ({seen[label]})"
    return runs


class LeftOut(UserWarning):
    """A directory of a comparison left out of a report: it holds no complete run."""


def expand_comparisons(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Each path as given, except a comparison directory (``lasthop compare``'s ``--out``: no
    ``summary.json`` of its own, run directories inside), which stands for its runs, in name order;
    over several seeds (``<variant>/seed<N>/``), each variant's first seed."""
    out: list[Path] = []
    for p in map(Path, paths):
        runs: list[Path] = []
        if p.is_dir() and not (p / "summary.json").exists():
            for d in sorted(x for x in p.iterdir() if x.is_dir()):
                if (d / "summary.json").is_file():
                    runs.append(d)
                    continue
                seeds = sorted((s for s in d.glob("seed*") if (s / "summary.json").is_file() and s.name[4:].isdigit()),
                               key=lambda s: int(s.name[4:]))
                runs += seeds[:1]
                # Every other directory in a comparison is a variant's (but a report's own): one left
                # empty by an interrupted or failed run included.
                if not seeds and not (d / "report.html").exists():
                    # A variant whose run did not finish: said, not silently left out of the page.
                    import warnings

                    warnings.warn(f"{d}: left out, not a complete run (no summary.json: unfinished or "
                                  "interrupted)", LeftOut, stacklevel=2)
        out += runs or [p]
    return out


VERDICT_FILE = "verdict.json"


def _read_verdict(path: Path) -> dict[str, Any] | None:
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("verdicts"), list) else None


def default_out(paths: Sequence[str | os.PathLike[str]]) -> Path:
    """``RUN_DIR/report`` for one run; for several, ``report/`` in their parent directory (as given,
    e.g. ``runs/cq/report`` for ``runs/cq/a runs/cq/b``), else in their closest common directory."""
    if len(paths) == 1:
        return Path(paths[0]) / "report"
    parents = {os.path.normpath(os.path.dirname(os.path.normpath(p))) for p in paths}
    if len(parents) == 1:
        return Path(parents.pop()) / "report"
    try:
        return Path(os.path.commonpath([os.path.abspath(p) for p in paths])) / "report"
    except ValueError:  # pragma: no cover - different drives on Windows
        return Path("report")


def file_stem(label: str) -> str:
    """A label reduced to characters safe in a file name."""
    return re.sub(r"[^\w.-]+", "-", label).strip("-.") or "run"


def build_report(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str] | None = None,
                 title: str | None = None, verdict: Mapping[str, Any] | None = None) -> Path:
    """Writes ``report.html`` and its PNGs into ``out`` (default :func:`default_out`) for the run
    directories ``paths``, and returns the HTML file's path. ``verdict`` (``lasthop compare --seeds``'s
    ``{"summary", "verdicts", "seeds"}``) goes at the top; for one comparison directory it is read from
    its ``verdict.json`` when not given."""
    from lasthop import __version__
    from lasthop.report import figures, html

    if not paths:
        raise RunDirError("no run directories given")
    if out is None and len(paths) == 1 and not (Path(paths[0]) / "summary.json").exists():
        out = Path(paths[0]) / "report"
    if verdict is None and len(paths) == 1 and (Path(paths[0]) / VERDICT_FILE).is_file():
        verdict = _read_verdict(Path(paths[0]) / VERDICT_FILE)
    paths = expand_comparisons(paths)
    seen: dict[str, Path] = {}
    for p in map(Path, paths):
        if (twice := seen.setdefault(os.path.realpath(p), p)) is not p:
            raise RunDirError(f"{p}: given twice (as {twice})" if str(twice) != str(p) else
                              f"{p}: given twice (named, or a run of a comparison directory named)")
    runs = open_runs(paths)
    series: list[RunSeries] = [analyse(r) for r in runs]
    flows: list[str] = []
    for r in runs:
        flows += [f for f in r.flow_names if f not in flows]
    out_dir = Path(out) if out is not None else default_out(paths)
    if title is None:
        names = {r.scenario_name for r in runs}
        title = f"{names.pop()}: {len(runs)} run{'s' if len(runs) != 1 else ''}" if len(names) == 1 and "" not in names \
            else "lasthop report"

    images: dict[str, bytes] = {}
    with_packets = [(r, s) for r, s in zip(runs, series) if s.has_packets]
    if with_packets and flows:
        rs, ss = [r for r, _ in with_packets], [s for _, s in with_packets]
        images["latency_ccdf.png"] = figures.png(figures.latency_ccdf(rs, ss, flows))
        images["breakdown.png"] = figures.png(figures.breakdown(rs, ss, flows))
    delays = [frame_delays(r) for r in runs]
    video = [f for f in flows if any(f in d for d in delays)]
    if video:
        deadlines: dict[str, float] = {}
        for r in runs:
            deadlines.update(deadlines_ms(r))
        images["frame_latency_ccdf.png"] = figures.png(figures.frame_latency_ccdf(runs, delays, video, deadlines))
    radios = [radio(r, video) for r in runs]
    stations = sorted({st for x in radios if x is not None for st in x.snr_db})
    if stations:
        images["radio.png"] = figures.png(figures.radio(runs, radios, video, stations))
    ts_files = []
    stems: set[str] = set()
    for r, s in zip(runs, series):
        stem = file_stem(r.label)
        while stem in stems:
            stem += "_"
        stems.add(stem)
        name = f"timeseries_{stem}.png"
        ts_files.append(name)
        if s.has_packets:
            images[name] = figures.png(figures.timeseries(r, s, flows))
    text = html.page(title, runs, series, flows, images, ts_files, __version__, verdict)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, data in images.items():
            (out_dir / name).write_bytes(data)
        path = out_dir / REPORT_FILE
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise LasthopError(f"cannot write the report to {out_dir}: {e.strerror or e}") from None
    return path
