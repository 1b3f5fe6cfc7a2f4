"""The report page: one self-contained HTML file (inline CSS, PNGs as data URIs, no script)."""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from lasthop.report.data import LAYERS, Run, RunSeries
from lasthop.result import setup_rows

__all__ = ["page", "metric_columns", "TEXT_COLUMNS"]

TEXT_COLUMNS = ("kind", "from", "to")
"""Non-numeric columns of ``flows.parquet`` shown in the comparison table (as ``kind`` and ``route``)."""

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; }
.meta { color: #666; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th { background: #f5f5f5; position: sticky; top: 0; }
td.t, th.t { text-align: left; }
td.w { white-space: normal; min-width: 12em; } tr.sep td { border-top: 2px solid #ddd; }
tbody tr:hover { background: #fafafa; }
.scroll { overflow-x: auto; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; max-width: 60em; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
.na { color: #aaa; }
"""


FIRST_COLUMNS = ("throughput_mbps", "goodput_mbps", "bitrate_mbps", "loss_rate", "latency_p50_ms", "latency_p95_ms",
                 "latency_p99_ms", "latency_p999_ms", "rtt_p99_ms", "frame_latency_p99_ms", "frame_deadline_miss_rate",
                 "freezes", "fps_under_10_ratio")
"""Flow metrics shown first in the comparison table, when present; the others follow in file order."""


def metric_columns(runs: Sequence[Run]) -> list[str]:
    """The numeric columns of the runs' flows tables: ``FIRST_COLUMNS`` that exist, then the rest in
    order of first appearance, leaving out columns that are empty in every run. Columns are found,
    not listed: new metrics show up as they are added, and a column a run lacks or leaves null is
    shown as "–" for it."""
    import pandas as pd

    cols: list[str] = []
    for run in runs:
        for c in run.flows.columns:
            if c in cols or c == "flow" or c in TEXT_COLUMNS:
                continue
            s = run.flows[c]
            if pd.api.types.is_bool_dtype(s.dtype):
                continue
            if pd.api.types.is_numeric_dtype(s.dtype) or pd.to_numeric(s, errors="coerce").notna().any():
                cols.append(str(c))
    cols = [c for c in FIRST_COLUMNS if c in cols] + [c for c in cols if c not in FIRST_COLUMNS]
    return [c for c in cols if any(_numeric(r, c).notna().any() for r in runs)]


def _numeric(run: Run, col: str) -> Any:
    import pandas as pd

    if col not in run.flows.columns:
        return pd.Series([math.nan] * len(run.flows), dtype="float64")
    return pd.to_numeric(run.flows[col], errors="coerce")


def fmt(v: Any, integer: bool = False) -> str:
    """A number for a table cell: thousands separators for counts, four significant digits else."""
    import pandas as pd

    if v is None or pd.isna(v):
        return '<span class="na">–</span>'
    x = float(v)
    if integer or (x.is_integer() and abs(x) >= 1000):
        return f"{x:,.0f}"
    if abs(x) >= 10_000:
        return f"{x:,.0f}"
    return escape(f"{x:.4g}")


def _img(name: str, data: bytes, alt: str) -> str:
    b64 = base64.b64encode(data).decode("ascii")
    return (f'<a href="{escape(name)}"><img src="data:image/png;base64,{b64}" alt="{escape(alt)}" '
            f'data-file="{escape(name)}"></a>')


def _runs_table(runs: Sequence[Run]) -> str:
    rows = []
    for r in runs:
        s, v = r.summary, r.summary.get("variant") or {}
        sc = s.get("scenario") or {}
        rows.append("<tr>" + "".join([
            f'<td class="t"><b>{escape(r.label)}</b></td>', f'<td class="t">{escape(r.shown)}</td>',
            f'<td class="t">{escape(str(sc.get("name") or ""))}</td>',
            f'<td class="t">{escape(str(v.get("description") or ""))}</td>',
            f"<td>{escape(str(s.get('seed', '')))}</td>", f"<td>{fmt(sc.get('duration_s'))}</td>",
            f"<td>{fmt(s.get('events'), integer=True)}</td>",
            f'<td class="t"><code>{escape(str(s.get("event_digest", "")))}</code></td>',
            f'<td class="t">{escape(str(s.get("lasthop_version", "")))} ({escape(str(s.get("git_revision", "")))})</td>',
        ]) + "</tr>")
    head = "".join(f'<th class="t">{h}</th>' if t else f"<th>{h}</th>" for h, t in (
        ("run", 1), ("directory", 1), ("scenario", 1), ("variant", 1), ("seed", 0), ("duration s", 0),
        ("events", 0), ("event digest", 1), ("lasthop", 1)))
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def setup_table(runs: Sequence[Run]) -> str:
    """What actually ran, per variant (runs that built the same thing share rows, e.g. a variant's
    seeds): per link the rate control and streams, per node its transmit path, queues and mechanisms."""
    groups: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    for r in runs:
        rows = setup_rows(r.summary)
        if rows:
            key = repr((r.variant, rows))
            groups.setdefault(key, ([], rows))[0].append(r.label)
    if not groups:
        return '<p class="meta">These runs predate the record of what ran (<code>components.setup</code>).</p>'
    body = []
    for labels, rows in groups.values():
        shown = labels[0] if len(labels) == 1 else f"{labels[0]} (and {len(labels) - 1} more)"
        for i, row in enumerate(rows):
            first = i == 0 or rows[i - 1]["node"] != row["node"]  # setup_rows lists a node's links together
            rc = f"<b>{escape(row['rate_control'])}</b> ({escape(row['rate_control_detail'])})" if row["rate_control"] else "–"
            node_cells = [f'<td class="t">{escape(row["path"])}</td>', f'<td class="t w">{escape(row["queues"])}</td>',
                          f'<td class="t w">{escape(row["mechanism_roles"] or "–")}</td>'] if first else ['<td class="t"></td>'] * 3
            body.append(f'<tr{" class=sep" if i == 0 else ""}>' + "".join([
                f'<td class="t"><b>{escape(shown) if i == 0 else ""}</b></td>',
                f'<td class="t">{escape(row["node"]) + " (" + escape(row["role"]) + ")" if first else ""}</td>',
                f'<td class="t">{escape(row["link"] or "–")}</td>', f'<td class="t w">{rc}</td>',
                f"<td>{'–' if row['streams'] is None else row['streams']}</td>", *node_cells]) + "</tr>")
    head = "".join(f'<th class="t">{h}</th>' if h != "streams" else f"<th>{h}</th>"
                   for h in ("run", "node", "link", "rate control", "streams", "path", "queues", "mechanisms"))
    return f'<div class="scroll"><table class="setup"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def comparison_table(runs: Sequence[Run]) -> str:
    """One row per (run, flow): kind, route and every numeric flow metric."""
    import pandas as pd

    cols = metric_columns(runs)
    head = '<th class="t">run</th><th class="t">flow</th><th class="t">kind</th><th class="t">route</th>' + "".join(
        f"<th>{escape(c)}</th>" for c in cols)
    rows = []
    for r in runs:
        values = {c: _numeric(r, c) for c in cols}
        ints = {c: c in r.flows.columns and pd.api.types.is_integer_dtype(r.flows[c].dtype) for c in cols}
        for i, rec in enumerate(r.flows.to_dict("records")):
            route = f"{rec.get('from', '')} → {rec.get('to', '')}" if "from" in rec else ""
            cells = [f'<td class="t">{escape(r.label)}</td>', f'<td class="t"><b>{escape(str(rec["flow"]))}</b></td>',
                     f'<td class="t">{escape(str(rec.get("kind", "")))}</td>', f'<td class="t">{escape(route)}</td>']
            cells += [f"<td>{fmt(values[c].iloc[i], ints[c])}</td>" for c in cols]
            rows.append(f'<tr data-run="{escape(r.label)}" data-flow="{escape(str(rec["flow"]))}">'
                        + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="comparison"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def breakdown_table(runs: Sequence[Run], series: Sequence[RunSeries], flows: Sequence[str]) -> str:
    present = [lay for lay in LAYERS if any(f.breakdown_ms.get(lay, 0.0) > 1e-6 for s in series for f in s.flows)]
    head = '<th class="t">flow</th><th class="t">run</th>' + "".join(f"<th>{lay} ms</th>" for lay in present) + \
        "<th>total ms</th><th>packets</th>"
    rows = []
    for flow in flows:
        for run, s in zip(runs, series):
            f = next((x for x in s.flows if x.name == flow), None)
            if f is None or not f.breakdown_ms:
                continue
            cells = "".join(f"<td>{f.breakdown_ms.get(lay, 0.0):.2f}</td>" for lay in present)
            rows.append(f'<tr><td class="t">{escape(flow)}</td><td class="t">{escape(run.label)}</td>{cells}'
                        f"<td><b>{sum(f.breakdown_ms.values()):.2f}</b></td><td>{f.delivered:,}</td></tr>")
    if not rows:
        return ""
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def verdict_section(verdict: Mapping[str, Any]) -> str:
    """The verdict of a comparison over seeds: one sentence per flow and metric, then mean ± 95 % CI."""
    from lasthop.verdict import METRICS, sentence

    seeds = verdict.get("seeds")
    parts = [f"<h2>Verdict{f' over {seeds} seeds' if seeds else ''}</h2>",
             '<p class="meta">Best variant by mean per flow and metric; "significantly" means Welch\'s t-test '
             "p &lt; 0.05 over the seeds (pairwise, not corrected for multiple comparisons). The figures below "
             "show each variant's first seed.</p><ul>"]
    parts += [f"<li>{escape(sentence(v))}</li>" for v in verdict.get("verdicts", [])]
    parts.append("</ul>")
    rows = verdict.get("summary", [])
    if rows:
        head = "<tr><th>flow</th><th>metric</th><th>variant</th><th>n</th><th>mean ± 95 % CI</th></tr>"
        body = "".join(
            f"<tr><td>{escape(str(r['flow']))}</td><td>{escape(METRICS.get(r['metric'], (r['metric'],))[0])}</td>"
            f"<td>{escape(str(r['variant']))}</td><td>{r['n']}</td><td>{fmt(r['mean'])}{'' if r['ci95'] is None else ' ± ' + fmt(r['ci95'])}</td></tr>"
            for r in sorted(rows, key=lambda r: (str(r["flow"]), list(METRICS).index(r["metric"])
                                                 if r["metric"] in METRICS else 99)))
        parts.append(f"<table>{head}{body}</table>")
    return "\n".join(parts)


def page(title: str, runs: Sequence[Run], series: Sequence[RunSeries], flows: Sequence[str],
         images: dict[str, bytes], timeseries_files: Sequence[str], version: str,
         verdict: Mapping[str, Any] | None = None) -> str:
    """The whole HTML document. ``images`` maps PNG file names to their bytes (embedded here);
    ``timeseries_files`` names each run's time-series image."""
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>",
             f"<style>{CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             f'<p class="meta">lasthop {escape(version)} report of {len(runs)} run{"s" if len(runs) != 1 else ""}. '
             "Latency is one-way (send to delivery) for packets in each flow's direction, or the round trip "
             "for ping flows, counted after the warm-up, like the flows table.</p>",
             verdict_section(verdict) if verdict else "",
             "<h2>Runs</h2>", _runs_table(runs),
             "<h2>What actually ran</h2>",
             '<p class="meta">As built, whatever the scenario asked: each node\'s transmit path, queues and '
             "mechanisms (with what they took over), and each link's rate control and the spatial streams it may "
             "use, from <code>components.setup</code> in <code>summary.json</code>.</p>",
             setup_table(runs),
             "<h2>Flows</h2>",
             '<p class="meta">One row per run and flow: every numeric column of <code>flows.parquet</code> '
             "(loss_rate is a fraction; latencies in ms; throughput in Mbit/s).</p>",
             comparison_table(runs)]
    parts.append("<h2>Latency distribution</h2>")
    if "latency_ccdf.png" in images:
        parts.append(f"<figure>{_img('latency_ccdf.png', images['latency_ccdf.png'], 'latency CCDF per flow')}"
                     "<figcaption>Complementary CDF per flow, one line per run: the fraction of packets at least "
                     "x ms late, on a log axis so the tail down to the single worst packet shows. Dotted lines mark "
                     "the median, p99 and p99.9.</figcaption></figure>")
    else:
        parts.append('<p class="meta">No packet log in these runs (<code>output.packets = false</code>).</p>')
    if "frame_latency_ccdf.png" in images:
        parts.append("<h2>Frame latency</h2>")
        parts.append(f"<figure>{_img('frame_latency_ccdf.png', images['frame_latency_ccdf.png'], 'frame latency CCDF per video flow')}"
                     "<figcaption>Per video flow, one line per run: the fraction of frames (captured after the warm-up) "
                     "shown at least x ms after capture, on a log axis; the dashed line is the flow's deadline, and "
                     "frames never shown keep the line above zero at its right end.</figcaption></figure>")
    if "radio.png" in images:
        parts.append("<h2>Call rate, SNR and MCS over time</h2>")
        parts.append(f"<figure>{_img('radio.png', images['radio.png'], 'sending rate per video flow, SNR and MCS per station')}"
                     "<figcaption>One line per run, in its colour of every figure. Per video flow: the rate its packets "
                     "were sent at (media, FEC and retransmissions). Per station: the mean SNR at which the AP's "
                     "transmissions to it were received, and their median MCS (rate control at work); from "
                     "<code>tx.parquet</code>.</figcaption></figure>")
    parts.append("<h2>Time series</h2>")
    for run, s, name in zip(runs, series, timeseries_files):
        if name in images:
            parts.append(f"<figure>{_img(name, images[name], f'time series of {run.label}')}"
                         f"<figcaption><b>{escape(run.label)}</b>: per-{_bin(s)} latency (p50 solid, p99 dashed), "
                         "throughput, and the largest number of packets in each layer's queues (summed over nodes; "
                         "packets dropped inside a queue are left out, as their leave time is not logged). "
                         f"The grey band is the warm-up.{_partial_log(run)}</figcaption></figure>")
        else:
            parts.append(f'<p class="meta">{escape(run.label)}: no packet log.</p>')
    parts.append("<h2>Latency breakdown</h2>")
    if "breakdown.png" in images:
        parts.append(f"<figure>{_img('breakdown.png', images['breakdown.png'], 'per-layer latency breakdown')}"
                     "<figcaption>Mean time a delivered packet spends in each layer (wired links; qdisc; mac80211 "
                     "TXQ; driver; hardware queue and channel access; air, from the first attempt to delivery), "
                     "from the per-packet stage timestamps. Each bar adds up to the mean latency (for ping flows, the "
                     "request's and the reply's layers together make up the round trip)."
                     "</figcaption></figure>")
        parts.append(breakdown_table(runs, series, flows))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _partial_log(run: Run) -> str:
    """A warning for a run that logged only some packets (``output``): the series count those."""
    out = (run.summary.get("scenario") or {}).get("output") or {}
    parts = []
    if out.get("packets") == "sampled":
        n = int(out.get("sample_every") or 10)
        parts.append(f"one packet in {n} was logged, so throughput and queue counts are of those (about 1/{n} "
                     "of the real ones); latencies are a sample")
    if out.get("flows"):
        parts.append("only " + ", ".join(map(str, out["flows"])) + " were logged, so the queues' counts leave out "
                     "the other flows' packets")
    return f" <b>Partial packet log</b>: {'; '.join(parts)} (the flows table's metrics are of every packet)." if parts else ""


def _bin(s: RunSeries) -> str:
    return f"{s.bin_s * 1000:g} ms" if s.bin_s < 1 else f"{s.bin_s:g} s"
