"""Where the shared reference data lives (``shared/`` beside the repository) and how to read it."""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from pathlib import Path

__all__ = ["shared_dir", "ns3_results", "ns3_downlink", "missing"]


def shared_dir() -> Path:
    """``$LASTHOP_SHARED``, else ``../shared`` next to the repository this package runs from."""
    env = os.environ.get("LASTHOP_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared"


def missing(ref: dict[tuple[str, int], dict[str, float]], scenarios: tuple[str, ...], ns: tuple[int, ...]) -> list[str]:
    """The (scenario, N) points of a grid that ``ref`` lacks, as ``"scenario N=n"``."""
    return [f"{sc} N={n}" for sc in scenarios for n in ns if (sc, n) not in ref]


# details.csv column → the name lasthop's downlink rows use.
_DOWNLINK = {"video_mbps": "video_mbps", "video_loss": "video_loss", "delay_p50_ms": "p50_ms",
             "delay_p99_ms": "p99_ms", "delay_p999_ms": "p999_ms", "delay_max_ms": "max_ms",
             "throughput_mbps": "aggregate_mbps"}


def ns3_downlink(path: Path | None = None) -> dict[tuple[str, int], dict[str, float]]:
    """ns-3's downlink delay anchor (``dl_video_vi``/``dl_video_be`` rows of ``anchors/ns3/details.csv``),
    per (scenario, n), mean over the seeds present."""
    path = path or shared_dir() / "anchors" / "ns3" / "details.csv"
    acc: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"scenario", "n", *_DOWNLINK}
        if not need <= set(reader.fieldnames or ()):
            raise ValueError(f"{path}: lacks the columns {sorted(need - set(reader.fieldnames or ()))}")
        for row in reader:
            if row["scenario"].startswith("dl_video_"):
                acc[(row["scenario"], int(row["n"]))].append(row)
    return {k: {ours: sum(float(r[col]) for r in v) / len(v) for col, ours in _DOWNLINK.items()}
            for k, v in acc.items()}


def ns3_results(path: Path | None = None) -> dict[tuple[str, int], dict[str, float]]:
    """Mean ns-3 throughput, Jain index and speed per (scenario, n) from ``anchors/ns3/results.csv``."""
    path = path or shared_dir() / "anchors" / "ns3" / "results.csv"
    acc: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            acc[(row["scenario"], int(row["n"]))].append(row)

    def mean(rows: list[dict[str, str]], key: str) -> float:
        return sum(float(r[key]) for r in rows) / len(rows)

    return {
        k: {
            "throughput_mbps": mean(v, "throughput_mbps"),
            "jain": mean(v, "jain"),
            "sim_seconds_per_wall_second": mean(v, "sim_seconds_per_wall_second"),
            "seeds": float(len(v)),
        }
        for k, v in acc.items()
    }
