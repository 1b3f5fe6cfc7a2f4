"""Sweeps: points from a grid and seeds, resumable run directories keyed by a hash, one tidy table,
the same runs on every backend, and errors that name the spec entry."""

from __future__ import annotations

import importlib.util
import json
import shlex
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from support import lasthop_cli, small_scenario, toml_dumps, write_scenario

import lasthop
from lasthop.errors import ScenarioError
from lasthop.sweeps import load_spec, plan


def _spec(tmp: Path, grid: dict, seeds: object = 2, **extra: object) -> Path:
    sc = small_scenario(2.0)
    sc["variants"] = [{"name": "fifo", "set": {}},
                      {"name": "codel", "set": {"aps[0].last_hop.queue": {"type": "codel"}}}]
    write_scenario(tmp / "small.toml", sc)
    p = tmp / "spec.toml"
    p.write_text(toml_dumps({"scenario": "small.toml", "seeds": seeds, **extra, "grid": grid}))
    return p


def _files(d: Path) -> dict[str, str]:
    """Every file under ``d`` (hidden ones included) by its path, as a digest of its bytes: two trees
    compare equal when they hold the same files with the same bytes, and a mismatch names the files."""
    import hashlib

    return {f.relative_to(d).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()[:16]
            for f in sorted(d.rglob("*")) if f.is_file()}


def test_points_are_the_grid_product_times_seeds_keyed_by_the_resolved_scenario(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, {"variant": ["fifo", "codel"], "flows[0].rate_mbps": [5, 10, 20]}, seeds=[3, 4]))
    points = plan(spec)
    assert len(points) == 2 * 3 * 2
    assert [(p.params["variant"], p.params["flows[0].rate_mbps"], p.seed) for p in points[:3]] == [
        ("fifo", 5, 3), ("fifo", 5, 4), ("fifo", 10, 3)]
    assert len({p.key for p in points}) == len(points), "every point is a different run"
    assert points[0].scenario.to_dict()["flows"][0]["rate_mbps"] == 5
    assert points[-1].scenario.to_dict()["aps"][0]["last_hop"]["queue"]["type"] == "codel"
    # The key is the resolved scenario and seed, whatever spelled it: a value equal to the default
    # gives the same run as no value.
    again = plan(load_spec(_spec(tmp_path / ".." / tmp_path.name, {"flows[0].rate_mbps": [10]}, seeds=[3])))
    base = plan(load_spec(_spec(tmp_path, {}, seeds=[3])))
    assert again[0].key == base[0].key


def test_a_sweep_runs_resumes_and_gathers_one_row_per_point_and_flow(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"variant": ["fifo", "codel"], "flows[1].rate_mbps": [20, 40]})
    out = tmp_path / "out"
    res = lasthop.sweep(spec, out, jobs=2)
    assert len(res.ran) == 8 and not res.reused and not res.failed
    table = res.table
    assert len(table) == 8 * 2, "8 runs × 2 flows"
    assert list(table.columns[:4]) == ["variant", "flows[1].rate_mbps", "seed", "point"]
    assert set(table["flow"]) == {"video", "bulk"}
    # The bulk flow's offered load follows the grid (the link carries 30 Mbit/s).
    bulk = table[table["flow"] == "bulk"].groupby("flows[1].rate_mbps")["throughput_mbps"].mean()
    assert bulk[40] > bulk[20] * 0.9
    summary = pd.read_csv(out / "summary.csv")
    row = summary[(summary["variant"] == "fifo") & (summary["flows[1].rate_mbps"] == 20)
                  & (summary["flow"] == "video") & (summary["metric"] == "latency_p99_ms")]
    assert len(row) == 1 and int(row["n"].iloc[0]) == 2
    assert "<img" in (out / "report.html").read_text()
    manifest = json.loads((out / "sweep.json").read_text())
    assert {p["key"] for p in manifest["points"]} == {p.key for p in res.points}
    first = _files(out / "runs")
    # Nothing to do a second time; one run lost its summary (a crash mid-write): only it runs again.
    again = lasthop.sweep(spec, out)
    assert not again.ran and len(again.reused) == 8
    victim = res.points[5].key
    (out / "runs" / victim / "summary.json").unlink()
    third = lasthop.sweep(spec, out)
    assert third.ran == [victim]
    assert _files(out / "runs") == first, "a resumed run is byte-identical"
    assert third.table.equals(table)
    # A point whose summary or flows table was damaged since is run again, not gathered (a broken
    # summary counted as complete; a broken flows table ended the sweep in a traceback).
    (out / "runs" / res.points[1].key / "summary.json").write_text("{broken")
    (out / "runs" / res.points[6].key / "flows.parquet").write_bytes(b"not parquet")
    fourth = lasthop.sweep(spec, out)
    assert sorted(fourth.ran) == sorted([res.points[1].key, res.points[6].key]) and len(fourth.reused) == 6
    assert _files(out / "runs") == first and fourth.table.equals(table)


