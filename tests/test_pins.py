"""Behaviour pins: every example (base and variants) and every quick experiment produce exactly the
event digest, summary bytes and rows recorded in ``tests/pins.json``. A refactor must leave them alone;
an intended change of behaviour updates them with ``python tests/pins.py --update`` in its own commit,
which says why."""

from __future__ import annotations

import json

import pytest
from pins import PINS, example_cases, example_pin, experiment_pin

from lasthop.experiments import EXPERIMENTS

PINNED: dict[str, dict[str, str]] = json.loads(PINS.read_text())


def test_every_example_and_experiment_is_pinned() -> None:
    keys = {k for k, _, _ in example_cases()} | {f"experiment:{n}" for n in EXPERIMENTS}
    assert keys == set(PINNED), "run `python tests/pins.py --update` and say why in the commit"


@pytest.mark.parametrize("key,path,variant", example_cases(), ids=[c[0] for c in example_cases()])
def test_example_is_unchanged(key: str, path, variant) -> None:  # type: ignore[no-untyped-def]
    assert example_pin(path, variant) == PINNED[key]


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_experiment_is_unchanged(name: str) -> None:
    assert experiment_pin(name) == PINNED[f"experiment:{name}"]
