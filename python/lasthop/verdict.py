"""Comparisons over seeds: the mean and 95 % confidence interval of every key metric per variant and
flow, and a verdict per metric — which variant is best, and whether the difference is significant.

A variant's metric over n seeds has mean m and confidence half-width t(0.975, n − 1) · s / √n (Student's
t; s the sample standard deviation). The best variant (highest for rates, lowest for delays, losses and
freezes) is *significantly* better than another when Welch's t-test on the two samples gives p < 0.05;
the verdict names every variant it beats and every one it does not ("no significant difference"). The
tests are pairwise and not corrected for multiple comparisons: read a verdict on one metric at a time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any


__all__ = ["METRICS", "summarize", "verdicts"]

# flows.parquet column → (label, higher is better).
METRICS: dict[str, tuple[str, bool]] = {
    "throughput_mbps": ("throughput Mbit/s", True),
    "goodput_mbps": ("goodput Mbit/s", True),
    "bitrate_mbps": ("video bitrate Mbit/s", True),
    "loss_rate": ("loss", False),
    "latency_p99_ms": ("latency p99 ms", False),
    "rtt_p99_ms": ("RTT p99 ms", False),
    "frame_latency_p99_ms": ("frame latency p99 ms", False),
    "frame_deadline_miss_rate": ("deadline misses", False),
    "freezes": ("freezes", False),
}
ALPHA = 0.05


def _samples(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[float]]:
    """(variant, flow, metric) → the values over seeds, for the metrics a flow has."""
    out: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rows:
        for m in METRICS:
            v = r.get(m)
            if isinstance(v, (int, float)) and math.isfinite(v):
                out[(r["variant"], str(r["flow"]), m)].append(float(v))
    return out


def mean_ci95(xs: list[float]) -> tuple[float, float | None]:
    """The mean of ``xs`` (not empty) and the half-width of its 95 % confidence interval (Student's t;
    None for one value, where no interval exists)."""
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return mean, None
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    from scipy import stats  # type: ignore[import-untyped]  # 1 s to import: only when a CI is asked for

    return mean, float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (variant, flow, metric): ``n``, ``mean``, ``ci95`` (half-width; None for one seed)."""
    out = []
    for (variant, flow, metric), xs in _samples(rows).items():
        mean, ci = mean_ci95(xs)
        out.append({"variant": variant, "flow": flow, "metric": metric, "n": len(xs), "mean": mean, "ci95": ci})
    return out


def verdicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (flow, metric) with at least two variants: the best variant by mean, the variants it is
    significantly better than (Welch's t-test, p < 0.05) and those it is not."""
    by: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(dict)
    for (variant, flow, metric), xs in _samples(rows).items():
        by[(flow, metric)][variant] = xs
    out = []
    for (flow, metric), per in by.items():
        if len(per) < 2:
            continue
        higher = METRICS[metric][1]
        means = {v: sum(xs) / len(xs) for v, xs in per.items()}
        best = (max if higher else min)(means, key=lambda v: means[v])
        beats: list[str] = []
        ties: list[str] = []
        for v, xs in per.items():
            if v == best:
                continue
            a, b = per[best], xs
            if len(a) < 2 or len(b) < 2:
                ties.append(v)
                continue
            if a == b or (max(a) == min(a) == max(b) == min(b)):
                ties.append(v)
                continue
            from scipy import stats

            p = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
            (beats if math.isfinite(p) and p < ALPHA else ties).append(v)
        out.append({"flow": flow, "metric": metric, "label": METRICS[metric][0], "best": best,
                    "better_than": beats, "no_significant_difference": ties})
    return out


def sentence(v: dict[str, Any]) -> str:
    """A verdict in words."""
    head = f"{v['flow']}, {v['label']}: best {v['best']}"
    if not v["no_significant_difference"]:
        return head + ", significantly better than every other variant"
    if not v["better_than"]:
        return head + " by mean, but no significant difference from " + ", ".join(v["no_significant_difference"])
    return (head + ", significantly better than " + ", ".join(v["better_than"])
            + "; no significant difference from " + ", ".join(v["no_significant_difference"]))
