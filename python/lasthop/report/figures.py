"""The report's figures, drawn with matplotlib's object API on the Agg canvas (no pyplot state, no
display) and returned as PNG bytes."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from lasthop.report.data import LAYERS, Floats, FlowSeries, RadioSeries, Run, RunSeries

__all__ = ["latency_ccdf", "frame_latency_ccdf", "radio", "timeseries", "breakdown", "png"]

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
DASHES = ("-", "--", "-.", ":")
LAYER_COLORS = {"host": "#c7c7c7", "wired": "#7f7f7f", "qdisc": "#9467bd", "txq": "#1f77b4", "driver": "#17becf",
                "hw": "#ff7f0e", "air": "#2ca02c"}
DPI = 100


def _style(i: int) -> tuple[str, str]:
    """Colour and line style of the i-th series: ten colours, then the next dash pattern."""
    return PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes (no timestamp in the metadata, so equal figures give equal files)."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _plain_log_labels(ax: Axes) -> None:
    """Log-axis labels as plain numbers (20, 50, 100) rather than powers of ten: the major ticks and
    the 2× and 5× minor ticks."""
    def major(v: float, _: object) -> str:
        return f"{v:g}"

    def minor(v: float, _: object) -> str:
        if v <= 0:
            return ""
        return f"{v:g}" if round(v / 10 ** math.floor(math.log10(v) + 1e-9)) in (2, 5) else ""

    ax.yaxis.set_major_formatter(FuncFormatter(major))
    ax.yaxis.set_minor_formatter(FuncFormatter(minor))


def _note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666666")


def latency_ccdf(runs: Sequence[Run], series: Sequence[RunSeries], flows: Sequence[str]) -> Figure:
    """One panel per flow, one line per run: P(latency ≥ x) on a log axis, so the tail down to the
    worst packet is as visible as the median."""
    ncols = 1 if len(flows) == 1 else 2
    nrows = (len(flows) + ncols - 1) // ncols
    fig = Figure(figsize=(6.2 * ncols, 3.4 * nrows + 0.4), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, flow in zip(axes, flows):
        drawn, round_trip = 0, False
        for i, (run, s) in enumerate(zip(runs, series)):
            f = _flow(s, flow)
            if f is None or f.ccdf_ms.size == 0:
                continue
            round_trip = round_trip or f.round_trip
            color, dash = _style(i)
            ax.step(f.ccdf_ms, f.ccdf_p, where="post", color=color, linestyle=dash, linewidth=1.4, label=run.label)
            drawn += 1
        ax.set_yscale("log")
        ax.set_title(f"{flow} (round trip)" if round_trip else flow, fontsize=11)
        ax.set_xlabel("round-trip time (ms)" if round_trip else "one-way latency (ms)")
        ax.set_ylabel("P(latency ≥ x)")
        for p, txt in ((0.5, "p50"), (0.01, "p99"), (0.001, "p99.9")):
            ax.axhline(p, color="#bbbbbb", linewidth=0.7, linestyle=":", zorder=0)
            ax.annotate(txt, (1.0, p), xycoords=("axes fraction", "data"), xytext=(2, 0),
                        textcoords="offset points", fontsize=7, color="#888888", va="center")
        ax.grid(True, which="major", alpha=0.3)
        if drawn:
            ax.set_ylim(top=1.05)
            ax.set_xlim(left=0)
            ax.legend(fontsize=8, loc="lower left")
        else:
            _note(ax, "no delivered packets")
    for ax in axes[len(flows):]:
        ax.set_visible(False)
    return fig


def frame_latency_ccdf(runs: Sequence[Run], delays: Sequence[dict[str, Floats]], flows: Sequence[str],
                       deadlines: dict[str, float]) -> Figure:
    """One panel per video flow, one line per run: P(frame delay ≥ x), capture to decode, on a log
    axis, with the flow's deadline as a vertical line; frames never shown stay in the tail (the line
    ends above zero)."""
    ncols = 1 if len(flows) == 1 else 2
    nrows = (len(flows) + ncols - 1) // ncols
    fig = Figure(figsize=(6.2 * ncols, 3.4 * nrows + 0.4), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, flow in zip(axes, flows):
        for i, (run, d) in enumerate(zip(runs, delays)):
            x = d.get(flow)
            if x is None or x.size == 0:
                continue
            shown = x[np.isfinite(x)]
            p = 1.0 - np.arange(shown.size) / x.size
            color, dash = _style(i)
            ax.step(shown, p, where="post", color=color, linestyle=dash, linewidth=1.4,
                    label=f"{run.label} ({x.size - shown.size} never shown)" if shown.size < x.size else run.label)
        if flow in deadlines:
            ax.axvline(deadlines[flow], color="#d62728", linewidth=1.0, linestyle="--")
            ax.annotate(f"deadline {deadlines[flow]:g} ms", (deadlines[flow], 1.0), xycoords=("data", "axes fraction"),
                        xytext=(3, -10), textcoords="offset points", fontsize=7, color="#d62728")
        ax.set_yscale("log")
        ax.set_title(flow, fontsize=11)
        ax.set_xlabel("frame delay, capture to decode (ms)")
        ax.set_ylabel("P(delay ≥ x)")
        ax.grid(True, which="major", alpha=0.3)
        ax.set_xlim(left=0)
        ax.legend(fontsize=8, loc="upper right")
    for ax in axes[len(flows):]:
        ax.set_visible(False)
    return fig


def radio(runs: Sequence[Run], radios: Sequence[RadioSeries | None], video: Sequence[str],
          stations: Sequence[str]) -> Figure:
    """Panels sharing the time axis, one line per run in its colour everywhere: each video flow's sending
    rate, then for each station the SNR and the MCS of the AP's transmissions to it."""
    rows = [("rate", f) for f in video] + [(k, st) for st in stations for k in ("snr", "mcs")]
    fig = Figure(figsize=(11, 1.9 * len(rows) + 0.6), layout="constrained")
    axes = fig.subplots(len(rows), 1, squeeze=False, sharex=True).ravel()
    for ax, (kind, name) in zip(axes, rows):
        for i, (run, r) in enumerate(zip(runs, radios)):
            if r is None:
                continue
            y = {"rate": r.sent_mbps, "snr": r.snr_db, "mcs": r.mcs}[kind].get(name)
            if y is None:
                continue
            color, dash = _style(i)
            ax.step(r.t_s, y, where="post", color=color, linestyle=dash, linewidth=1.2, label=run.label)
        ax.set_ylabel({"rate": f"{name}\nsent (Mbit/s)", "snr": f"{name}\nSNR (dB)", "mcs": f"{name}\nMCS"}[kind],
                      fontsize=9)
        ax.grid(True, alpha=0.3)
        if kind != "snr":
            ax.set_ylim(bottom=0)
    axes[0].legend(fontsize=8, loc="upper right", ncols=min(3, max(1, len(runs))))
    axes[-1].set_xlabel("time (s)")
    return fig


