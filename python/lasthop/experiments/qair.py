"""QAir (seed 001; spec qair-lastpq.md §7–8): the dense co-channel testbed, QAir on every node against
plain EDCA (the paper's "802.11 DCF").

Ten AP–station pairs share one 5 GHz channel (802.11n HT20, 2 streams, fixed MCS 13, every node in one
collision domain, the ath9k-style Linux path at every node, stations included). Links 1..n carry
background from the server to the station — saturating UDP (100 Mbit/s each, ``qair-udp``) or
persistent Cubic TCP (``qair-tcp``) — and link 10 carries a ping (every 100 ms). Each n runs with QAir
on every node and with it off; the metric is the ping's mean RTT and the background's aggregate rate.
"""

from __future__ import annotations

from typing import Any

from lasthop.experiments import topology
from lasthop.experiments.plan import Done, Experiment, Options, PlannedRun
from lasthop.experiments.topology import Json

PAIRS = 10
VARIANTS = ("dcf", "qair")
PAPER: dict[str, Any] = {
    "udp": {
        "source": "QAir §VI-B, Fig. 8: n × iperf UDP at 100 Mbit/s, ping on another link",
        "Q1_mean_rtt_reduction_n_le_4": [0.50, 0.75],
        "Q2_aggregate_throughput": "similar (within ±10 %)",
        "Q5": "the RTT reduction grows with n",
    },
    "tcp": {
        "source": "QAir §VI-B, Fig. 9: n × persistent TCP (Cubic), ping on another link",
        "Q3_mean_rtt_reduction_n_le_5": [0.50, 0.60],
        "Q4_aggregate_throughput_loss_at_most": 0.15,
        "Q5": "the RTT reduction grows with n",
        "Q6_dcf_mean_rtt_ms_n_9": 35.0,
    },
}


def _last_hop() -> Json:
    return topology.wifi(width_mhz=20, max_nss=2, rate_control={"type": "fixed", "mcs": 13},
                         sta_path={"type": "linux"})


def _background(kind: str, i: int) -> Json:
    if kind == "udp":
        return topology.udp_cbr(f"bg{i}", "server", f"sta{i}", 100.0, 1500)
    return topology.flow(f"bg{i}", "tcp", "server", f"sta{i}", tcp={"cc": {"type": "cubic"}})


def _plan(kind: str, opts: Options) -> list[PlannedRun]:
    ns = (2, 4) if opts.quick else tuple(range(1, 10))
    duration, warmup = (6.0, 2.0) if opts.quick else (65.0, 5.0)
    runs = []
    for n in ns:
        flows = [_background(kind, i) for i in range(1, n + 1)]
        flows.append(topology.flow("ping", "ping", "server", f"sta{PAIRS}", interval_ms=100.0))
        for variant in VARIANTS:
            mech = [{"type": "qair"}] if variant == "qair" else None
            sc = topology.co_channel_pairs(f"qair-{kind}-{variant}-n{n}", pairs=PAIRS, duration_s=duration,
                                           warmup_s=warmup, last_hop=_last_hop(), flows=flows, node_mechanisms=mech)
            runs.append(PlannedRun(variant, sc, opts.seed, {"n": n}))
    return runs


def _reduce(kind: str, done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in done:
        f = {r["flow"]: r for r in d.result.flows.to_dict("records")}
        bg = [r for name, r in f.items() if name.startswith("bg")]
        rate = "goodput_mbps" if kind == "tcp" else "throughput_mbps"
        rows.append({"n": d.planned.point["n"], "variant": d.planned.variant,
                     "ping_rtt_mean_ms": f["ping"]["latency_mean_ms"], "ping_rtt_p99_ms": f["ping"]["latency_p99_ms"],
                     "background_mbps": sum(r[rate] or 0.0 for r in bg)})
    by = {(r["n"], r["variant"]): r for r in rows}
    gains = []
    for n in sorted({r["n"] for r in rows}):
        dcf, qair = by[(n, "dcf")], by[(n, "qair")]
        gains.append({"n": n,
                      "rtt_reduction": 1 - qair["ping_rtt_mean_ms"] / dcf["ping_rtt_mean_ms"],
                      "throughput_change": qair["background_mbps"] / dcf["background_mbps"] - 1})
    return {"rows": rows, "qair_vs_dcf": gains, "paper": PAPER[kind]}


def plan_udp(opts: Options) -> list[PlannedRun]:
    return _plan("udp", opts)


def reduce_udp(done: list[Done]) -> dict[str, Any]:
    return _reduce("udp", done)


def plan_tcp(opts: Options) -> list[PlannedRun]:
    return _plan("tcp", opts)


def reduce_tcp(done: list[Done]) -> dict[str, Any]:
    return _reduce("tcp", done)


EXPERIMENTS = [
    Experiment("qair-udp", plan_udp, reduce_udp),
    Experiment("qair-tcp", plan_tcp, reduce_tcp),
]
