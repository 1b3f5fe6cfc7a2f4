"""``lasthop bench``: simulated seconds per wall second and engine events per second on the saturated
anchor scenarios, side by side with ns-3's speed on this machine kind (from the anchors)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import click

from lasthop import _lasthop
from lasthop.anchors import ns3_results, shared_dir
from lasthop.commands.validate import NS, SCENARIOS, _emit


@click.command("bench")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--scenario", type=click.Choice(SCENARIOS), default=None, help="Run one scenario only.")
@click.option("--n", "n_only", type=click.IntRange(min=1), default=None, help="Run one station count only.")
@click.option("--seconds", default=10.0, show_default=False, type=click.FloatRange(min=0.0, min_open=True, max=1e6),
              help="Simulated seconds per run [default: 10]; with --emulation, iperf3's run time [default: 5, "
                   "at most 30].")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1),
              help="Runs per point; the fastest is reported.")
@click.option("--realistic", is_flag=True,
              help="Instead: whole-process speed on realistic scenarios (ns-3's downlink anchor at N = 10 with "
                   "ns-3's own speed beside it, the default comparison's home, LAST-PQ's VR home, the busy BSS): "
                   "kept in memory (the run, its packets as a DataFrame, the run directory written, each timed) "
                   "and streamed to a directory as lasthop run does. Where shared/anchors/ns3/run_anchor.sh built "
                   "ns-3's program, the anchor also runs as two whole processes in turn, ns-3's and `lasthop run`, "
                   "measured side by side now (`ns-3 here`); `ns-3` is ns-3's recorded speed.")
@click.option("--busy-seconds", default=600.0, show_default=True, type=click.FloatRange(min=1.0),
              help="With --realistic: simulated seconds of examples/busy_bss.toml.")
@click.option("--anchor-seconds", default=10.0, show_default=True, type=click.FloatRange(min=1.0),
              help="With --realistic: the measured window of the side-by-side anchor runs (after ns-3's 1-s "
                   "warm-up, before its 0.5-s drain); Python's start-up weighs less in longer runs.")
@click.option("--emulation", is_flag=True,
              help="Instead: the emulator's lag at 100 Mbit/s of iperf3 UDP through the model and in relay "
                   "mode (needs root and iperf3, as lasthop emulate does).")
def command(as_json: bool, scenario: str | None, n_only: int | None, seconds: float, repeat: int,
            realistic: bool, busy_seconds: float, anchor_seconds: float, emulation: bool) -> None:
    """Speed of the 802.11 model on the saturated scenarios (whole run, fastest of --repeat)."""
    ctx = click.get_current_context()

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT

    if realistic and emulation:
        raise click.UsageError("--realistic and --emulation are two different benches: give one")
    for name, flag in (("busy_seconds", "--busy-seconds"), ("anchor_seconds", "--anchor-seconds")):
        if given(name) and not realistic:
            raise click.UsageError(f"{flag} sizes the --realistic bench: add --realistic")
    for name, flag in (("scenario", "--scenario"), ("n_only", "--n")):
        if given(name) and (realistic or emulation):
            raise click.UsageError(f"{flag} picks a saturated scenario of the default bench, not of "
                                   f"{'--realistic' if realistic else '--emulation'}")
    if given("seconds") and realistic:
        raise click.UsageError("--seconds sizes the saturated bench and --emulation; --realistic takes "
                               "--busy-seconds and --anchor-seconds")
    if given("repeat") and emulation:
        raise click.UsageError("--repeat does not apply to --emulation, which runs each mode once")
    if seconds != seconds:  # NaN passes the range
        raise click.BadParameter(f"must be a finite number of seconds, got {seconds}", param_hint="--seconds")
    if emulation and seconds > EMULATION_MAX_SECONDS:
        raise click.BadParameter(f"with --emulation, iperf3's run time: at most {EMULATION_MAX_SECONDS:g} s "
                                 f"(default 5), got {seconds:g}", param_hint="--seconds")
    if realistic:
        rows = realistic_rows(repeat, busy_seconds, anchor_seconds)
        if as_json:
            _emit({"rows": rows}, True, "")
        else:
            # The terminal gets the figures that compare; --json has every timing.
            side = next((r["side_by_side_sim_s"] for r in rows if "side_by_side_sim_s" in r), None)
            title = "lasthop speed, whole process: simulated s per wall s (realistic scenarios)"
            if side is not None:
                title = title[:-1] + f"; `ns-3 here`: ns-3 and `lasthop run` of the anchor in turn, whole processes, {side:g} simulated s)"
            _emit({"rows": [{"scenario": r["scenario"], "sim s": r["sim_seconds"], "packets": r["packets"],
                             "run only": r["run_sim_s_per_wall_s"], "in memory": r["whole_sim_s_per_wall_s"],
                             "streamed": r["streamed_sim_s_per_wall_s"], "ns-3": r.get("ns3_sim_s_per_wall_s"),
                             "streamed × ns-3": r.get("streamed_speedup_vs_ns3"),
                             "ns-3 here": r.get("ns3_here_sim_s_per_wall_s"),
                             "lasthop run × ns-3 here": r.get("process_speedup_vs_ns3_here")} for r in rows]}, False, title)
        return
    if emulation:
        _emit({"rows": emulation_rows(seconds=seconds if given("seconds") else 5.0)}, as_json,
              "lasthop emulate: lag at 100 Mbit/s of iperf3 UDP (µs)")
        return
    try:
        ref = ns3_results()
    except OSError:
        ref = {}
    rows = []
    for sc in [scenario] if scenario else SCENARIOS:
        for n in [n_only] if n_only else NS:
            best = float("inf")
            events = 0
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = _lasthop.saturation(sc, n, 1, 0.0, seconds)
                best = min(best, time.perf_counter() - t0)
                events = r["events"]
            row = {"scenario": sc, "n": n, "sim_seconds_per_wall_second": seconds / best,
                   "events_per_second": events / best}
            if (sc, n) in ref:
                ns3 = ref[(sc, n)]["sim_seconds_per_wall_second"]
                row["ns3_sim_seconds_per_wall_second"] = ns3
                row["speedup_vs_ns3"] = seconds / best / ns3
            rows.append(row)
    _emit({"rows": rows}, as_json, "lasthop speed (saturated scenarios)")


def realistic_rows(repeat: int = 1, busy_seconds: float = 600.0, anchor_seconds: float = 10.0) -> list[dict[str, Any]]:
    """Per realistic scenario, the fastest of ``repeat`` of two ways to get a run directory: kept in
    memory (the run, its packet log as a DataFrame, the directory written; each timed) and streamed as
    ``lasthop run --out`` does (the run writing its tables as it goes); simulated seconds per wall
    second for the run alone and for each way; for ns-3's downlink anchor, ns-3's speed on this machine
    kind beside. The busy BSS runs ``busy_seconds`` of its 3,600 s (`lasthop run
    examples/busy_bss.toml` takes 3,600 / 600 = 6 times its streamed time at the default). The anchor also
    runs side by side with ns-3 as whole processes, over ``anchor_seconds`` (:func:`anchor_side_by_side`)."""
    import tempfile

    import lasthop
    from lasthop import downlink_anchor
    from lasthop.experiments import topology

    try:
        ns3 = ns3_results().get(("dl_video_be", 10), {}).get("sim_seconds_per_wall_second")
    except OSError:
        ns3 = None
    root = topology.EXAMPLES
    cases: list[tuple[str, Any, float | None]] = [
        ("downlink anchor N=10", downlink_anchor.scenario(10, "be", profile="ns3"), ns3),
        ("home_rtc.toml", lasthop.Scenario.load(root / "home_rtc.toml"), None),
        ("lastpq_vr.toml", lasthop.Scenario.load(root / "lastpq_vr.toml"), None),
        (f"busy_bss.toml ({busy_seconds:g} s)",
         lasthop.Scenario.load(root / "busy_bss.toml").replace(duration_s=busy_seconds), None),
    ]
    rows = []
    for name, sc, ref in cases:
        best: tuple[float, float, float] | None = None
        streamed = float("inf")
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="lasthop-bench-") as tmp:
                t0 = time.perf_counter()
                res = lasthop.run(sc)
                t1 = time.perf_counter()
                packets = len(res.packets)
                t2 = time.perf_counter()
                res.save(Path(tmp) / "run")
                t3 = time.perf_counter()
                del res
                t4 = time.perf_counter()
                res = lasthop.run(sc, out=Path(tmp) / "streamed")
                streamed = min(streamed, time.perf_counter() - t4)
            times = (t1 - t0, t2 - t1, t3 - t2)
            if best is None or sum(times) < sum(best):
                best = times
        assert best is not None
        sim_s = res.summary["sim_end_ns"] / 1e9
        row: dict[str, Any] = {"scenario": name, "sim_seconds": sim_s, "packets": packets, "run_s": best[0],
                               "dataframe_s": best[1], "save_s": best[2], "streamed_s": streamed,
                               "run_sim_s_per_wall_s": sim_s / best[0], "whole_sim_s_per_wall_s": sim_s / sum(best),
                               "streamed_sim_s_per_wall_s": sim_s / streamed}
        if ref:
            row["ns3_sim_s_per_wall_s"] = ref
            row["whole_speedup_vs_ns3"] = sim_s / sum(best) / ref
            row["streamed_speedup_vs_ns3"] = sim_s / streamed / ref
        if name.startswith("downlink anchor"):
            row.update(anchor_side_by_side(repeat, anchor_seconds))
        rows.append(row)
    return rows


def ns3_downlink_binary() -> Path | None:
    """ns-3's downlink anchor program, where ``shared/anchors/ns3/run_anchor.sh`` built it."""
    path = shared_dir() / "anchors" / "ns3" / "build" / "ap_downlink"
    return path if os.access(path, os.X_OK) else None


