"""An experiment as data: a plan of runs, executed, then reduced to rows.

    plan = exp.plan(Options(seed=1, quick=True, workdir=tmp))   # list[PlannedRun]
    doc = exp.reduce(execute(plan))                            # {"rows": [...], ...}

A plan holds everything a run needs (its scenario dict and seed), so the runs are independent of one
another and of the order they run in: :func:`execute` runs them one after another, and a sweep may run
them in parallel. The reduce step sees each planned run beside its result and nothing else.
"""

from __future__ import annotations

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


def execute(plan: Sequence[PlannedRun]) -> list[Done]:
    """Runs every planned run, one after another, in plan order."""
    return [Done(p, lasthop.run(lasthop.Scenario.from_dict(p.scenario), seed=p.seed)) for p in plan]
