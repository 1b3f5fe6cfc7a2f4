"""Bad input through the Python API ends in a ``LasthopError`` naming the problem, never another
exception (issue 13). Every example is mutated at random — numbers made extreme, values of the wrong
type, keys deleted, lists emptied — and each result must be refused by ``Scenario.from_dict`` or run,
save and load. The Rust core has its own, much longer fuzz target (``crates/lasthop-core/tests/fuzz``)."""

from __future__ import annotations

import copy
import os
import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

import lasthop
from lasthop.errors import LasthopError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))
CASES = int(os.environ.get("LASTHOP_FUZZ_CASES", "150"))
VALUES: list[Any] = [0, -1, 0.5, 1e300, -1e300, 1e-300, 1e12, 2**64, float("nan"), float("inf"), "", "x",
                     "fifo", True, [], {}, None]


def _places(v: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at] if at else []
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, c in items:
        out += _places(c, (*at, k))
    return out


def _mutate(doc: dict[str, Any], rng: random.Random) -> str:
    places = _places(doc)
    numbers = [p for p in places if isinstance(_at(doc, p), (int, float)) and not isinstance(_at(doc, p), bool)]
    if numbers and rng.random() < 0.6:
        # Scale a number: keeps the document's shape, so more cases validate and run.
        place, factor = rng.choice(numbers), rng.choice([0, -1, 0.001, 0.5, 2, 10, 1000])
        parent = _at(doc, place[:-1])
        parent[place[-1]] = type(parent[place[-1]])(parent[place[-1]] * factor)
        return f"{place} *= {factor}"
    place = rng.choice(places)
    parent = _at(doc, place[:-1])
    what = rng.random()
    if what < 0.2:
        del parent[place[-1]]
        return f"delete {place}"
    value = [] if what < 0.3 else rng.choice(VALUES)
    parent[place[-1]] = value
    return f"{place} = {value!r}"


def _at(doc: Any, place: tuple[Any, ...]) -> Any:
    for k in place:
        doc = doc[k]
    return doc


def _documents() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in EXAMPLES:
        doc = tomllib.loads(path.read_text())
        doc.pop("variants", None)
        out.append((path.stem, doc))
    return out


@pytest.mark.parametrize("case", range(CASES))
def test_mutated_example_is_refused_or_runs(case: int, tmp_path: Path) -> None:
    rng = random.Random(case)
    name, base = rng.choice(_documents())
    doc = copy.deepcopy(base)
    what = [_mutate(doc, rng) for _ in range(rng.randint(1, 3))]
    try:
        sc = lasthop.Scenario.from_dict(doc, base_dir=ROOT / "examples")
    except LasthopError:
        return
    d = sc.to_dict()
    last_start = max((f.get("start_s", 0.0) for f in d["flows"]), default=0.0)
    # Half a second after the last flow starts, the warm-up shortened to fit: a 10-s warm-up had run
    # a case whose flow was made 1000 times faster (50 Gbit/s, 9 M packets) for 20 s of the suite.
    duration = min(d["duration_s"], last_start + 0.5)
    short = sc.replace(duration_s=duration, warmup_s=min(d.get("warmup_s", 0.0), duration / 2))
    res = lasthop.run(short)
    res.save(tmp_path / "run")
    again = lasthop.RunResult.load(tmp_path / "run")
    assert list(again.flows.columns) == list(res.flows.columns), (name, what)
