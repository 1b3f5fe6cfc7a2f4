"""Running the variants of a scenario side by side (``lasthop compare``).

:func:`plan` turns a scenario file into one :class:`Job` per variant (or one for the base when the
file has none), each writing its own run directory. :func:`run_jobs` runs them one after another in
this process, or in worker processes (``jobs > 1``); a run's result depends only on its scenario and
seed, so both give byte-identical run directories.

Each run is saved by whoever ran it as soon as it finishes, so finished runs stay complete whatever
happens to the others. A run that fails is reported and the others go on. Ctrl-C stops every run in
progress (each cancels its engine and leaves its directory without ``summary.json``), runs nothing
more, and reports which runs had finished.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lasthop.errors import LasthopError, ScenarioError, TraceFormatError
from lasthop.scenario import Scenario

__all__ = ["Job", "Outcome", "plan", "run_jobs", "default_root", "BASE_NAME"]

BASE_NAME = "base"
"""The run directory of a scenario without variants."""


@dataclass(frozen=True)
class Job:
    name: str
    scenario: Scenario
    out: Path
    variant: str = ""
    """The variant it runs (``name`` is ``variant/seedN`` when a comparison runs several seeds)."""


@dataclass
class Outcome:
    """How one job ended: ``ok``, ``failed``, ``interrupted`` (stopped by Ctrl-C) or ``not_run``."""

    job: Job
    status: str
    message: str = ""
    seconds: float = 0.0
    input_error: bool = False
    """The failure is the scenario's (a ScenarioError or a bad trace file), not lasthop's."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def default_root(scenario: str | os.PathLike[str]) -> Path:
    """``runs/<scenario file stem>``."""
    stem = re.sub(r"[^\w.-]+", "-", Path(scenario).stem).strip("-.") or "compare"
    return Path("runs") / stem


def plan(scenario: str | os.PathLike[str], root: Path, names: Sequence[str] = (), seed: int | None = None,
         seeds: int = 1) -> list[Job]:
    """One job per variant of the scenario file (the ``names`` ones, in that order, if given), each
    into ``root/<variant>``; the base alone, into ``root/base``, when the file has no variants. With
    ``seeds`` > 1, one job per variant and seed (the first seed, then the next ones: seed, seed + 1, …),
    each into ``root/<variant>/seed<N>``. Raises ScenarioError (every problem of every selected variant)
    before anything runs."""
    variants = Scenario.variants(scenario, names=list(names) if names else None)
    pairs = [(v.variant or BASE_NAME, v) for v in variants] or [(BASE_NAME, Scenario.load(scenario))]
    if seeds <= 1:
        return [Job(name, sc.with_seed(seed) if seed is not None else sc, root / name, name) for name, sc in pairs]
    jobs = []
    for name, sc in pairs:
        first = seed if seed is not None else int(sc.to_dict().get("seed", 1))
        for s in range(first, first + seeds):
            jobs.append(Job(f"{name}/seed{s}", sc.with_seed(s), root / name / f"seed{s}", name))
    return jobs


def run_jobs(jobs: Sequence[Job], workers: int = 1,
             on_done: Callable[[Outcome], None] | None = None) -> tuple[list[Outcome], bool]:
    """Runs every job; returns their outcomes (in job order) and whether Ctrl-C stopped them.

    ``on_done`` is called (in this process) as each job ends.
    """
    notify = on_done or (lambda _: None)
    if workers <= 1 or len(jobs) <= 1:
        return _sequential(jobs, notify)
    return _parallel(jobs, workers, notify)


def _execute(scenario: Scenario, out: str) -> tuple[str, str, bool]:
    """Runs one scenario and saves it: ``(status, message, input_error)``.

    The ``summary.json`` of an earlier run in ``out`` goes first, so a run that fails or is
    interrupted never leaves its directory looking complete with older results.
    """
    from lasthop.result import SUMMARY_FILE
    from lasthop.runner import run

    try:
        (Path(out) / SUMMARY_FILE).unlink(missing_ok=True)
        run(scenario, out=out)  # the packet log streams into out as the run goes
    except (ScenarioError, TraceFormatError) as e:
        return "failed", str(e), True
    except LasthopError as e:
        return "failed", str(e), False
    except OSError as e:
        return "failed", f"cannot write the run directory {out}: {e.strerror or e}", False
    except Exception as e:  # noqa: BLE001 - one run's failure must not end the others
        return "failed", f"{type(e).__name__}: {e}", False
    return "ok", "", False