def test_one_worker_and_several_give_identical_run_directories(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"flows[1].rate_mbps": [20, 40]})
    a = lasthop.sweep(spec, tmp_path / "a", jobs=1)
    b = lasthop.sweep(spec, tmp_path / "b", jobs=2)
    assert _files(a.out / "runs") == _files(b.out / "runs")


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is an optional extra: pip install 'lasthop[ray]'")
def test_the_ray_backend_gives_the_local_runs(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"flows[1].rate_mbps": [20, 40]})
    local = lasthop.sweep(spec, tmp_path / "local", jobs=1)
    ray = lasthop.sweep(spec, tmp_path / "ray", backend="ray", batch=3)
    assert sorted(ray.ran) == sorted(local.ran)
    assert _files(ray.out / "runs") == _files(local.out / "runs")
    assert ray.table.equals(local.table)


def test_backend_options_belong_to_their_backend(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {})
    for args, msg in ((["--address", "x:1"], "--address and --batch are the ray backend's"),
                      (["--backend", "ray", "--jobs", "2"], "--jobs sizes the local pool")):
        r = lasthop_cli("sweep", spec, *args, cwd=tmp_path)
        assert r.returncode == 2 and msg in r.stderr, r.stderr


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is an optional extra: pip install 'lasthop[ray]'")
def test_an_unreachable_ray_cluster_is_an_error_not_a_wait(tmp_path: Path) -> None:
    from lasthop.errors import LasthopError

    spec = _spec(tmp_path, {})
    with pytest.raises(LasthopError, match="cannot reach the Ray cluster at 127.0.0.1:1"):
        lasthop.sweep(spec, tmp_path / "out", backend="ray", address="127.0.0.1:1")


def test_print_command_reproduces_a_point_byte_for_byte(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"variant": ["codel"], "flows[0].rate_mbps": [7.5]}, seeds=[9])
    res = lasthop.sweep(spec, tmp_path / "out")
    key = res.points[0].key
    r = lasthop_cli("sweep", spec, "--out", tmp_path / "out", "--print-command", key[:8], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    argv = shlex.split(r.stdout.strip())
    assert argv[:2] == ["lasthop", "run"] and "--set" in argv and "--variant" in argv
    argv[argv.index("--out") + 1] = str(tmp_path / "again")
    r = lasthop_cli(*argv[1:], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "again" / "summary.json").read_bytes() == (res.run_dir(key) / "summary.json").read_bytes()


def test_cli_runs_a_sweep_and_reports_what_it_did(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"flows[1].rate_mbps": [20]}, seeds=1)
    r = lasthop_cli("sweep", spec, "--out", tmp_path / "o", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["ran"]) == 1 and Path(doc["results"]).exists()
    r = lasthop_cli("sweep", spec, "--out", tmp_path / "o", "--list", cwd=tmp_path)
    assert r.returncode == 0 and doc["ran"][0] in r.stdout and "flows[1].rate_mbps=20" in r.stdout


