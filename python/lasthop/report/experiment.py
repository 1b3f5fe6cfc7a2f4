"""The page of one reproduced experiment (``lasthop reproduce NAME --out DIR``): what the paper says
beside what lasthop measured, a bar chart per metric the experiment names in ``figures`` (mean and
95 % confidence interval per variant over seeds), and every row. Figures are embedded, so
``report.html`` is one self-contained file."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from lasthop.report.figures import _style, png
from lasthop.report.html import fmt

__all__ = ["write_experiment_report"]

STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
         "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}img{max-width:100%}"
         ".figs{display:flex;flex-wrap:wrap;gap:8px}")


def write_experiment_report(doc: Mapping[str, Any], out: Path) -> Path:
    """Writes ``out/experiment.json`` and ``out/report.html`` (each under a temporary name first);
    returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "experiment.json", json.dumps(doc, sort_keys=True, indent=1, default=str))
    name = str(doc.get("experiment", "experiment"))
    parts = [f"<h1>lasthop reproduce {html.escape(name)}</h1>"]
    if "seed" in doc:
        what = "the --quick variant (short runs, one seed: a smoke test, not the result)" if doc.get("quick") else "the full experiment"
        parts.append(f"<p>Seed {html.escape(str(doc['seed']))}; {what}.</p>")
    if doc.get("checks"):
        parts.append("<h2>Against the paper</h2>" + _checks(doc["checks"]))
    if doc.get("series"):
        imgs = [f'<img alt="{html.escape(m)} over time" src="data:image/png;base64,'
                f'{base64.b64encode(_lines(doc["series"], m)).decode()}">' for m in _series_metrics(doc["series"])]
        parts.append("<h2>Over time</h2><div class=figs>" + "".join(imgs) + "</div>")
    if "paper" in doc:
        parts.append("<h2>What the paper (or the spec) says</h2>" + _dl(doc["paper"]))
    if "summary" in doc and not _per_variant(doc):
        parts.append("<h2>Summary</h2>" + _dl(doc["summary"]))
    rows = pd.DataFrame(doc.get("rows", []))
    if _per_variant(doc):
        figures = [f["metric"] for f in doc.get("figures", [])]
        imgs = [f'<img alt="{html.escape(m)} by variant" src="data:image/png;base64,'
                f'{base64.b64encode(_bars(doc["summary"], m)).decode()}">' for m in figures]
        parts.append("<h2>By variant (mean, 95 % CI over seeds)</h2><div class=figs>" + "".join(imgs) + "</div>")
        table = pd.DataFrame({v: {m: _mean_ci(s) for m, s in ms.items()} for v, ms in doc["summary"].items()})
        parts.append("<h2>Mean ± 95 % CI per variant</h2>" + table.to_html(escape=True, border=0))
    # None (nothing to show: a phase without a change) as the NaNs are, not as "None".
    rows = rows.apply(lambda col: col.map(lambda v: "–" if v is None else v))
    parts.append("<h2>Rows</h2>" + rows.to_html(index=False, escape=True, border=0, na_rep="–"))
    page = f"<!doctype html><meta charset=utf-8><title>lasthop {html.escape(name)}</title><style>{STYLE}</style>"
    _write(out / "report.html", page + "\n".join(parts))
    return out / "report.html"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _per_variant(doc: Mapping[str, Any]) -> bool:
    s = doc.get("summary")
    return isinstance(s, Mapping) and bool(s) and all(
        isinstance(ms, Mapping) and all(isinstance(x, Mapping) and "mean" in x for x in ms.values()) for ms in s.values())


def _mean_ci(s: Mapping[str, Any]) -> str:
    if s.get("mean") is None:
        return "–"
    return f"{s['mean']:.4g}" + (f" ± {s['ci95']:.2g}" if s.get("ci95") is not None else "")


def _dl(obj: Any) -> str:
    if not isinstance(obj, Mapping):
        return f"<p>{html.escape(json.dumps(obj, ensure_ascii=False, default=str))}</p>"
    items = "".join(f"<dt><b>{html.escape(str(k))}</b></dt><dd>{html.escape(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str))}</dd>"
                    for k, v in obj.items())
    return f"<dl>{items}</dl>"


def _series_metrics(series: list[Mapping[str, Any]]) -> list[str]:
    """The metrics each series has besides its label and time axis, in order."""
    return [k for k in series[0] if k not in ("label", "t_s")]


def _lines(series: list[Mapping[str, Any]], metric: str) -> bytes:
    """One line per series of ``metric`` against its ``t_s`` (gaps where a value is None)."""
    fig = Figure(figsize=(5.6, 2.8))
    ax = fig.add_subplot()
    for i, s in enumerate(series):
        colour, dash = _style(i)
        ys = [float("nan") if v is None else v for v in s[metric]]
        ax.plot(s["t_s"], ys, color=colour, linestyle=dash, label=str(s["label"]), linewidth=1.2)
    ax.set_xlabel("s", fontsize=8)
    ax.set_title(metric.replace("_", " "), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return png(fig)


def _checks(checks: list[Mapping[str, Any]]) -> str:
    """The rows of the paper each compared with ours: its number, the criterion and whether it holds."""
    def cell(v: Any) -> str:
        if isinstance(v, list):
            return " / ".join(cell(x) for x in v)
        return fmt(v) if v is None or isinstance(v, (int, float)) and not isinstance(v, bool) else html.escape(str(v))
    verdict = {True: "✓ met", False: "✗ not met", None: "–"}
    body = "".join(f"<tr><td>{cell(c['row'])}</td><td>{cell(c['metric'])}</td><td>{cell(c['lasthop'])}</td>"
                   f"<td>{cell(c['paper'])}</td><td>{cell(c['criterion'])}</td><td>{verdict[c['met']]}</td></tr>"
                   for c in checks)
    met = sum(c["met"] is True for c in checks)
    return (f"<p>{met} of {len(checks)} met.</p><table><tr><th>row</th><th>metric</th><th>lasthop</th>"
            f"<th>paper</th><th>criterion</th><th>verdict</th></tr>{body}</table>")


def _bars(summary: Mapping[str, Mapping[str, Mapping[str, Any]]], metric: str) -> bytes:
    """Bars of ``metric``'s mean per variant with its 95 % CI."""
    variants = list(summary)
    mean = [summary[v].get(metric, {}).get("mean") or 0.0 for v in variants]
    ci = [summary[v].get(metric, {}).get("ci95") or 0.0 for v in variants]
    fig = Figure(figsize=(4.2, 2.8))
    ax = fig.add_subplot()
    ax.bar(range(len(variants)), mean, yerr=ci, capsize=4, color=[_style(i)[0] for i in range(len(variants))])
    ax.set_xticks(range(len(variants)), variants, rotation=20, fontsize=8)
    ax.set_title(metric.replace("_", " "), fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return png(fig)
