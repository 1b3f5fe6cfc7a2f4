"""Where the shared reference data lives (``shared/`` beside the repository) and how to read it."""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from pathlib import Path

__all__ = ["shared_dir", "ns3_results"]


def shared_dir() -> Path:
    """``$LASTHOP_SHARED``, else ``../shared`` next to the repository this package runs from."""
    env = os.environ.get("LASTHOP_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared"


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