@pytest.mark.parametrize(("grid", "seeds", "extra", "where"), [
    ({"flows[0].rate_mbps": []}, 1, {}, 'grid."flows[0].rate_mbps"'),
    ({"flows[0].rate_mbps": [1, 1]}, 1, {}, "lists a value twice"),
    ({"flows[0].rate_mbps": [20, 20.0]}, 1, {}, "lists a value twice"),  # one value, one run
    ({"flows[0]..rate": [1]}, 1, {}, "invalid path"),
    ({"variant": ["nope"]}, 1, {}, "no variant named 'nope'"),
    ({"flows[7].rate_mbps": [1]}, 1, {}, "index 7 out of range"),
    ({"flows[0].rate_mbps": [5, -3]}, 1, {}, 'grid."flows[0].rate_mbps"[1]'),
    ({}, 0, {}, "seeds"),
    ({}, [1, 1], {}, "seeds"),
    ({}, 1, {"sedes": 3}, "sedes: unknown key"),
    ({"seed": [5, 6]}, 2, {}, "the seeds are not a grid key"),  # it made points twice
    ({}, 1, {"scenario": 5}, "scenario: must be the path of the scenario file to sweep (a string"),
])
def test_bad_specs_name_the_entry_and_run_nothing(tmp_path: Path, grid: dict, seeds: object, extra: dict,
                                                   where: str) -> None:
    spec = _spec(tmp_path, grid, seeds, **extra)
    with pytest.raises(ScenarioError) as e:
        lasthop.sweep(spec, tmp_path / "out")
    assert where in str(e.value)
    assert not (tmp_path / "out").exists(), "nothing is written before every point is valid"
    r = lasthop_cli("sweep", spec, "--out", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 2 and where in r.stderr and "Traceback" not in r.stderr


def test_a_bad_grid_value_is_one_error_at_its_entry(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"flows[0].rate_mbps": [5, -3], "flows[1].rate_mbps": [20, 30, 40]})
    with pytest.raises(ScenarioError) as e:
        lasthop.sweep(spec, tmp_path / "out")
    (only,) = e.value.errors()  # one, not one per combination that holds it
    assert only["msg"].startswith('at grid."flows[0].rate_mbps"[1]: must be a positive number'), only


def test_the_python_api_refuses_what_the_spec_would_and_warns_of_failed_points(tmp_path: Path) -> None:
    from lasthop.errors import LasthopError
    from lasthop.sweeps import SweepResult, plan as plan_points
    from lasthop.sweeps_ray import _collect

    spec = _spec(tmp_path, {})
    small = tmp_path / "small.toml"
    for grid, msg in (({"variant": "fifo"}, "grid['variant']: must be a non-empty list of values, got 'fifo'"),
                      ({"duration_s": 2}, "grid['duration_s']: must be a non-empty list of values, got 2")):
        with pytest.raises(LasthopError, match=msg.replace("[", r"\[").replace("]", r"\]")):
            lasthop.sweep(small, tmp_path / "g", grid=grid)
    with pytest.raises(LasthopError, match="seeds=: a sweep spec file sets its own seeds"):
        lasthop.sweep(spec, tmp_path / "s", seeds=3)
    with pytest.raises(LasthopError, match="unknown backend 'dask'"):
        lasthop.sweep(spec, tmp_path / "b", backend="dask")
    with pytest.raises(LasthopError, match="address= and batch= are the ray backend's"):
        lasthop.sweep(spec, tmp_path / "b", address="x:1")
    with pytest.raises(LasthopError, match="jobs= sizes the local pool"):
        lasthop.sweep(spec, tmp_path / "b", backend="ray", jobs=2)
    for jobs in (0, -1, "2", 1.5, True):
        with pytest.raises(LasthopError, match="jobs=: must be a whole number ≥ 1"):
            lasthop.sweep(spec, tmp_path / "b", jobs=jobs)
    with pytest.raises(LasthopError, match="grid=: must be a mapping of path → list of values"):
        lasthop.sweep(small, tmp_path / "b", grid=[1, 2])
    assert not any((tmp_path / d).exists() for d in ("g", "s", "b")), "nothing written for bad arguments"
    # A failing point warns (the CLI lists failures itself): here a point whose run directory is a file.
    points = plan_points(load_spec(spec))
    (tmp_path / "w" / "runs").mkdir(parents=True)
    (tmp_path / "w" / "runs" / points[0].key).write_text("not a directory")
    with pytest.warns(UserWarning, match="1 of 2 sweep points failed"):
        res = lasthop.sweep(spec, tmp_path / "w")
    assert list(res.failed) == [points[0].key] and res.ran == [points[1].key]
    # The Ray backend loses such a point, not the sweep (its copy into place was unguarded).
    res = SweepResult(tmp_path / "w", points)
    fake_ray = type("Ray", (), {"get": staticmethod(lambda ref: [(points[0].key, "ok", "", False, 0.1, {"summary.json": b"{}"})])})
    _collect(res, {p.key: p for p in points}, [points[0].key], None, fake_ray, lambda *_: None)
    assert "cannot write the run directory" in res.failed[points[0].key]