def anchor_side_by_side(repeat: int, seconds: float = 10.0) -> dict[str, Any]:
    """ns-3's downlink anchor (N = 10, AC_BE, a window of ``seconds``) and ``lasthop run`` of the same
    scenario as whole processes, taken in turn ``repeat`` times on this machine now (the fastest of
    each): simulated seconds (warm-up, window and drain, the same in both) per wall second, and their
    ratio. Empty where ns-3's program is not built; where it fails, ``ns3_here_error`` says how (the
    rest of the bench goes on). A recorded ns-3 speed from another day would not compare: this
    machine's speed moves 1.5–2× from one day to the next, ns-3's more than lasthop's."""
    import subprocess
    import sys
    import tempfile

    from lasthop import downlink_anchor

    binary = ns3_downlink_binary()
    if binary is None:
        return {}
    w = downlink_anchor.Window(seconds=seconds)
    sim_s = w.warmup_s + w.seconds + w.drain_s
    sc = downlink_anchor.scenario(10, "be", profile="ns3", window=w)
    ns3_cmd = [str(binary), "--n=10", "--videoTos=0", f"--simTime={w.seconds:g}", f"--warmup={w.warmup_s:g}",
               f"--drain={w.drain_s:g}"]
    best = {"ns-3": float("inf"), "lasthop run": float("inf")}
    with tempfile.TemporaryDirectory(prefix="lasthop-bench-") as tmp:
        scenario = Path(tmp) / "anchor.json"
        scenario.write_text(json.dumps(sc), encoding="utf-8")
        lasthop_cmd = [sys.executable, "-m", "lasthop", "run", str(scenario), "--out", str(Path(tmp) / "run")]
        for _ in range(repeat):
            for name, cmd in (("ns-3", ns3_cmd), ("lasthop run", lasthop_cmd)):
                t0 = time.perf_counter()
                try:
                    # ns-3 simulates ≈ 1 s per wall s on a slow day: an hour is far beyond any window here.
                    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                          timeout=max(3600.0, 60 * sim_s))
                    why = None if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-500:]}"
                except (OSError, subprocess.TimeoutExpired) as e:
                    why = str(e)
                wall = time.perf_counter() - t0
                if why is not None and name == "ns-3":
                    click.echo(f"lasthop bench: ns-3's {binary} failed ({why}); the side by side is left out", err=True)
                    return {"ns3_here_error": f"{binary}: {why}"}
                if why is not None:
                    raise click.ClickException(f"lasthop run of the anchor failed ({why})")
                best[name] = min(best[name], wall)
    return {"side_by_side_sim_s": sim_s, "ns3_here_sim_s_per_wall_s": sim_s / best["ns-3"],
            "process_sim_s_per_wall_s": sim_s / best["lasthop run"],
            "process_speedup_vs_ns3_here": best["ns-3"] / best["lasthop run"]}