def _sequential(jobs: Sequence[Job], notify: Callable[[Outcome], None]) -> tuple[list[Outcome], bool]:
    outcomes = [Outcome(job, "not_run") for job in jobs]
    for o in outcomes:
        t0 = time.monotonic()
        try:
            o.status, o.message, o.input_error = _execute(o.job.scenario, str(o.job.out))
        except KeyboardInterrupt:
            o.status = "interrupted"
            return outcomes, True
        o.seconds = time.monotonic() - t0
        notify(o)
    return outcomes, False


# -- worker processes ---------------------------------------------------------------------------------

def _worker_init() -> None:
    """Workers ignore Ctrl-C while idle (they also start with it ignored, see ``_sigint_ignored``); a
    job in progress takes it (see :func:`_worker`). On Linux a worker also ends with its parent, so a
    killed ``compare`` or ``sweep`` leaves no run going on its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
        except (OSError, AttributeError):
            pass


def _worker(scenario: Scenario, out: str) -> tuple[str, str, bool, float]:
    """A job in a worker process. Ctrl-C (from the terminal, or forwarded by the parent) cancels the
    engine through ``lasthop.run`` and the job reports ``interrupted``."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    t0 = time.monotonic()
    try:
        status, message, input_error = _execute(scenario, out)
        return status, message, input_error, time.monotonic() - t0
    except KeyboardInterrupt:
        return "interrupted", "", False, time.monotonic() - t0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _parallel(jobs: Sequence[Job], workers: int, notify: Callable[[Outcome], None]) -> tuple[list[Outcome], bool]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    outcomes = [Outcome(job, "not_run") for job in jobs]
    # spawn: workers start clean (no inherited threads or engine state), the same on every platform.
    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_init)
    # Submitting starts the workers; they inherit an ignored SIGINT, so a Ctrl-C while one is still
    # importing does not kill it with a traceback. _worker takes Ctrl-C while it runs a job.
    with _sigint_ignored():
        futures: dict[Future[tuple[str, str, bool, float]], Outcome] = {
            pool.submit(_worker, o.job.scenario, str(o.job.out)): o for o in outcomes}
    pending = set(futures)
    interrupted = False

    def collect(done: set[Future[tuple[str, str, bool, float]]]) -> None:
        for f in done:
            o = futures[f]
            if f.cancelled():
                continue
            exc = f.exception()
            if isinstance(exc, KeyboardInterrupt):
                o.status = "interrupted"
            elif exc is not None:  # the worker process died (BrokenProcessPool) or could not unpickle
                o.status, o.message = "failed", f"{type(exc).__name__}: {exc}"
            else:
                o.status, o.message, o.input_error, o.seconds = f.result()
            if o.status != "interrupted":
                notify(o)

    try:
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            collect(done)
    except KeyboardInterrupt:
        interrupted = True
        for f in pending:
            f.cancel()
        collect(_stop(pool, pending))
    finally:
        _shutdown(pool)
    return outcomes, interrupted or any(o.status == "interrupted" for o in outcomes)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _stop(pool: Any, pending: set[Any]) -> set[Any]:
    """After Ctrl-C: asks every worker to stop (SIGINT; idle ones ignore it) until the jobs in
    progress have ended; further Ctrl-C presses do not cut this short. Returns the ended futures."""
    from concurrent.futures import wait

    running = {f for f in pending if not f.cancelled()}
    while True:
        try:
            for p in list((getattr(pool, "_processes", None) or {}).values()):
                if p.is_alive() and p.pid is not None:
                    try:
                        os.kill(p.pid, signal.SIGINT)
                    except ProcessLookupError:
                        pass
            _, still = wait(running, timeout=0.5)
            if not still:
                return running
        except KeyboardInterrupt:
            continue


def _shutdown(pool: Any) -> None:
    while True:
        try:
            pool.shutdown(wait=True, cancel_futures=True)
            return
        except KeyboardInterrupt:
            continue