def test_run_set_applies_values_as_a_variant_does(small: Path) -> None:
    r = lasthop_cli("run", small, "--set", "flows[0].rate_mbps=2.5", "--set", 'name="renamed"', "--json",
                    cwd=small.parent)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["scenario"]["flows"][0]["rate_mbps"] == 2.5 and doc["scenario"]["name"] == "renamed"
    for bad, msg in [("flows[0].rate_mbps", "PATH=VALUE"), ("name=x y", "not a TOML value"),
                     ("flows[9].rate_mbps=1", "index 9 out of range"), ("flows[0].rate_mbps=-1", "small.toml with flows[0].rate_mbps set: flows[0].rate_mbps: must be a positive number")]:
        r = lasthop_cli("run", small, "--set", bad, cwd=small.parent)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, (bad, r.stderr)
    # The scenario made keeps its file as its source: an unnamed one is still named after the file.
    doc = tomllib.loads(small.read_text())
    del doc["name"]
    write_scenario(small.parent / "unnamed.toml", doc)
    sc = lasthop.Scenario.load(small.parent / "unnamed.toml").with_set({"flows[0].rate_mbps": 2.5})
    assert sc.name == "unnamed" and sc.source == str(small.parent / "unnamed.toml")


def test_experiments_on_the_worker_pool_give_the_serial_rows() -> None:
    from lasthop.experiments import run_experiment

    serial = run_experiment("sparse-flow", quick=True)
    assert run_experiment("sparse-flow", quick=True, jobs=2) == serial
    assert len(serial["rows"]) > 1


def test_the_example_sweep_plans() -> None:
    from support import EXAMPLES

    points = plan(load_spec(EXAMPLES / "sweeps" / "tv_snr.toml"))
    assert len(points) == 2 * 3 * 3
    assert {p.params["variant"] for p in points} == {"linux_fq_codel", "law"}


def test_200_points_interrupted_resume_to_the_uninterrupted_table_and_ray_agrees(tmp_path: Path) -> None:
    """Issue 17: a 200-point sweep (100 rates × 2 seeds) on two workers, stopped by Ctrl-C part way,
    leaves only complete runs; run again it redoes none of them, runs the rest, and gives the runs and
    table of a sweep that was never stopped, on a local Ray instance."""
    import signal
    import subprocess
    import sys
    import time

    from support import ctrl_c_able

    sc = small_scenario(2.0)
    write_scenario(tmp_path / "small.toml", sc)
    spec = tmp_path / "spec.toml"
    spec.write_text(toml_dumps({"scenario": "small.toml", "seeds": 2,
                                "grid": {"flows[0].rate_mbps": [round(1 + 0.1 * i, 1) for i in range(100)]}}))
    cmd = [sys.executable, "-m", "lasthop", "sweep", str(spec), "--out", str(tmp_path / "stopped"), "--jobs", "2", "--json"]
    runs = tmp_path / "stopped" / "runs"
    proc = subprocess.Popen(cmd, preexec_fn=ctrl_c_able, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(runs.glob("*/summary.json"))) < 30 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep should still be going"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err and "Traceback" not in err
    complete = {p.parent.name for p in runs.glob("*/summary.json")}
    assert 30 <= len(complete) < 200, len(complete)
    before = {k: _files(runs / k) for k in complete}
    resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads(resumed.stdout)
    assert set(doc["reused"]) == complete and not doc["failed"]
    assert len(doc["ran"]) == 200 - len(complete) and not set(doc["ran"]) & complete
    assert {k: _files(runs / k) for k in complete} == before, "finished runs are not redone"
    # Progress on the terminal: runs done of those to do, and the time left at the pace so far.
    todo = 200 - len(complete)
    assert f"{len(complete)} points already complete; {todo} to run" in resumed.stderr
    lines = [ln for ln in resumed.stderr.splitlines() if ln.startswith("  [")]
    assert len(lines) == todo and lines[-1].startswith(f"  [{todo}/{todo}, 0:00 left]")
    # The uninterrupted sweep: on a local Ray instance (a local pool where Ray is not installed).
    ray = importlib.util.find_spec("ray") is not None
    whole = lasthop.sweep(spec, tmp_path / "whole", **({"backend": "ray"} if ray else {"jobs": 2}))
    assert len(whole.ran) == 200
    table = pd.read_parquet(tmp_path / "stopped" / "results.parquet")
    assert len(table) == 200 * 2
    pd.testing.assert_frame_equal(table, whole.table)
    assert _files(runs) == _files(whole.out / "runs")
