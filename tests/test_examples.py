"""Every shipped example scenario is valid and runs (shortened) without error."""

from __future__ import annotations

from pathlib import Path

import pytest

import lasthop

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path: Path) -> None:
    sc = lasthop.Scenario.load(path)
    short = sc.replace(duration_s=min(sc.duration_s, 3.0), warmup_s=0.0)
    res = lasthop.run(short, seed=1)
    assert len(res.flows) == len(sc.to_dict()["flows"])
    assert res.flows["delivered_packets"].sum() > 0
