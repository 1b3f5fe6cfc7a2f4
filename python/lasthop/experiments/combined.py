"""Mechanisms combined on one AP, side by side with each alone and with neither (issue: combinations).

* ``lastpq-qair`` (spec qair-lastpq.md §17.6): LAST-PQ's VR home (the phone at S6 with two TCP
  downloads, two more clients) next to two co-channel neighbour BSSs that download TCP; QAir on every
  node of the three BSSs, LAST-PQ at the home AP, both, or neither. With both, LAST-PQ's draining
  estimate adds QAir's expected hold of a new PSDU, and its priority path forms the first PSDU the gate
  lets through (QAir's release point is PSDU formation). Metrics: the VR flow's p95 per-packet latency
  and rate, the home's and the neighbours' TCP goodput.
* ``law-zhuge``: the default comparison's home (examples/home_rtc.toml: a video call beside a TCP
  download on Minstrel-HT Linux Wi-Fi) with Law, Zhuge, both, or neither. Metrics: the call's frame
  latency, deadline misses, freezes and bitrate; its feedback loop (RTT and, under Zhuge, TWCC messages
  rewritten and ACKs held); the download's goodput.

Each combination runs over several seeds (``--quick``: one, short); the rows are per variant and seed,
``summary`` holds per variant the mean and 95 % confidence interval of every metric.
"""

from __future__ import annotations

from typing import Any

import lasthop
from lasthop.experiments import lastpq as lpq
from lasthop.experiments import topology
from lasthop.experiments.plan import Done, Experiment, Options, PlannedRun
from lasthop.experiments.topology import Json
from lasthop.stats import percentile
from lasthop.verdict import mean_ci95

NEIGHBOURS = 2


def _seeds(opts: Options) -> list[int]:
    return [opts.seed] if opts.quick else [opts.seed + i for i in range(3)]


