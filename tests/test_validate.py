"""`lasthop validate …` and `lasthop bench` through the CLI: JSON shape and headline numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_validate_bianchi_rts_cts_rows() -> None:
    """RTS/CTS ahead of every frame against Bianchi's eq. 15: within 0.2 % at N = 1, 2.5 % otherwise."""
    doc = run_json("validate", "bianchi", "--rts-cts", "--seconds", "5")
    assert [r["n"] for r in doc["rows"]] == [1, 2, 5, 10, 20, 50]
    basic = {r["n"]: r["model_mbps"] for r in run_json("validate", "bianchi", "--seconds", "1")["rows"]}
    for r in doc["rows"]:
        assert abs(r["rel_error"]) <= (0.002 if r["n"] == 1 else 0.025), r
        assert r["model_mbps"] != basic[r["n"]], "the RTS/CTS model, not basic access"


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


def test_bench_realistic_times_the_whole_process() -> None:
    """The realistic rows time the run, the DataFrame and the run directory, and the streamed run as
    ``lasthop run --out`` makes it; the downlink anchor's row puts ns-3's own speed beside ours (when
    the anchors are there)."""
    from lasthop.commands.bench import ns3_downlink_binary

    doc = run_json("bench", "--realistic", "--repeat", "1", "--busy-seconds", "10", "--anchor-seconds", "1")
    assert [r["scenario"] for r in doc["rows"]] == ["downlink anchor N=10", "home_rtc.toml", "lastpq_vr.toml",
                                                    "busy_bss.toml (10 s)"]
    for r in doc["rows"]:
        assert r["packets"] > 10_000 and r["run_s"] > 0 and r["save_s"] > 0 and r["streamed_s"] > 0
        assert r["whole_sim_s_per_wall_s"] < r["run_sim_s_per_wall_s"]
        assert r["streamed_sim_s_per_wall_s"] == pytest.approx(r["sim_seconds"] / r["streamed_s"])
    anchor = doc["rows"][0]
    assert anchor["ns3_sim_s_per_wall_s"] > 0
    # Where ns-3's program is built (shared/anchors/ns3/run_anchor.sh), both run now as whole processes.
    if ns3_downlink_binary() is not None:
        assert anchor["side_by_side_sim_s"] == 2.5, "1 s of warm-up, the 1-s window, 0.5 s of drain"
        assert anchor["ns3_here_sim_s_per_wall_s"] > 0 and anchor["process_sim_s_per_wall_s"] > 0
        assert "ns3_here_error" not in anchor
    else:
        assert "ns3_here_sim_s_per_wall_s" not in anchor


