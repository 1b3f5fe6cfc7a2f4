"""`lasthop validate …` and `lasthop bench` through the CLI: JSON shape and headline numbers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

LASTHOP = [sys.executable, "-m", "lasthop"]


def run_json(*args: str) -> dict:
    p = subprocess.run([*LASTHOP, *args, "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_validate_airtime_matches_the_ieee_formula_exactly() -> None:
    doc = run_json("validate", "airtime")
    stds = {r["standard"]: r for r in doc["rows"]}
    assert set(stds) == {"ofdm", "ht", "vht", "he"}
    for r in doc["rows"]:
        assert r["txvectors"] > 0 and r["mismatches"] == 0 and r["max_abs_error_ns"] == 0


def test_validate_bianchi_rows() -> None:
    doc = run_json("validate", "bianchi", "--seconds", "5")
    assert [r["n"] for r in doc["rows"]] == [1, 2, 5, 10, 20, 50]
    for r in doc["rows"]:
        assert set(r) >= {"n", "sim_mbps", "model_mbps", "rel_error"}
        assert abs(r["rel_error"]) <= (0.025 if r["n"] == 2 else 0.02), r


def test_validate_ns3_rows() -> None:
    """Within 3 % of ns-3 without aggregation and 5 % with A-MPDU, for every N (issue #3: N = 50)."""
    doc = run_json("validate", "ns3", "--seconds", "5")
    assert len(doc["rows"]) == 18
    for r in doc["rows"]:
        assert set(r) >= {"scenario", "n", "sim_mbps", "ns3_mbps", "rel_error"}
        assert abs(r["rel_error"]) <= (0.05 if r["scenario"].endswith("_agg") else 0.03), r


def test_bench_one_point() -> None:
    doc = run_json("bench", "--scenario", "sat_11a_54_noagg", "--n", "10", "--seconds", "2", "--repeat", "1")
    (row,) = doc["rows"]
    assert row["scenario"] == "sat_11a_54_noagg" and row["n"] == 10
    assert row["sim_seconds_per_wall_second"] > 0 and row["events_per_second"] > 0


@pytest.mark.parametrize("args", [["bench", "--scenario", "nope"], ["bench", "--n", "0"], ["validate", "nope"]])
def test_bad_flags_exit_2(args: list[str]) -> None:
    p = subprocess.run([*LASTHOP, *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
