"""`lasthop reproduce transport-sanity`: each congestion controller alone on a 20 Mbit/s, 40 ms bottleneck."""

from __future__ import annotations

import json

import lasthop
from lasthop.experiments import run_experiment
from lasthop.experiments.transport import scenario


def test_transport_sanity_meets_the_issue_targets() -> None:
    doc = run_experiment("transport-sanity", seed=1, quick=True)
    rows = {(r["variant"], r["buffer_bdp"]): r for r in doc["rows"]}
    assert set(rows) == {(v, b) for v in ("gcc", "bbr", "cubic", "copa") for b in (1, 10)}
    print(json.dumps(doc["rows"], indent=1))
    for b in (1, 10):
        assert rows[("cubic", b)]["utilization"] >= 0.95
        assert rows[("bbr", b)]["utilization"] >= 0.90
        assert rows[("copa", b)]["utilization"] >= 0.80
        assert rows[("gcc", b)]["queue_delay_p95_ms"] < 50
    # Cubic fills the 10-BDP buffer (400 ms at 20 Mbit/s); BBR keeps its standing queue under one RTT.
    assert rows[("cubic", 10)]["queue_delay_p95_ms"] > 300
    assert rows[("bbr", 10)]["queue_delay_p95_ms"] < 40
    assert rows[("copa", 10)]["queue_delay_p95_ms"] < 20


def test_rtc_metrics_are_in_the_flow_table() -> None:
    res = lasthop.run(lasthop.Scenario.from_dict(scenario("gcc", 1, 6.0, 1.0)), seed=1)
    f = res.flows.set_index("flow").loc["gcc"]
    for col in ("frame_latency_p50_ms", "frame_latency_p99_ms", "frame_deadline_miss_rate", "freezes",
                "fps_under_10_ratio", "bitrate_mbps", "rtt_p99_ms", "rtt_over_200ms_ratio", "loss_runs5_per_s"):
        assert f[col] == f[col], col  # not NaN
    assert 0 < f["bitrate_mbps"] < 20
    assert res.summary["metrics"]["flows"]["gcc"]["frames_decoded"] > 100


def test_jain_index_of_flow_throughputs() -> None:
    from lasthop.result import _aggregate

    base = {k: 0 for k in ("sent_packets", "delivered_packets", "dropped_packets", "in_flight_packets",
                           "sent_bytes", "delivered_bytes")}
    assert _aggregate([{**base, "throughput_mbps": 10.0}, {**base, "throughput_mbps": 10.0}])["jain_throughput"] == 1.0
    assert _aggregate([{**base, "throughput_mbps": 10.0}, {**base, "throughput_mbps": 0.0}])["jain_throughput"] == 0.5
    assert _aggregate([{**base, "throughput_mbps": 0.0}])["jain_throughput"] is None


def test_rtt_and_frame_series_are_saved_and_loaded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = lasthop.run(lasthop.Scenario.from_dict(scenario("gcc", 1, 4.0, 1.0)), seed=1)
    rtt, frames = res.rtt, res.frames
    assert len(rtt) > 1000 and (rtt["rtt_ms"] >= 40.0).all()
    # 4 s at 30 fps: every frame captured so far, in order, none later than it was decoded.
    assert 110 <= len(frames) <= 120
    assert (frames["delay_ms"] > 0).all() and frames["frame"].is_monotonic_increasing
    res.save(tmp_path / "run")
    back = lasthop.RunResult.load(tmp_path / "run")
    assert back.rtt.equals(rtt) and back.frames.equals(frames)
