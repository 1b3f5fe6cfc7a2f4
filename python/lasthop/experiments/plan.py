"""An experiment as data: a plan of runs, executed, then reduced to rows.

    plan = exp.plan(Options(seed=1, quick=True, workdir=tmp))   # list[PlannedRun]
    doc = exp.reduce(execute(plan))                            # {"rows": [...], ...}

A plan holds everything a run needs (its scenario dict and seed), so the runs are independent of one
another and of the order they run in: :func:`execute` runs them one after another, and a sweep may run
them in parallel. The reduce step sees each planned run beside its result and nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lasthop
from lasthop.experiments.topology import Json


@dataclass(frozen=True)
class Options:
    """What an experiment is asked for."""

    seed: int
    quick: bool
    """Shorter runs (for tests)."""
    workdir: Path
    """A directory the plan may write generated inputs (traces) into; it outlives the runs."""
    trace: Path | None = None
    """Trace-driven experiments: one capacity trace instead of the default trace families."""


@dataclass(frozen=True)
class PlannedRun:
    """One run of an experiment: what it measures, its scenario (validated when it runs) and its seed."""

    variant: str
    scenario: Json
    seed: int
    point: Json = field(default_factory=dict)
    """Where the run sits besides its variant (a trace, a buffer size, an MCS ...), for the reduce step."""


@dataclass(frozen=True)
class Done:
    """A planned run and what it produced."""

    planned: PlannedRun
    result: lasthop.RunResult

    @property
    def scenario(self) -> Json:
        return self.planned.scenario


@dataclass(frozen=True)
class Experiment:
    """A named experiment: ``plan`` lists its runs, ``reduce`` turns them, run, into its document
    (``{"rows": [...]}`` plus any extra keys)."""

    name: str
    plan: Callable[[Options], list[PlannedRun]]
    reduce: Callable[[list[Done]], dict[str, Any]]
    takes_trace: bool = False
    """Trace-driven: the plan honours :attr:`Options.trace`."""


@dataclass
class Cache:
    """Where an experiment keeps its runs, as a sweep does: ``root/runs/<key>``, keyed by the hash of
    the resolved scenario and seed (:func:`lasthop.sweeps.point_key`), so a run already complete there
    is read back instead of run again (a rerun after Ctrl-C or a crash only runs what is missing)."""

    root: Path
    ran: int = 0
    reused: int = 0


OnRun = Callable[[str, str, float], None]
"""Told as each run ends: its label, ``ok`` or ``failed``, its wall seconds."""
OnPlan = Callable[[int, int], None]
"""Told once before the runs: how many will run, how many were found complete."""


def label(p: PlannedRun) -> str:
    """A planned run in a few words: its variant, its point and its seed."""
    return " ".join([p.variant, *(f"{k}={v}" for k, v in p.point.items()), f"seed={p.seed}"])


def execute(plan: Sequence[PlannedRun], jobs: int = 1, workdir: Path | None = None, cache: Cache | None = None,
            on_run: OnRun | None = None, on_plan: OnPlan | None = None) -> list[Done]:
    """Runs every planned run: one after another in this process, or with ``jobs`` > 1 in that many
    worker processes (the local pool of ``lasthop sweep``), each saved to a run directory under
    ``workdir`` and read back. Either way the results come in plan order and are the same. With
    ``cache``, every run goes to (or is read back from) its directory there. ``on_plan`` and ``on_run``
    follow the progress."""
    if cache is not None:
        return _cached(plan, jobs, cache, on_run, on_plan)
    if on_plan is not None:
        on_plan(len(plan), 0)
    if jobs <= 1 or len(plan) <= 1:
        done = []
        for p in plan:
            t0 = time.monotonic()
            done.append(Done(p, lasthop.run(lasthop.Scenario.from_dict(p.scenario), seed=p.seed)))
            if on_run is not None:
                on_run(label(p), "ok", time.monotonic() - t0)
        return done
    import tempfile

    from lasthop.compare import Job, Outcome, run_jobs
    from lasthop.errors import LasthopError

    with tempfile.TemporaryDirectory(prefix="lasthop-plan-", dir=workdir) as tmp:
        todo = [Job(f"run{i}", lasthop.Scenario.from_dict(p.scenario).with_seed(p.seed), Path(tmp) / f"run{i}")
                for i, p in enumerate(plan)]
        by_job = {j.name: p for j, p in zip(todo, plan)}

        def ended(o: Outcome) -> None:
            if on_run is not None:
                on_run(label(by_job[o.job.name]), o.status, o.seconds)

        outcomes, interrupted = run_jobs(todo, jobs, ended)
        if interrupted:
            raise KeyboardInterrupt
        for o, p in zip(outcomes, plan):
            if not o.ok:
                raise LasthopError(f"run {p.variant} {p.point or ''} failed: {o.message}")
        done = [Done(p, lasthop.RunResult.load(o.job.out)) for o, p in zip(outcomes, plan)]
        for d in done:  # read the lazy tables before the directory goes
            _ = d.result.packets, d.result.rtt, d.result.frames
        return done


def _cached(plan: Sequence[PlannedRun], jobs: int, cache: Cache, on_run: OnRun | None, on_plan: OnPlan | None) -> list[Done]:
    from lasthop.compare import Job, Outcome, run_jobs
    from lasthop.errors import LasthopError
    from lasthop.result import SUMMARY_FILE
    from lasthop.sweeps import point_key

    dirs: list[Path] = []
    todo: dict[Path, Job] = {}
    labels: dict[str, str] = {}
    for p in plan:
        sc = lasthop.Scenario.from_dict(p.scenario).with_seed(p.seed)
        d = cache.root / "runs" / point_key(sc, p.seed)
        dirs.append(d)
        if not (d / SUMMARY_FILE).exists():
            todo.setdefault(d, Job(d.name, sc, d))
            labels.setdefault(d.name, label(p))
    reused = len(set(dirs)) - len(todo)
    cache.reused += reused
    if on_plan is not None:
        on_plan(len(todo), reused)

    def ended(o: Outcome) -> None:
        if on_run is not None:
            on_run(f"{o.job.name} {labels[o.job.name]}", o.status, o.seconds)

    outcomes, interrupted = run_jobs(list(todo.values()), jobs, ended)
    cache.ran += sum(o.ok for o in outcomes)
    if interrupted:
        raise KeyboardInterrupt
    for o in outcomes:
        if not o.ok:
            raise LasthopError(f"run {o.job.out} failed: {o.message}")
    return [Done(p, lasthop.RunResult.load(d)) for p, d in zip(plan, dirs)]
