"""The sweep report: one page with, per key metric, its mean ± 95 % CI over seeds against the first
numeric grid parameter (one line per flow and combination of the other parameters) and the same
numbers as a table. Figures are embedded, so ``report.html`` is one self-contained file."""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from lasthop.report.figures import _style, png
from lasthop.verdict import METRICS

if TYPE_CHECKING:
    from lasthop.sweeps import SweepResult

__all__ = ["write_sweep_report"]


def write_sweep_report(res: SweepResult, table: Any, summary: Any) -> None:
    params = list(res.points[0].params) if res.points else []
    x = next((p for p in params if _numeric(table, p) and table[p].nunique() > 1), None)
    parts = [f"<h1>Sweep of {html.escape(str(res.points[0].scenario.name) if res.points else '')}</h1>",
             f"<p>{len(res.points)} points ({len({p.key for p in res.points})} distinct runs): "
             f"{len(res.ran)} run now, {len(res.reused)} already complete, {len(res.failed)} failed. "
             f"Mean and 95 % confidence interval over seeds (Student's t).</p>"]
    if res.failed:
        parts.append("<h2>Failed points</h2><ul>" + "".join(
            f"<li><code>{k}</code>: {html.escape(m.splitlines()[0] if m else '')}</li>" for k, m in res.failed.items())
            + "</ul>")
    for metric, (label, higher) in METRICS.items():
        rows = summary[summary["metric"] == metric] if not summary.empty else summary
        if rows.empty:
            continue
        parts.append(f"<h2>{html.escape(label)} ({'higher' if higher else 'lower'} is better)</h2>")
        if x is not None:
            others = [p for p in params if p != x and table[p].nunique() > 1]
            img = base64.b64encode(_figure(rows, x, others, label)).decode()
            parts.append(f'<img alt="{html.escape(label)} against {html.escape(x)}" src="data:image/png;base64,{img}">')
        shown = rows.assign(mean=rows["mean"].map(_fmt), ci95=rows["ci95"].map(_fmt)).drop(columns=["metric"])
        parts.append(shown.to_html(index=False, escape=True, border=0))
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
             "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}")
    text = f"<!doctype html><meta charset=utf-8><title>lasthop sweep</title><style>{style}</style>" + "\n".join(parts)
    tmp = res.out / ".report.html.tmp"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(res.out / "report.html")


def _numeric(table: Any, col: str) -> bool:
    import pandas as pd

    return col in table and not table.empty and bool(pd.api.types.is_numeric_dtype(table[col]))


def _figure(rows: Any, x: str, others: list[str], label: str) -> bytes:
    fig = Figure(figsize=(7, 3.6))
    ax = fig.add_subplot()
    groups = rows.groupby([*others, "flow"], sort=False, dropna=False) if others else rows.groupby("flow", sort=False)
    for i, (name, g) in enumerate(groups):
        g = g.sort_values(x)
        color, dash = _style(i)
        key = name if isinstance(name, tuple) else (name,)
        text = ", ".join([*(f"{o}={v}" for o, v in zip(others, key[:-1])), str(key[-1])])
        ax.errorbar(g[x], g["mean"], yerr=g["ci95"].astype(float), color=color, linestyle=dash, marker="o", capsize=3, label=text)
    ax.set_xlabel(x)
    ax.set_ylabel(label)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return png(fig)


def _fmt(v: float | None) -> str:
    """Four significant digits; "–" for no value (the CI of one seed)."""
    return "–" if v is None or v != v else f"{v:.4g}"
