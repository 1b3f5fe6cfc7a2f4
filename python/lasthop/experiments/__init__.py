"""Reproducible experiments: each builds its scenarios as data, runs every variant, and returns
``{"experiment": NAME, "rows": [{"variant": ..., <metric>: ...}, ...]}`` (plus ``"paper"`` where a
seed paper gives numbers to compare against).

An experiment module defines ``NAME``, ``DESCRIPTION`` and ``run(seed: int, quick: bool) -> dict``;
``quick`` shortens the runs for tests.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from lasthop.experiments import law, linux_path

EXPERIMENTS: dict[str, Any] = {}


def _register(module: ModuleType) -> None:
    for name, fn in module.EXPERIMENTS.items():
        EXPERIMENTS[name] = fn


_register(linux_path)
_register(law)


def run_experiment(name: str, seed: int = 1, quick: bool = False) -> dict[str, Any]:
    """Runs experiment ``name``; raises ``KeyError`` for an unknown name."""
    fn = EXPERIMENTS[name]
    doc: dict[str, Any] = fn(seed=seed, quick=quick)
    doc["experiment"] = name
    return doc
