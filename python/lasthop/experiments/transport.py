"""Transport sanity (issue 5): each congestion controller alone on a wired bottleneck.

    server ──(1 Gbit/s, 19 ms)──▶ ap ──(20 Mbit/s, 1 ms, tail-drop FIFO of B packets)──▶ sta

Base RTT 40 ms; one BDP is 100 kB = 66.7 packets of 1500 B, so B ∈ {67, 667} for 1 and 10 BDP. The
return path (ACKs, RTCP) has the same rate and no other traffic.

Metrics per (variant, buffer):

* ``utilization`` — delivered IP bytes / (capacity × window), the window after warm-up;
* ``queue_delay_p95_ms`` — p95 over the flow's delivered packets of one-way latency minus the flow's
  minimum one-way latency (which is propagation plus serialization);
* ``convergence_s`` — end of the first 1-s bin (from flow start) whose delivered rate reaches 70 % of
  capacity; null when none does.

Expected (issue 5): GCC 70–95 % within 10 s with p95 queueing < 50 ms; BBR ≥ 90 % with a standing
queue < 1 RTT in the deep buffer; Cubic ≥ 95 % and fills the deep buffer; Copa ≥ 80 % with low delay.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import lasthop
from lasthop.experiments import topology
from lasthop.experiments.plan import Done, Experiment, Options, PlannedRun
from lasthop.experiments.topology import Json
from lasthop.stats import percentile

CAPACITY_MBPS = 20.0
BASE_RTT_MS = 40.0
BDP_PACKETS = CAPACITY_MBPS * 1e6 * BASE_RTT_MS * 1e-3 / 8 / 1500

VARIANTS: dict[str, dict[str, Any]] = {
    "gcc": {"type": "rtc"},
    "bbr": {"type": "tcp", "tcp": {"cc": {"type": "bbr"}}},
    "cubic": {"type": "tcp", "tcp": {"cc": {"type": "cubic"}}},
    "copa": {"type": "tcp", "tcp": {"cc": {"type": "copa"}}},
}


def scenario(variant: str, buffer_bdp: float, duration_s: float, warmup_s: float) -> Json:
    """The bottleneck scenario for one (variant, buffer) point."""
    packets = max(1, round(BDP_PACKETS * buffer_bdp))
    bottleneck = {"type": "wired", "rate_mbps": CAPACITY_MBPS, "delay_ms": 1.0,
                  "queue": {"type": "fifo", "packets": packets}}
    return topology.single_ap(
        f"transport-sanity-{variant}-{buffer_bdp:g}bdp", duration_s=duration_s, warmup_s=warmup_s,
        server="server", last_hop=bottleneck, stations=[topology.station("sta")],
        flows=[topology.flow(variant, None, "server", "sta", **VARIANTS[variant])],
        link_delay_ms=BASE_RTT_MS / 2 - 1.0)


def _convergence_s(fwd: Any, start_ns: int, capacity_mbps: float) -> float | None:
    t = (fwd["t_delivered_ns"].to_numpy(dtype=np.int64) - start_ns) // 1_000_000_000
    bins = np.bincount(t[t >= 0], weights=fwd["size_bytes"].to_numpy()[t >= 0] * 8 / 1e6)
    hit = np.nonzero(bins >= 0.7 * capacity_mbps)[0]
    return float(hit[0] + 1) if len(hit) else None


def measure(res: lasthop.RunResult, flow: str, warmup_s: float) -> dict[str, Any]:
    """Utilization, p95 queueing delay and convergence of one run's flow."""
    f = res.flows.set_index("flow").loc[flow]
    p = res.packets
    fwd = p[(p["flow"] == flow) & ~p["reverse"] & p["t_delivered_ns"].notna()]
    lat = fwd["latency_ms"].to_numpy()
    measured = fwd["t_sent_ns"].to_numpy(dtype=np.int64) >= warmup_s * 1e9
    qd = lat[measured] - lat.min()
    return {
        "utilization": float(f["throughput_mbps"]) / CAPACITY_MBPS,
        "queue_delay_p95_ms": percentile(qd, 95),
        "convergence_s": _convergence_s(fwd, 0, CAPACITY_MBPS),
    }


def plan(opts: Options) -> list[PlannedRun]:
    """Every congestion controller alone on a 20 Mbit/s, 40 ms bottleneck with a 1- and a 10-BDP buffer."""
    duration, warmup = (12.0, 2.0) if opts.quick else (30.0, 5.0)
    return [PlannedRun(variant, scenario(variant, bdp, duration, warmup), opts.seed, {"buffer_bdp": bdp})
            for variant in VARIANTS for bdp in (1, 10)]


def reduce(done: list[Done]) -> dict[str, Any]:
    rows = [{"variant": d.planned.variant, "buffer_bdp": d.planned.point["buffer_bdp"],
             **measure(d.result, d.planned.variant, d.scenario["warmup_s"])} for d in done]
    return {
        "rows": rows,
        "expected": {
            "gcc": "utilization 0.70-0.95, convergence_s <= 10, queue_delay_p95_ms < 50",
            "bbr": "utilization >= 0.90, queue_delay_p95_ms < 40 at 10 BDP",
            "cubic": "utilization >= 0.95, fills the 10-BDP buffer (queue_delay_p95_ms near 400)",
            "copa": "utilization >= 0.80, low queue_delay_p95_ms",
        },
    }


EXPERIMENTS = [Experiment("transport-sanity", plan, reduce)]
