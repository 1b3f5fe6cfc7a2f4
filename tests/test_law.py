"""Law's experiments (`lasthop reproduce law-*`): short runs, checking the rows' shape and sanity, and the
testbed scenario the experiments and `examples/law_testbed.toml` share."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from support import EXAMPLES

import lasthop
from lasthop.experiments import EXPERIMENTS, law, run_experiment

PACKET_METRICS = {"latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "loss_rate", "deadline_miss_rate",
                  "loss_runs5_per_s", "throughput_mbps"}


def _doc(name: str) -> dict[str, Any]:
    doc = run_experiment(name, seed=1, quick=True)
    assert doc["experiment"] == name
    assert isinstance(doc["paper"], dict) and doc["paper"]["source"]
    return doc


def _sane_packet_row(r: dict[str, Any], offered_mbps: float = 10.0) -> None:
    assert PACKET_METRICS <= set(r), r
    assert 0 < r["latency_p50_ms"] <= r["latency_p99_ms"] <= r["latency_p999_ms"], r
    assert r["latency_p50_ms"] > law.WIRED_DELAY_MS, "one-way latency includes the wired hop"
    for k in ("loss_rate", "deadline_miss_rate"):
        assert 0.0 <= r[k] <= 1.0, r
    assert r["loss_runs5_per_s"] >= 0.0
    assert 0.8 * offered_mbps < r["throughput_mbps"] <= 1.01 * offered_mbps, r


def test_example_is_the_testbeds_law_variant() -> None:
    example = lasthop.Scenario.load(EXAMPLES / "law_testbed.toml")
    assert example == lasthop.Scenario.from_dict(law.testbed("law"))


def test_law_refuses_a_station_with_fewer_streams_than_the_bss() -> None:
    """Law's controller chooses every station's downlink rates among the BSS's streams, so a station's
    own `max_nss` below the BSS's is a scenario error at its path (not a rate it cannot receive)."""
    sc = law.testbed("law")
    sc["aps"][0]["last_hop"]["max_nss"] = 2
    sc["stations"][0]["max_nss"] = 1
    with pytest.raises(lasthop.ScenarioError) as e:
        lasthop.Scenario.from_dict(sc)
    assert "stations[0].max_nss: the AP runs mechanism `law`" in str(e.value), str(e.value)
    sc["stations"][0]["max_nss"] = 2
    lasthop.Scenario.from_dict(sc)


def test_testbed_variants_differ_only_at_the_ap() -> None:
    law_sc = law.testbed("law")
    for v in ("minstrel_ht", "llra", "thompson"):
        sc = law.testbed(v)
        ap = sc["aps"][0]["last_hop"]
        assert "mechanism" not in ap and ap["ap_path"] == {"type": "linux"}
        assert ap["rate_control"] == law.BASELINE_RATE_CONTROL[v]
        assert {k: x for k, x in sc.items() if k not in ("aps", "name")} == \
            {k: x for k, x in law_sc.items() if k not in ("aps", "name")}
        lasthop.Scenario.from_dict(sc)  # valid
    with pytest.raises(ValueError):
        law.testbed("zhuge")


def test_loss_runs_count_each_run_of_five_or_more_once() -> None:
    lost = np.array([1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1], dtype=bool)
    assert law.loss_runs(lost) == 2
    assert law.loss_runs(lost, at_least=4) == 3
    assert law.loss_runs(np.zeros(10, dtype=bool)) == 0


def test_law_packet_rows() -> None:
    doc = _doc("law-packet")
    rows = {r["variant"]: r for r in doc["rows"]}
    assert list(rows) == list(law.VARIANTS)
    for r in rows.values():
        _sane_packet_row(r)
    # Law's bound: Limit_q + 2·Limit_h + the wired hop, plus at most one started attempt per hardware
    # stint (an A-MPDU of ≤ Limit_h airtime and its BlockAck).
    assert doc["deadline_ms"] == 47.0
    assert rows["law"]["latency_p999_ms"] <= doc["deadline_ms"] + 2 * 3.2
    reduction = doc["law_reduction"]["latency_p999_ms"]
    assert set(reduction) == {"minstrel_ht", "llra", "thompson"}
    assert all(math.isfinite(x) for x in reduction.values())


def test_law_limits_rows() -> None:
    doc = _doc("law-limits")
    rows = doc["rows"]
    assert [r["limit_q_ms"] for r in rows] == [40.0, 54.0]
    assert [r["deadline_ms"] for r in rows] == [47.0, 61.0]
    for r in rows:
        _sane_packet_row(r)
        assert r["latency_p999_ms"] <= r["deadline_ms"] + 2 * 3.2


def test_law_competing_rows() -> None:
    doc = _doc("law-competing")
    rows = {r["variant"]: r for r in doc["rows"]}
    assert list(rows) == list(law.VARIANTS)
    for r in rows.values():
        _sane_packet_row(r)
        assert r["competing_latency_p999_ms"] > 0 and 0.0 <= r["competing_loss_rate"] <= 1.0


def test_law_bbr_rows() -> None:
    doc = _doc("law-bbr")
    rows = {r["variant"]: r for r in doc["rows"]}
    assert list(rows) == list(law.VARIANTS)
    for r in rows.values():
        # HT20 one stream tops out at 65 Mbit/s of PHY rate.
        assert 1.0 < r["throughput_mbps"] < 65.0, r
        assert 0 < r["latency_p50_ms"] <= r["latency_p99_ms"], r
    assert set(doc["law_minus_mbps"]) == {"minstrel_ht", "llra", "thompson"}


def test_frame_experiment_has_every_variant() -> None:
    doc = run_experiment("law-frame", seed=1, quick=True)
    rows = {r["variant"]: r for r in doc["rows"]}
    assert set(rows) == {"law", "minstrel_ht", "llra", "thompson"}
    for r in rows.values():
        assert r["frame_latency_p50_ms"] > 5.0 and 0.0 <= r["frame_deadline_miss_rate"] <= 1.0
        assert r["bitrate_mbps"] > 1.0
    # The paper's direction (Law §4.3): the frame tail far below every baseline's.
    for v in ("minstrel_ht", "llra", "thompson"):
        assert rows["law"]["frame_latency_p99_ms"] < 0.6 * rows[v]["frame_latency_p99_ms"], (v, rows)
    assert doc["paper"]["law_p99_frame_latency_reduction"] == [0.506, 0.703]

def test_run_time_limits_keep_the_scenarios_bounds() -> None:
    """``aps.<ap>.law`` takes limit_q_ms / limit_h_ms in the scenario's 0.001..=10000 ms: above it was
    accepted, 1e300 silently kept the old limit and a tiny one became a 0-ns limit (a reviewer found)."""
    sim = lasthop.Sim(lasthop.Scenario.load(EXAMPLES / "home_rtc.toml", variant="law"))
    for value, shown in ((20000, "20000"), (1e300, "1e300"), (1e-9, "1e-9"), (0, "0")):
        with pytest.raises(ValueError, match=rf"set\.limit_q_ms: must be a number of milliseconds in 0\.001\.\.=10000, got {shown}"):
            sim.command("aps.ap.law", limit_q_ms=value)
    sim.command("aps.ap.law", limit_q_ms=50, limit_h_ms=12)
    sim.finish()
