"""Ctrl-C cancels a run cleanly: the CLI exits 130, never leaves a run directory that looks complete, and
leaves a finished run already in the directory whole."""

from __future__ import annotations

import _thread
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import ctrl_c_able, small_scenario, write_scenario

import lasthop


def endless() -> dict[str, Any]:
    """A run of many simulated hours; no packet log and a warm-up to the end keep its memory flat."""
    d = small_scenario(duration_s=1e6)
    d["warmup_s"] = 1e6 - 1
    d["output"] = {"packets": False}
    d["flows"][1]["stop_s"] = None
    del d["flows"][1]["stop_s"]
    return d


def _interrupted_run(cwd: Path, scenario: str) -> tuple[int, str, float]:
    """``lasthop run SCENARIO --out out`` in ``cwd``, sent SIGINT half a second after the run starts:
    its exit code, its stderr after the first line, and the seconds it took to stop."""
    proc = subprocess.Popen([sys.executable, "-m", "lasthop", "run", scenario, "--out", "out"],
                            preexec_fn=ctrl_c_able, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # printed once the scenario is loaded, just before the run starts
        assert first.startswith("lasthop: running"), first
        time.sleep(0.5)
        assert proc.poll() is None, "the run should still be going"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err, stopped_in


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_exits_130_without_a_summary(tmp_path: Path) -> None:
    write_scenario(tmp_path / "long.toml", endless())
    returncode, err, stopped_in = _interrupted_run(tmp_path, "long.toml")
    assert returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert stopped_in < 5
    assert not (tmp_path / "out" / "summary.json").exists()
    assert not [p for p in tmp_path.rglob("*") if ".tmp-" in p.name]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupted_rerun_keeps_the_run_already_there(tmp_path: Path) -> None:
    """A run redone into a directory that holds a finished run and interrupted leaves that run whole:
    the same summary, its tables readable (it used to remove the summary as the new run began)."""
    write_scenario(tmp_path / "short.toml", small_scenario(duration_s=2.0))
    write_scenario(tmp_path / "long.toml", endless())
    done = subprocess.run([sys.executable, "-m", "lasthop", "run", "short.toml", "--out", "out"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    before = (tmp_path / "out" / "summary.json").read_bytes()
    returncode, err, _ = _interrupted_run(tmp_path, "long.toml")
    assert returncode == 130, err
    assert (tmp_path / "out" / "summary.json").read_bytes() == before
    kept = lasthop.RunResult.load(tmp_path / "out")
    assert len(kept.packets) > 0 and list(kept.flows["flow"]) == ["video", "bulk"]
    assert not [p for p in tmp_path.rglob("*") if ".tmp-" in p.name]


def test_keyboard_interrupt_cancels_the_worker() -> None:
    """In the API, Ctrl-C (here raised in the main thread by a timer) cancels the engine and propagates."""
    # interrupt_main does nothing while SIGINT is ignored (a run started as a background job): handle it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.3, _thread.interrupt_main)
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            lasthop.run(endless())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 5
    assert not [t for t in threading.enumerate() if t.name == "lasthop-run" and t.is_alive()]


def _hammer_ctrl_c(proc: subprocess.Popen[str], started: Any, presses: int = 200) -> str:
    """Presses Ctrl-C again and again (every 5 ms, like a user leaning on it) once ``started()`` says a
    run is streaming, until ``proc`` ends; returns its stderr."""
    try:
        deadline = time.monotonic() + 60
        while not started() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the run should still be going"
        for _ in range(presses):
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGINT)
            time.sleep(0.005)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return err


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob(".*"))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_pressed_repeatedly_leaves_no_temporary_files(tmp_path: Path) -> None:
    """A second Ctrl-C while a cancelled run cleans up does not cut the clean-up short: the streamed
    tables' temporary files go, in ``lasthop run`` and in a sweep's workers (whose parent also repeats
    Ctrl-C until they stop)."""
    d = small_scenario(duration_s=1e6)  # the packet log streams to the run directory as it goes
    d["flows"][1].pop("stop_s", None)
    write_scenario(tmp_path / "long.toml", d)
    proc = subprocess.Popen([sys.executable, "-m", "lasthop", "run", "long.toml", "--out", "out"],
                            preexec_fn=ctrl_c_able, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = _hammer_ctrl_c(proc, lambda: bool(_leftovers(tmp_path / "out")) if (tmp_path / "out").exists() else False)
    # 130; or, if a press lands in the instant between the run restoring Python's handler and the CLI
    # ignoring further presses, killed by the signal itself (a shell shows both as 130).
    assert proc.returncode in (130, -signal.SIGINT) and "Traceback" not in err, err
    assert _leftovers(tmp_path / "out") == [] and not (tmp_path / "out" / "summary.json").exists()

    (tmp_path / "spec.toml").write_text('scenario = "long.toml"\nseeds = 2\n[grid]\n"flows[0].rate_mbps" = [1, 2]\n')
    proc = subprocess.Popen([sys.executable, "-m", "lasthop", "sweep", "spec.toml", "--out", "sw", "--jobs", "2"],
                            preexec_fn=ctrl_c_able, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = tmp_path / "sw" / "runs"
    err = _hammer_ctrl_c(proc, lambda: len(_leftovers(runs)) >= 2 if runs.exists() else False)
    assert proc.returncode in (130, -signal.SIGINT) and "Traceback" not in err, err
    assert _leftovers(runs) == [] and not list(runs.glob("*/summary.json"))


def test_a_run_redone_in_a_directory_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    """A run killed outright (no clean-up) leaves temporary files; redoing the run there removes them
    (those of a process that still exists stay), so the directory holds exactly an uninterrupted run's files."""
    import os

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    out = tmp_path / "out"
    out.mkdir()
    stale = [out / f".packets.parquet.streaming-{pid}", out / f".summary.json.tmp-{pid}"]
    live = out / f".tx.parquet.streaming-{os.getppid()}"  # another run going on here
    mine = out / f".notes.tmp-{pid}"  # not a run file: not lasthop's to remove, dead writer or not
    for f in [*stale, live, mine]:
        f.write_bytes(b"partial")
    lasthop.run(small_scenario(2.0), out=out)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == sorted([live.name, mine.name])
    assert (out / "summary.json").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupted_run_in_the_api_gives_ctrl_c_back(tmp_path: Path) -> None:
    """In a program, Ctrl-C during ``lasthop.run(..., out=)`` stops the run, and Python's own Ctrl-C
    handling is back afterwards (the run ignores repeated presses only while it cleans up)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.5, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            lasthop.run(endless() | {"output": {"packets": True}}, out=tmp_path / "out")
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert [p.name for p in (tmp_path / "out").iterdir()] == []
    finally:
        signal.signal(signal.SIGINT, previous)
