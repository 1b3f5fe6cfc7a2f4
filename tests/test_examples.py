"""Every shipped example scenario is valid and runs (shortened) without error."""

from __future__ import annotations

from pathlib import Path

import pytest

import lasthop

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path: Path) -> None:
    sc = lasthop.Scenario.load(path)
    # 3 s, or just past the last flow's start (a flow that starts after the run ends is an error).
    last_start = max(f.get("start_s", 0.0) for f in sc.to_dict()["flows"])
    short = sc.replace(duration_s=min(sc.duration_s, max(3.0, last_start + 1.0)), warmup_s=0.0)
    res = lasthop.run(short, seed=1)
    assert len(res.flows) == len(sc.to_dict()["flows"])
    assert res.flows["delivered_packets"].sum() > 0


def test_component_stats_as_dataframes() -> None:
    sc = lasthop.Scenario.load(Path(__file__).parent.parent / "examples" / "wifi_home.toml")
    res = lasthop.run(sc.replace(duration_s=2.0, warmup_s=0.0), seed=1)
    st = res.stats
    assert {"links", "wifi_links", "wifi_nodes"} <= set(st)
    wl = st["wifi_links"]
    assert list(wl["link"]) == ["ap->laptop", "laptop->ap", "ap->phone", "phone->ap"]
    assert (wl["stats.airtime_ns"] >= 0).all() and wl["stats.ppdus"].sum() > 0
    assert "mac.collisions" in st["wifi_nodes"].columns
