"""Reproducible experiments: each builds its scenarios as data, runs every variant, and returns
``{"experiment": NAME, "rows": [{"variant": ..., <metric>: ...}, ...]}`` (plus ``"paper"`` where a
seed paper gives numbers to compare against).

An experiment is a plan of runs and a reduce step (:mod:`lasthop.experiments.plan`)::

    exp = EXPERIMENTS["law-packet"]
    plan = exp.plan(Options(seed=1, quick=True, workdir=tmp))  # [PlannedRun(variant, scenario, seed), ...]
    doc = exp.reduce(execute(plan))                           # run serially, then rows

:func:`run_experiment` does both. ``quick`` shortens the runs for tests. Scenarios come from
:mod:`lasthop.experiments.topology`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from lasthop.experiments import combined, lastpq, law, linux_path, qair, transport, zhuge
from lasthop.experiments.plan import Cache, Done, Experiment, OnPlan, OnRun, Options, PlannedRun, execute

__all__ = ["EXPERIMENTS", "Experiment", "Options", "PlannedRun", "Done", "execute", "plan_experiment",
           "quick_scope", "run_experiment", "takes_trace"]

EXPERIMENTS: dict[str, Experiment] = {
    e.name: e for module in (linux_path, transport, zhuge, law, qair, lastpq, combined) for e in module.EXPERIMENTS
}


def takes_trace(name: str) -> bool:
    """Whether experiment ``name`` is trace-driven (accepts ``trace=PATH``)."""
    return EXPERIMENTS[name].takes_trace


def plan_experiment(name: str, options: Options) -> list[PlannedRun]:
    """The runs of experiment ``name``; raises ``KeyError`` for an unknown name and ``ValueError`` for a
    trace given to an experiment that is not trace-driven."""
    exp = EXPERIMENTS[name]
    if options.trace is not None and not exp.takes_trace:
        raise ValueError(f"experiment {name!r} is not trace-driven")
    return exp.plan(options)


def quick_scope(name: str, seed: int = 1, trace: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What ``--quick`` keeps of experiment ``name``, so a user sees what a quick run left out: ``cases``,
    the cases (its runs' points, each as ``"key=value, ..."``) the quick variant runs; ``full_cases``,
    how many the full experiment has; ``seconds`` and ``full_seconds``, the longest run of each. Both
    plans are built, not run."""
    def plan(quick: bool) -> tuple[list[str], float]:
        with tempfile.TemporaryDirectory(prefix="lasthop-plan-") as tmp:
            opts = Options(seed=seed, quick=quick, workdir=Path(tmp), trace=Path(trace) if trace is not None else None)
            runs = plan_experiment(name, opts)
        cases = dict.fromkeys(", ".join(f"{k}={v}" for k, v in run.point.items()) for run in runs)
        return list(cases), max((float(run.scenario.get("duration_s", 0.0)) for run in runs), default=0.0)

    (cases, seconds), (full, full_seconds) = plan(True), plan(False)
    return {"cases": cases, "full_cases": len(full), "seconds": seconds, "full_seconds": full_seconds}


def run_experiment(name: str, seed: int = 1, quick: bool = False,
                   trace: str | os.PathLike[str] | None = None, jobs: int = 1,
                   cache: str | os.PathLike[str] | None = None, on_run: OnRun | None = None,
                   on_plan: OnPlan | None = None) -> dict[str, Any]:
    """Runs experiment ``name`` (its plan, in ``jobs`` worker processes or serially, then its reduce
    step); raises ``KeyError`` for an unknown name. ``trace`` replaces a trace-driven experiment's
    default trace families with one file. With ``cache`` (a directory), the experiment is a sweep over
    its plan: each run is kept in ``cache/runs/<key>`` (generated inputs in ``cache/inputs``) and a run
    complete there is read back, not run again; ``doc["runs"]`` says how many ran and were reused.
    ``on_plan(to_run, complete)`` and ``on_run(label, status, seconds)`` follow the progress."""
    if cache is not None:
        store = Cache(Path(cache))
        inputs = store.root / "inputs"
        inputs.mkdir(parents=True, exist_ok=True)
        opts = Options(seed=seed, quick=quick, workdir=inputs.resolve(), trace=Path(trace) if trace is not None else None)
        doc = EXPERIMENTS[name].reduce(execute(plan_experiment(name, opts), jobs, cache=store, on_run=on_run,
                                               on_plan=on_plan))
        doc["runs"] = {"ran": store.ran, "reused": store.reused}
        return _labelled(doc, name, seed, quick)
    with tempfile.TemporaryDirectory(prefix="lasthop-experiment-") as tmp:
        opts = Options(seed=seed, quick=quick, workdir=Path(tmp), trace=Path(trace) if trace is not None else None)
        doc = EXPERIMENTS[name].reduce(execute(plan_experiment(name, opts), jobs, Path(tmp), on_run=on_run,
                                               on_plan=on_plan))
    return _labelled(doc, name, seed, quick)


def _labelled(doc: dict[str, Any], name: str, seed: int, quick: bool) -> dict[str, Any]:
    """What produced ``doc``: the experiment, its (first) seed, whether it was the ``--quick`` variant."""
    doc.update(experiment=name, seed=seed, quick=quick)
    return doc
