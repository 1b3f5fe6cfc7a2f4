"""Reproducible experiments: each builds its scenarios as data, runs every variant, and returns
``{"experiment": NAME, "rows": [{"variant": ..., <metric>: ...}, ...]}`` (plus ``"paper"`` where a
seed paper gives numbers to compare against).

An experiment module defines ``NAME``, ``DESCRIPTION`` and ``run(seed: int, quick: bool) -> dict``;
``quick`` shortens the runs for tests.
"""

from __future__ import annotations

import inspect
import os
from types import ModuleType
from typing import Any

from lasthop.experiments import law, linux_path, transport, zhuge

EXPERIMENTS: dict[str, Any] = {}


def _register(module: ModuleType) -> None:
    for name, fn in module.EXPERIMENTS.items():
        EXPERIMENTS[name] = fn


_register(linux_path)
_register(transport)
_register(zhuge)
_register(law)


def takes_trace(name: str) -> bool:
    """Whether experiment ``name`` is trace-driven (accepts ``trace=PATH``)."""
    return "trace" in inspect.signature(EXPERIMENTS[name]).parameters


def run_experiment(name: str, seed: int = 1, quick: bool = False,
                   trace: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Runs experiment ``name``; raises ``KeyError`` for an unknown name. ``trace`` replaces a
    trace-driven experiment's default trace families with one file."""
    fn = EXPERIMENTS[name]
    extra = {"trace": trace} if trace is not None else {}
    doc: dict[str, Any] = fn(seed=seed, quick=quick, **extra)
    doc["experiment"] = name
    return doc