def summarize(rows: list[dict[str, Any]], metrics: list[str]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Per variant and metric: mean and the half-width of its 95 % confidence interval over the rows
    (seeds; Student's t; ``None`` with one row or without values)."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for v in dict.fromkeys(r["variant"] for r in rows):
        out[v] = {}
        for m in metrics:
            xs = [float(r[m]) for r in rows if r["variant"] == v and r[m] is not None]
            mean, ci = mean_ci95(xs) if xs else (None, None)
            out[v][m] = {"mean": mean, "ci95": ci}
    return out


def _document(rows: list[dict[str, Any]], metrics: list[str], paper: dict[str, str]) -> dict[str, Any]:
    """A combination's document: its rows, the per-variant summary, a chart per metric, and what is expected."""
    return {"rows": rows, "summary": summarize(rows, metrics), "figures": [{"metric": m} for m in metrics], "paper": paper}


# ---- LAST-PQ + QAir ------------------------------------------------------------------------------

LASTPQ_QAIR_VARIANTS = ("linux", "lastpq", "qair", "qair_lastpq")
LASTPQ_QAIR_METRICS = ["vr_p95_ms", "vr_mbps", "vr_fps", "home_tcp_mbps", "neighbour_tcp_mbps"]


def _dense_home(name: str, variant: str, duration_s: float, warmup_s: float) -> Json:
    sc = lpq.home(name, phone_snr_db=lpq.SNR_DB["S6"], k=2, f=2, duration_s=duration_s, warmup_s=warmup_s,
                  mechanism=None)
    home = sc["aps"][0]
    if "lastpq" in variant:
        home["mechanisms"] = [lpq.lastpq()]
    qair = [{"type": "qair"}] if "qair" in variant else None
    for i in range(1, NEIGHBOURS + 1):
        ap = {"name": f"n{i}", "last_hop": dict(home["last_hop"])}
        sc["aps"].append(ap)
        sc["stations"].append({**topology.station(f"ns{i}", topology.fixed_snr(30.0)), "ap": f"n{i}"})
        sc["links"].append({"a": "server", "b": f"n{i}", "rate_mbps": topology.WIRED_RATE_MBPS, "delay_ms": 0.5})
        sc["flows"].append(topology.flow(f"nb{i}", "tcp", "server", f"ns{i}"))
    for st in sc["stations"]:
        st.setdefault("ap", "ap")
    if qair:
        for ap in sc["aps"]:
            ap["node_mechanisms"] = qair
    return sc


def _plan_lastpq_qair(opts: Options) -> list[PlannedRun]:
    duration, warmup = (6.0, 2.0) if opts.quick else (22.0, 2.0)
    return [PlannedRun(v, _dense_home(f"lastpq-qair-{v}", v, duration, warmup), seed, {"seed": seed})
            for seed in _seeds(opts) for v in LASTPQ_QAIR_VARIANTS]


def _reduce_lastpq_qair(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in done:
        flows = {r["flow"]: r for r in d.result.flows.to_dict("records")}
        lat = lpq.vr_latency_ms(d)
        rows.append({"variant": d.planned.variant, "seed": d.planned.seed,
                     "vr_p95_ms": percentile(lat["latency_ms"], 95.0), "vr_mbps": flows["vr"]["goodput_mbps"],
                     "vr_fps": flows["vr"]["fps_mean"],
                     "home_tcp_mbps": sum(r["goodput_mbps"] or 0.0 for n, r in flows.items() if n[0] in "tb"),
                     "neighbour_tcp_mbps": sum(r["goodput_mbps"] or 0.0 for n, r in flows.items() if n.startswith("nb"))})
    return _document(rows, LASTPQ_QAIR_METRICS, {
        "source": "qair-lastpq.md §17.6 (no published numbers: no paper combines them)",
        "expectation": "QAir shortens the queue in the air for everyone; LAST-PQ keeps the VR demand at the home AP; "
                       "together the VR flow keeps its rate and demand while the neighbours' queues in the air stay short"})


# ---- Law + Zhuge ---------------------------------------------------------------------------------

LAW_ZHUGE_VARIANTS = ("linux_fq_codel", "law", "zhuge", "law_zhuge")
LAW_ZHUGE_METRICS = ["frame_latency_p99_ms", "deadline_miss_rate", "freezes", "call_mbps", "call_rtt_p50_ms",
                     "twcc_rewritten", "acks_held", "download_mbps"]


def _plan_law_zhuge(opts: Options) -> list[PlannedRun]:
    runs = []
    for v in LAW_ZHUGE_VARIANTS:
        sc = lasthop.Scenario.load(topology.EXAMPLES / "home_rtc.toml", variant=v).to_dict()
        if opts.quick:
            sc["duration_s"] = sc["warmup_s"] + 6.0
        sc["name"] = f"law-zhuge-{v}"
        runs += [PlannedRun(v, sc, seed, {"seed": seed}) for seed in _seeds(opts)]
    return runs


def _feedback(d: Done) -> tuple[int, int]:
    """(TWCC messages Zhuge generated, TCP ACKs it held) at the AP."""
    twcc = acks = 0
    for m in d.result.summary.get("components", {}).get("mechanisms", []) or []:
        for f in m.get("flows", []):
            fb = f.get("feedback", {})
            twcc += fb.get("twcc_rewriter", {}).get("messages", 0)
            acks += fb.get("ack_delayer", {}).get("acks_delayed", 0)
    return twcc, acks


def _reduce_law_zhuge(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in done:
        flows = {r["flow"]: r for r in d.result.flows.to_dict("records")}
        call, dl = flows["call"], flows["download"]
        twcc, acks = _feedback(d)
        rows.append({"variant": d.planned.variant, "seed": d.planned.seed,
                     "frame_latency_p99_ms": call["frame_latency_p99_ms"],
                     "deadline_miss_rate": call["frame_deadline_miss_rate"], "freezes": call["freezes"],
                     "call_mbps": call["bitrate_mbps"], "call_rtt_p50_ms": call["rtt_p50_ms"],
                     "twcc_rewritten": twcc, "acks_held": acks, "download_mbps": dl["goodput_mbps"]})
    return _document(rows, LAW_ZHUGE_METRICS, {
        "source": "no published system combines Law (seed 000) and Zhuge (seed 003)",
        "expectation": "Law bounds the call's delay in the AP's driver and hardware; Zhuge shortens the call's and the "
                       "download's feedback loops; together both act (feedback rewritten and held, latency bounded)"})


EXPERIMENTS = [
    Experiment("lastpq-qair", _plan_lastpq_qair, _reduce_lastpq_qair),
    Experiment("law-zhuge", _plan_law_zhuge, _reduce_law_zhuge),
]