EMULATION_MAX_SECONDS = 30.0
"""The longest iperf3 run of ``bench --emulation`` (its scenario lasts 60 s)."""

BENCH_SCENARIO = {
    "name": "bench-emulation", "duration_s": 60,
    "servers": [{"name": "server"}],
    "aps": [{"name": "ap", "last_hop": {"type": "wired", "rate_mbps": 200, "delay_ms": 1}}],
    "stations": [{"name": "laptop"}],
    "links": [{"a": "server", "b": "ap", "rate_mbps": 1000, "delay_ms": 1}],
    "flows": [{"name": "real", "type": "external", "from": "server", "to": "laptop"}],
}


def emulation_rows(seconds: float = 5.0) -> list[dict[str, Any]]:
    """iperf3 UDP at 100 Mbit/s from the laptop's namespace to the server's, through a modelled
    200 Mbit/s last hop and in relay mode (``--bypass``): the lag's percentiles and what iperf3 saw;
    first, the floor this machine sets (``lasthop doctor``'s stalls: a perfect emulator's lag)."""
    import shutil
    import tempfile

    from lasthop.emulate import emulate
    from lasthop.scenario import Scenario

    if shutil.which("iperf3") is None:
        raise click.UsageError("--emulation needs iperf3 (apt install iperf3); see lasthop doctor")
    from lasthop.commands.doctor import cpu_floor

    # What this machine allows at best: the lag a perfect emulator would have, from the time the CPU
    # is taken away from a thread that never sleeps (measured idle, before the runs).
    floor = cpu_floor(0.9)
    rows: list[dict[str, Any]] = [{"mode": "floor", "packets": None, "lag_p50_us": floor["lag_p50_us"],
                                   "lag_p99_us": floor["lag_p99_us"], "lag_p999_us": floor["lag_p999_us"],
                                   "lag_max_us": floor["max_gap_us"], "iperf3_mbps": None, "iperf3_jitter_ms": None,
                                   "iperf3_lost_percent": None}]
    with tempfile.TemporaryDirectory(prefix="lasthop-bench-") as tmp:
        for mode in ("model", "bypass"):
            report = Path(tmp) / f"{mode}.json"
            script = (f"ip netns exec $LASTHOP_NS_SERVER iperf3 -s -1 -D >/dev/null 2>&1; sleep 0.5; "
                      f"iperf3 -c $LASTHOP_IP_SERVER -u -b 100M -l 1400 -t {seconds:g} -J > {report}")
            em = emulate(Scenario.from_dict(BENCH_SCENARIO), ["sh", "-c", script], lag_budget_us=1e6,
                         pcap=False, bypass=mode == "bypass", stdout_to_stderr=True)
            e = em.result.summary["emulation"]
            end = json.loads(report.read_text())["end"]["sum"]
            rows.append({"mode": mode, "packets": e["written"], "lag_p50_us": e["lag_p50_us"],
                         "lag_p99_us": e["lag_p99_us"], "lag_p999_us": e["lag_p999_us"], "lag_max_us": e["lag_max_us"],
                         "iperf3_mbps": end["bits_per_second"] / 1e6, "iperf3_jitter_ms": end["jitter_ms"],
                         "iperf3_lost_percent": end["lost_percent"]})
    return rows
