"""`lasthop reproduce` experiments of the Linux AP path: the expected direction, on short runs."""

from __future__ import annotations

from pathlib import Path

import pytest

import lasthop
from lasthop.experiments import EXPERIMENTS, Options, PlannedRun, execute, plan_experiment, run_experiment


def _rows(name: str) -> list[dict]:
    doc = run_experiment(name, seed=1, quick=True)
    assert doc["experiment"] == name
    return doc["rows"]


def test_airtime_fairness_equalises_airtime_and_raises_the_aggregate() -> None:
    rows = {(r["variant"], r["station"]): r for r in _rows("airtime-fairness")}
    for st in ("slow", "fast"):
        assert abs(rows[("afs_on", st)]["airtime_share"] - 0.5) < 0.05
    assert rows[("afs_off", "slow")]["airtime_share"] > 0.52
    assert rows[("afs_on", "fast")]["aggregate_mbps"] > 1.05 * rows[("afs_off", "fast")]["aggregate_mbps"]


def test_sparse_flow_fq_codel_keeps_ping_low() -> None:
    rows = {r["variant"]: r for r in _rows("sparse-flow")}
    assert rows["fifo"]["ping_rtt_p99_ms"] > 5 * rows["fq_codel"]["ping_rtt_p99_ms"]
    assert rows["fq_codel"]["ping_rtt_p50_ms"] < 25


def test_latency_breakdown_has_every_layer() -> None:
    rows = {r["layer"]: r for r in _rows("latency-breakdown")}
    assert set(rows) == {"wired", "txq", "driver", "hardware", "air", "total"}
    assert abs(rows["wired"]["p50_ms"] - 5.0) < 0.1
    assert rows["total"]["p99_ms"] >= max(rows[k]["p99_ms"] for k in ("txq", "hardware", "air"))


def test_rate_control_adaptive_schemes_track_the_best_fixed_rate() -> None:
    rows = _rows("rate-control")
    static = [r for r in rows if r["variant"] != "fixed_best" and r["snr_db"] != "fading"]
    assert len(static) == 12
    for r in static:
        # ath9k sizes an A-MPDU by the slowest rate of Minstrel's chain, which costs it ~12 % at 5 dB.
        floor = 0.85 if (r["variant"] == "minstrel_ht" and r["snr_db"] == 5) else 0.9
        assert r["fraction_of_best"] >= floor, r


def test_every_experiment_is_a_plan_of_valid_scenarios(tmp_path: Path) -> None:
    """Each experiment plans its runs as data (valid scenarios, the given seed) before running any."""
    for name in EXPERIMENTS:
        plan = plan_experiment(name, Options(seed=7, quick=True, workdir=tmp_path))
        assert plan and all(isinstance(p, PlannedRun) and p.seed == 7 for p in plan), name
        for p in plan:
            lasthop.Scenario.from_dict(p.scenario)


def test_quick_scope_names_the_cases_a_quick_run_keeps() -> None:
    """What `reproduce --quick` prints it left out comes from the two plans."""
    from lasthop.experiments import quick_scope

    assert quick_scope("lastpq-mobility") == {"cases": ["walk=M1→M8"], "full_cases": 2, "seconds": 20.0,
                                              "full_seconds": 60.0}
    assert quick_scope("lastpq-static")["cases"] == ["k=3, f=3"]
    q = quick_scope("rate-control")
    assert len(q["cases"]) == q["full_cases"] == 63 and q["seconds"] < q["full_seconds"]


def test_reduce_of_the_executed_plan_is_the_experiment(tmp_path: Path) -> None:
    exp = EXPERIMENTS["sparse-flow"]
    doc = exp.reduce(execute(exp.plan(Options(seed=1, quick=True, workdir=tmp_path))))
    assert {**doc, "experiment": "sparse-flow", "seed": 1, "quick": True} == run_experiment("sparse-flow", seed=1, quick=True)


def test_a_trace_for_an_experiment_that_takes_none_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not trace-driven"):
        run_experiment("sparse-flow", trace=tmp_path / "t.pitree-trace")


def _reproduce(name: str, out: Path, cwd: Path) -> dict:
    import json

    from support import lasthop_cli

    r = lasthop_cli("reproduce", name, "--quick", "--json", "--out", out, cwd=cwd, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # Progress on stderr: one line per run that ran, [k/n, time left], and how many were complete.
    ran = doc["runs"]["ran"]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("  [")]
    assert len(lines) == ran and all(f"/{ran}, " in ln and ": done in " in ln for ln in lines), r.stderr
    if reused := doc["runs"]["reused"]:
        assert f"  {reused} point{'s' if reused > 1 else ''} already complete; {ran} to run" in r.stderr
    return doc


@pytest.mark.parametrize("name", ["sparse-flow", "zhuge-rtp"])
def test_an_experiment_is_a_cached_sweep_over_its_plan(tmp_path: Path, name: str) -> None:
    """Issue 17: with --out, an experiment keeps each run in out/runs/<key> (the sweeps' key: the
    resolved scenario and seed) and a rerun reads the complete ones back: same rows, nothing run. A
    run whose directory went (or never finished) is the only one run again. zhuge-rtp's plan writes
    traces into out/inputs, which keeps their paths, and so the keys, stable."""
    first = _reproduce(name, tmp_path / "out", tmp_path)
    runs = sorted((tmp_path / "out" / "runs").iterdir())
    assert first["runs"] == {"ran": len(runs), "reused": 0} and len(runs) >= 2
    assert first["rows"] == run_experiment(name, seed=1, quick=True)["rows"]
    again = _reproduce(name, tmp_path / "out", tmp_path)
    assert again["runs"] == {"ran": 0, "reused": len(runs)} and again["rows"] == first["rows"]
    (runs[0] / "summary.json").unlink()  # as an interrupted run leaves it
    third = _reproduce(name, tmp_path / "out", tmp_path)
    assert third["runs"] == {"ran": 1, "reused": len(runs) - 1} and third["rows"] == first["rows"]
