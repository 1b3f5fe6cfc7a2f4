"""`lasthop.stats.percentile` is the Rust core's nearest-rank percentile (`stats::flows::percentile`,
`rtc::quality::percentile`): the same values on hand-computed vectors, and the same numbers as the
flows table the core writes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from support import small_scenario

import lasthop
from lasthop.stats import jain, percentile, percentiles, rank_index

# (samples, q, expected): rank = ceil(q/100 · n) clamped to 1..n, value = sorted[rank − 1].
CASES = [
    # The core's own unit test (flows.rs `nearest_rank`) over 1..=100.
    (list(range(1, 101)), 50.0, 50),
    (list(range(1, 101)), 99.0, 99),
    (list(range(1, 101)), 99.9, 100),  # ceil(99.9) = 100
    (list(range(1, 101)), 0.0, 1),  # rank 0 clamps to 1: the minimum
    # The textbook example: 15, 20, 35, 40, 50.
    ([15, 20, 35, 40, 50], 5.0, 15),  # ceil(0.25) = 1
    ([15, 20, 35, 40, 50], 30.0, 20),  # ceil(1.5) = 2
    ([15, 20, 35, 40, 50], 40.0, 20),  # 2 exactly: no rounding up
    ([15, 20, 35, 40, 50], 50.0, 35),  # ceil(2.5) = 3
    ([15, 20, 35, 40, 50], 100.0, 50),
    # Order does not matter; ties are values like any other.
    ([3, 1, 2], 50.0, 2),  # ceil(1.5) = 2
    ([5, 5, 1, 5], 25.0, 1),
    ([5, 5, 1, 5], 26.0, 5),
    ([7], 0.0, 7),
    ([7], 99.9, 7),
    # Float rank as Rust computes it: 99.9 / 100 * 1000 = 999.0000000000001, so rank 1000 (the maximum).
    (list(range(1, 1001)), 99.9, 1000),
    (list(range(1, 1001)), 99.0, 990),
    (list(range(1, 1001)), 50.0, 500),
    ([10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 95.0, 100),  # ceil(9.5) = 10
    ([10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 90.0, 90),  # 9 exactly
]


@pytest.mark.parametrize(("samples", "q", "expected"), CASES)
def test_nearest_rank_on_hand_computed_vectors(samples: list[int], q: float, expected: int) -> None:
    assert percentile(samples, q) == expected
    assert percentile(np.array(samples[::-1], dtype=np.float64), q) == expected


def test_no_samples_have_no_percentile() -> None:
    assert percentile([], 50.0) is None
    assert percentiles(np.array([]), (0.0, 99.0)) == [None, None]


def test_rank_index_per_count() -> None:
    # ceil(0.5·n) − 1 for n = 1..4, and the q = 0 and q = 100 ends.
    assert rank_index([1, 2, 3, 4], 50.0).tolist() == [0, 0, 1, 1]
    assert rank_index([1, 2, 3, 4], 0.0).tolist() == [0, 0, 0, 0]
    assert rank_index([1, 2, 3, 4], 100.0).tolist() == [0, 1, 2, 3]


def test_the_flows_table_uses_the_same_percentile() -> None:
    """The core's flow latency percentiles are this function over the packet log: delivered forward
    packets sent after the warm-up, latency in ns converted as the core does (× 1e-6)."""
    sc = small_scenario(duration_s=4.0)
    sc["warmup_s"] = 1.0
    res = lasthop.run(sc, seed=1)
    p = res.packets
    for flow in res.flows.to_dict("records"):
        f = p[(p["flow"] == flow["flow"]) & ~p["reverse"] & p["t_delivered_ns"].notna()]
        f = f[f["t_sent_ns"] >= 1_000_000_000]
        ns = (f["t_delivered_ns"] - f["t_sent_ns"]).to_numpy(dtype=np.int64)
        assert len(ns) == flow["delivered_packets"] > 100
        for q, col in ((50.0, "latency_p50_ms"), (95.0, "latency_p95_ms"), (99.0, "latency_p99_ms"),
                       (99.9, "latency_p999_ms")):
            ours = percentile(ns, q)
            assert ours is not None and not math.isnan(flow[col])
            assert ours * 1e-6 == flow[col], (flow["flow"], col)


def test_jain_by_hand() -> None:
    """Jain's index: 1 for equal shares, 1/n when one takes everything, (1 + 3)² / (2 · 10) = 0.8 for
    1 and 3; nothing to share gives None."""
    assert jain([2.0, 2.0, 2.0]) == 1.0
    assert jain([5.0, 0.0, 0.0, 0.0]) == 0.25
    assert jain([1.0, 3.0]) == pytest.approx(0.8)
    assert jain([]) is None and jain([0.0, 0.0]) is None