def timeseries(run: Run, s: RunSeries, flows: Sequence[str]) -> Figure:
    """Three panels sharing the time axis: latency per flow (p50 solid, p99 dashed, by send time),
    throughput per flow (by delivery time), and the packets queued at each layer (per-bin maximum)."""
    fig = Figure(figsize=(11, 8.2), layout="constrained")
    lat, thr, q = fig.subplots(3, 1, sharex=True)
    fig.suptitle(run.label, fontsize=12)
    for f in s.flows:
        color, dash = _style(flows.index(f.name) if f.name in flows else 0)
        mid = s.t_s + s.bin_s / 2
        lat.plot(mid, f.latency_p50_ms, color=color, linestyle=dash, linewidth=1.3, label=f"{f.name} p50")
        lat.plot(mid, f.latency_p99_ms, color=color, linestyle="--", linewidth=0.8, alpha=0.6, label=f"{f.name} p99")
        thr.plot(mid, f.throughput_mbps, color=color, linestyle=dash, linewidth=1.3, label=f.name)
    lat.set_ylabel("latency (ms)")
    lat.set_yscale("log")
    _plain_log_labels(lat)
    lat.set_title(f"latency per {_dur(s.bin_s)} (by send time; one-way, round trip for ping flows)", fontsize=10,
                  loc="left")
    thr.set_ylabel("Mbit/s")
    thr.set_title(f"throughput per {_dur(s.bin_s)} (by delivery time)", fontsize=10, loc="left")
    thr.set_ylim(bottom=0)
    for i, (layer, occ) in enumerate(s.queues.items()):
        q.step(s.t_s, occ, where="post", color=LAYER_COLORS.get(layer, _style(i)[0]), linewidth=1.3, label=layer)
    q.set_ylabel("packets")
    q.set_title(f"packets queued per layer (maximum per {_dur(s.bin_s)}, all nodes)", fontsize=10, loc="left")
    q.set_xlabel("simulated time (s)")
    q.set_ylim(bottom=0)
    if not s.queues:
        _note(q, "no queue stages in this run's packet log")
    for ax in (lat, thr, q):
        ax.grid(True, alpha=0.3)
        if s.warmup_s > 0:
            ax.axvspan(0, s.warmup_s, color="#eeeeee", zorder=0, label="_warm-up")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    q.set_xlim(0, float(s.t_s[-1] + s.bin_s) if s.t_s.size else 1.0)
    return fig


def breakdown(runs: Sequence[Run], series: Sequence[RunSeries], flows: Sequence[str]) -> Figure:
    """Stacked horizontal bars, one per flow and run (grouped by flow): the mean time a delivered
    packet spends in each layer; a bar's length is the mean one-way latency."""
    bars: list[tuple[str, dict[str, float]]] = []
    for flow in flows:
        for run, s in zip(runs, series):
            f = _flow(s, flow)
            if f is not None and f.breakdown_ms:
                bars.append((f"{flow} · {run.label}", f.breakdown_ms))
    layers = [layer for layer in LAYERS if any(b.get(layer, 0.0) > 1e-6 for _, b in bars)]
    fig = Figure(figsize=(11, 1.2 + 0.36 * max(1, len(bars))), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(bars))[::-1]
    left = np.zeros(len(bars))
    for layer in layers:
        width = np.array([b.get(layer, 0.0) for _, b in bars])
        ax.barh(y, width, left=left, color=LAYER_COLORS[layer], label=layer, height=0.7)
        left += width
    for yi, total in zip(y, left):
        ax.annotate(f"{total:.1f}", (total, yi), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(y, [name for name, _ in bars], fontsize=9)
    ax.set_xlabel("mean time per layer (ms)")
    ax.set_xlim(0, float(left.max()) * 1.08 if left.size and left.max() > 0 else 1.0)
    ax.grid(True, axis="x", alpha=0.3)
    if bars:
        ax.legend(ncols=len(layers), fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    else:
        _note(ax, "no delivered packets in the packet logs")
    return fig


def _flow(s: RunSeries, name: str) -> FlowSeries | None:
    return next((f for f in s.flows if f.name == name), None)


def _dur(seconds: float) -> str:
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"
