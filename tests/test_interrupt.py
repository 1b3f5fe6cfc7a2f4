"""Ctrl-C cancels a run cleanly: the CLI exits 130 and never leaves a run directory that looks complete."""

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


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_exits_130_without_a_summary(tmp_path: Path) -> None:
    write_scenario(tmp_path / "long.toml", endless())
    proc = subprocess.Popen([sys.executable, "-m", "lasthop", "run", "long.toml", "--out", "out"],
                            preexec_fn=ctrl_c_able, cwd=tmp_path,
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
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert stopped_in < 5
    assert not (tmp_path / "out" / "summary.json").exists()
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