def test_bench_realistic_names_a_failing_ns3_program(tmp_path: Path) -> None:
    """A side-by-side ns-3 run that fails is told with ns-3's own words, not a traceback, and the rest of
    the bench goes on."""
    build = tmp_path / "anchors" / "ns3" / "build"
    build.mkdir(parents=True)
    (build / "ap_downlink").write_text("#!/bin/sh\necho 'no wifi module' >&2\nexit 3\n")
    (build / "ap_downlink").chmod(0o755)
    p = subprocess.run([*LASTHOP, "bench", "--realistic", "--repeat", "1", "--busy-seconds", "10", "--anchor-seconds", "1"],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "LASTHOP_SHARED": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert "ap_downlink failed (exit 3: no wifi module)" in p.stderr and "Traceback" not in p.stderr
    assert "busy_bss.toml (10 s)" in p.stdout


@pytest.mark.parametrize("args", [["bench", "--scenario", "nope"], ["bench", "--n", "0"], ["validate", "nope"]])
def test_bad_flags_exit_2(args: list[str]) -> None:
    p = subprocess.run([*LASTHOP, *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr


def test_validate_ns3_delay_meets_the_targets() -> None:
    """Issue 13: the downlink delay anchor in the ns3 profile (ns-3's queueing: fq_codel per AC above
    the 500-packet WifiMacQueue): video throughput within 5 %, loss within 5 points, p50/p99 within
    25 % or 1 ms of ns-3 3.44, in AC_VI and AC_BE, at every N."""
    doc = run_json("validate", "ns3-delay")
    assert [(r["case"], r["n"]) for r in doc["rows"]] == [(c, n) for c in ("vi", "be") for n in (1, 2, 5, 10, 20, 50)]
    for r in doc["rows"]:
        assert r["ok_throughput"] and r["ok_loss"] and r["ok_p50"] and r["ok_p99"], r
    assert doc["all_targets_met"]


def test_linux_profile_serves_vi_before_be_at_every_n() -> None:
    """In the Linux profile the prioritized video waits less than when it shares AC_BE with the
    background, and stays within a few ms at p50 (issue 13: it waited longer in AC_VI)."""
    doc = run_json("validate", "ns3-delay", "--profile", "linux", "--seconds", "4")
    assert doc["vi_below_be"] == {str(n): True for n in (1, 2, 5, 10, 20, 50)}
    for r in doc["rows"]:
        if r["case"] == "vi":
            assert r["video_loss"] == 0 and r["p50_ms"] < 5, r


def _anchors_without(tmp_path: Path, src: str, drop: str) -> Path:
    from lasthop.anchors import shared_dir

    lines = (shared_dir() / "anchors" / "ns3" / src).read_text().splitlines(keepends=True)
    path = tmp_path / src
    path.write_text("".join(l for l in lines if not l.startswith(drop)))
    return path


@pytest.mark.parametrize(("command", "src", "drop", "names"), [
    ("ns3", "results.csv", "sat_11n_mcs7_agg,20,", "sat_11n_mcs7_agg N=20"),
    ("ns3-delay", "details.csv", "dl_video_be,5,", "dl_video_be N=5"),
])
def test_anchors_file_lacking_a_point_exits_2(tmp_path: Path, command: str, src: str, drop: str, names: str) -> None:
    path = _anchors_without(tmp_path, src, drop)
    p = subprocess.run([*LASTHOP, "validate", command, "--anchors", str(path), "--seconds", "0.1"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert names in p.stderr


def test_a_file_that_is_not_an_anchors_file_is_named_so(tmp_path: Path) -> None:
    """A scenario given as --anchors: a usage error saying it is not an anchors file (it printed only
    the bare name of the missing column, 'scenario')."""
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    p = subprocess.run([*LASTHOP, "validate", "ns3", "--anchors", str(tmp_path / "x.csv"), "--seconds", "0.1"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "not an anchors file (a row without its 'scenario' column)" in p.stderr, p.stderr


def test_the_ns3_downlink_example_is_the_validations_scenario() -> None:
    """examples/ns3_downlink.toml is `lasthop validate ns3-delay`'s N = 5, AC_VI point over its default
    window, so what a user runs from it is what the validation compares with ns-3."""
    from lasthop import Scenario, downlink_anchor

    repo = Path(__file__).resolve().parent.parent
    example = Scenario.load(repo / "examples" / "ns3_downlink.toml").to_dict()
    assert example == Scenario.from_dict(downlink_anchor.scenario(5, "vi")).to_dict()


def test_the_native_module_is_built_with_the_engine_profile() -> None:
    """`make build` optimizes the native module with the engine's profile (crates/lasthop-pgo): the
    profile's functions must be the module's, or it optimizes nothing (their symbol hashes differ when
    cargo unifies other features in the module's build)."""
    import lasthop._lasthop

    repo = Path(__file__).resolve().parent.parent
    profile = repo / "target" / "pgo" / "engine.profdata"
    module = Path(lasthop._lasthop.__file__)  # the module this interpreter imports
    if not profile.exists():
        pytest.skip("the module was built with `make build PGO=0` or outside make")
    if profile.stat().st_size == 0:
        pytest.skip("no engine profile: `make build` said why (e.g. llvm-profdata unavailable)")
    p = subprocess.run([repo / "crates" / "lasthop-pgo" / "profile.sh", "--check", module],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
