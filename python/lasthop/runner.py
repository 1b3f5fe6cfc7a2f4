"""``lasthop.run``: runs a scenario in the Rust core and wraps the output in a :class:`RunResult`.

The core runs with the GIL released in a worker thread. The calling thread only waits, which keeps it
able to take Ctrl-C: a ``KeyboardInterrupt`` cancels the run through its :class:`_lasthop.Progress`,
waits for the worker to stop, and propagates. The same object's ``sim_time_ns`` drives the progress
bar. (The module is called ``runner`` so that it does not shadow the ``lasthop.run`` function.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from types import FrameType
from typing import Any

from lasthop import _lasthop
from lasthop.errors import ScenarioError
from lasthop.result import RunResult
from lasthop.scenario import Scenario

__all__ = ["run"]

PROGRESS_AFTER_S = 2.0
"""Wall time after which a still-running run shows a progress bar (when stderr is a terminal)."""


def run(scenario: Scenario | str | os.PathLike[str] | Mapping[str, Any], seed: int | None = None,
        progress: bool = False, pcap_dir: str | os.PathLike[str] | None = None,
        out: str | os.PathLike[str] | None = None) -> RunResult:
    """Runs ``scenario`` (a Scenario, a scenario file path, or a dict) and returns its result.

    ``seed`` overrides the scenario's master seed. With ``progress=True``, a run that takes longer than
    about two seconds shows a progress bar on stderr if stderr is a terminal. With ``pcap_dir`` (an
    existing directory), ``<node>.pcap`` is written there for every end host of a flow: each packet its
    flows sent and received, as the emulator captures real nodes (raw IPv4; headers built from the
    model's fields, cut after the headers; see FIDELITY.md).

    With ``out``, the run directory is written there as :meth:`RunResult.save` would, and the packet
    log, the per-PSDU log, the RTT samples and the video frames go to ``packets.parquet``,
    ``tx.parquet``, ``rtt.parquet`` and ``frames.parquet`` as the run goes, in row groups (of finished
    packets), written by the core in a thread of its own: memory then holds the packets in flight and
    a few chunks of each. The result reads those tables from the files.
    """
    sc = _as_scenario(scenario)
    if seed is not None:
        sc = sc.with_seed(seed)
    handle = _lasthop.Progress()
    pcap = None if pcap_dir is None else os.fspath(pcap_dir)
    show = progress and sys.stderr.isatty()
    if out is None:
        done = in_engine_thread(lambda: _lasthop.run(sc.to_json(), sc.base_dir, None, handle, pcap), handle, sc, show=show)
        return RunResult._from_native(done, variant=sc.variant_info())
    from pathlib import Path

    from lasthop.result import (SUMMARY_FILE, pandas_version, put_streamed_in_place, remove_stale_temporaries,
                                streamed_temporaries)

    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(d)
    temporaries = streamed_temporaries(d)
    with ctrl_c_once():
        try:
            tables, version = {name: os.fspath(p) for name, p in temporaries.items()}, pandas_version()
            done = in_engine_thread(lambda: _lasthop.run(sc.to_json(), sc.base_dir, None, handle, pcap, tables,
                                                         version), handle, sc, show=show)
            # A run already there stays whole until this one has finished (a failed or interrupted run
            # loses no finished results); from here on it is never complete-looking with mixed tables.
            (d / SUMMARY_FILE).unlink(missing_ok=True)
            files = put_streamed_in_place(d, temporaries)
        except BaseException:
            for tmp in temporaries.values():  # the core removes what it began; this covers the rest
                tmp.unlink(missing_ok=True)
            raise
        result = RunResult._from_native(done, variant=sc.variant_info(), streamed=files)
        result.save(d)
    return result


@contextlib.contextmanager
def ctrl_c_once() -> Iterator[None]:
    """Within the block the first Ctrl-C raises ``KeyboardInterrupt`` as usual and later presses are
    ignored until the block has ended, so the clean-up the first one starts (cancel the engine, remove
    the streamed tables' temporary files) is not cut short by a second press, whether the user leans on
    Ctrl-C or a sweep's parent repeats it until its workers stop. Nothing changes outside the main
    thread, or where Ctrl-C is not Python's ``KeyboardInterrupt`` (ignored, or the caller's handler)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return

    def once(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGINT, once)
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def in_engine_thread(call: Callable[[], Any], handle: _lasthop.Progress, sc: Scenario, show: bool = False,
                     name: str = "lasthop-run") -> Any:
    """Runs ``call`` (which releases the GIL in the engine) in a worker thread and returns its result,
    re-raising its exception here; Ctrl-C here cancels it through ``handle`` and waits until it has
    returned. ``show``: a progress bar after about two seconds."""
    done = threading.Event()
    box: dict[str, Any] = {}
    # The worker calls the engine only if it was not cancelled first; _cancel waits for it only if it did.
    state = {"called": False, "cancelled": False}
    lock = threading.Lock()

    def work() -> None:
        try:
            with lock:
                if state["cancelled"]:
                    return
                state["called"] = True
            box["out"] = call()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            box["err"] = e
        finally:
            done.set()

    def cancel() -> None:
        with lock:
            state["cancelled"] = True
            called = state["called"]
        if called:
            _cancel(done, handle)

    try:
        # Started inside the try: a Ctrl-C that lands while the thread starts must cancel it too (it had
        # left an engine running, uncancelled, whose table writer went on after the clean-up).
        threading.Thread(target=work, name=name, daemon=True).start()
        _wait(done, handle, sc, show=show)
    except BaseException:
        cancel()
        raise
    if "err" in box:
        raise box["err"]
    return box["out"]


def _cancel(done: threading.Event, handle: _lasthop.Progress) -> None:
    """Stops the engine and waits until it has returned; a second Ctrl-C does not cut the wait short.

    The engine checks its cancel flag every few thousand events, so this takes milliseconds. Letting the
    interpreter exit while the worker is still inside the engine would abort the process.
    """
    handle.cancel()
    while True:
        try:
            if done.wait(0.05):
                return
        except KeyboardInterrupt:
            continue


def _as_scenario(s: Scenario | str | os.PathLike[str] | Mapping[str, Any]) -> Scenario:
    if isinstance(s, Scenario):
        return s
    if isinstance(s, Mapping):
        return Scenario.from_dict(s)
    if isinstance(s, (str, os.PathLike)):
        return Scenario.load(s)
    raise ScenarioError.single("invalid_type", f"expected a Scenario, a path or a dict, got {type(s).__name__}")


def _wait(done: threading.Event, handle: _lasthop.Progress, sc: Scenario, show: bool) -> None:
    """Waits for the worker, in short steps so that Ctrl-C is noticed promptly.

    (An Event, not ``Thread.join``: on Python < 3.13 a join interrupted by KeyboardInterrupt can mark a
    running thread as stopped, so a later join would return while the engine still runs.)
    """
    show_at = time.monotonic() + PROGRESS_AFTER_S
    while not done.wait(0.05):
        if show and time.monotonic() >= show_at:
            _show_progress(done, handle, sc)
            return


def _show_progress(done: threading.Event, handle: _lasthop.Progress, sc: Scenario) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    total = sc.duration_s
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.1f}/{task.total:g} s simulated"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(escape(sc.name), total=total)
        while not done.wait(0.1):
            bar.update(task, completed=min(total, handle.sim_time_ns / 1e9))
