"""Experiments on the Linux AP transmit path (issue 4): airtime fairness and sparse flows.

Scenarios are built as dicts by :mod:`lasthop.experiments.topology`.
"""

from __future__ import annotations

from typing import Any

from lasthop.experiments import topology
from lasthop.experiments.plan import Done, Experiment, Options, PlannedRun
from lasthop.experiments.topology import Json
from lasthop.stats import percentiles


def _linux(**kw: Any) -> Json:
    """The Linux AP transmit path (mac80211 TXQs with FQ-CoDel), with ``kw`` set."""
    return {"type": "linux", **kw}


def _fixed(mcs: int) -> Json:
    """Fixed-rate control at ``mcs``."""
    return {"type": "fixed", "mcs": mcs}


def plan_airtime_fairness(opts: Options) -> list[PlannedRun]:
    """One AP, two saturated downlink stations: "fast" (a two-stream
    station on a two-stream BSS, MCS15, 130 Mbit/s) and "slow" (a one-stream station, MCS0, 6.5 Mbit/s), both on
    clean channels. Variants: the airtime-fairness scheduler off
    (round robin per PSDU, as before mac80211's AFS) and on. Expected (Høiland-Jørgensen et al., ATC'17):
    with fairness the airtime shares are within 10 % of equal and the aggregate throughput is higher."""
    duration = 4.0 if opts.quick else 20.0
    return [PlannedRun(variant, topology.single_ap(
        f"airtime-fairness-{variant}", duration_s=duration, warmup_s=1.0, server="server",
        last_hop=topology.wifi(ap_path=_linux(airtime_fairness=afs), max_nss=2),
        stations=[topology.station("fast", topology.fixed_snr(35.0), downlink_rate_control=_fixed(15)),
                  topology.station("slow", topology.fixed_snr(10.0), downlink_rate_control=_fixed(0), max_nss=1)],
        flows=[topology.saturated(name, "server", name, 400) for name in ("fast", "slow")],
        link_delay_ms=1.0, packets=False), opts.seed) for variant, afs in (("afs_off", False), ("afs_on", True))]


def reduce_airtime_fairness(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in done:
        links = {l["link"]: l["stats"]["airtime_ns"] for l in d.result.summary["components"]["wifi"]["links"]}
        air = {name: links[f"ap->{name}"] for name in ("fast", "slow")}
        total_air = sum(air.values())
        thr = {r["flow"]: r["throughput_mbps"] for r in d.result.flows.to_dict("records")}
        aggregate = sum(thr.values())
        for name in ("slow", "fast"):
            rows.append({"variant": d.planned.variant, "station": name, "airtime_share": air[name] / total_air,
                         "throughput_mbps": thr[name], "aggregate_mbps": aggregate})
    return {"rows": rows}


def plan_sparse_flow(opts: Options) -> list[PlannedRun]:
    """A ping flow (every 100 ms) and four saturating UDP flows to the same station. Variants: ``fifo``
    (one driver-style queue per AC: the ping waits behind the bulk) and ``fq_codel`` (mac80211 TXQs:
    the ping's sparse flow is served first). Expected: fq_codel keeps ping p99 to a few ms plus airtime
    while FIFO's grows by an order of magnitude."""
    duration = 5.0 if opts.quick else 30.0
    flows = [topology.udp_cbr(f"bulk{i}", "server", "sta", 20.0, 1500) for i in range(4)]
    flows.append(topology.flow("ping", "ping", "server", "sta", interval_ms=100.0))
    return [PlannedRun(variant, topology.single_ap(
        f"sparse-flow-{variant}", duration_s=duration, warmup_s=1.0, server="server",
        last_hop=topology.wifi(ap_path=path, rate_control=_fixed(7)),
        stations=[topology.station("sta", topology.fixed_snr(35.0))], flows=flows, link_delay_ms=0.5), opts.seed)
        for variant, path in (("fifo", {"type": "fifo"}), ("fq_codel", _linux()))]


def reduce_sparse_flow(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in done:
        f = {r["flow"]: r for r in d.result.flows.to_dict("records")}
        bulk = sum(f[f"bulk{i}"]["throughput_mbps"] for i in range(4))
        rows.append({"variant": d.planned.variant, "ping_rtt_p50_ms": f["ping"]["latency_p50_ms"],
                     "ping_rtt_p99_ms": f["ping"]["latency_p99_ms"], "bulk_mbps": bulk})
    return {"rows": rows}


def plan_latency_breakdown(opts: Options) -> list[PlannedRun]:
    """One 10 Mbit/s UDP flow on a fluctuating channel (mean SNR 24 dB at MCS7 with Rayleigh fading,
    20 ms coherence) with background traffic (20 Mbit/s downlink to one station, 5 Mbit/s uplink from
    another); per-layer delay percentiles of the video packets through the Linux AP path:
    wired, txq (mac80211 FQ-CoDel), driver (software queues until the hardware queue), hardware (until
    the first attempt), air (first attempt to delivery). The baseline picture Law's paper starts from."""
    sc = topology.single_ap(
        "latency-breakdown", duration_s=5.0 if opts.quick else 30.0, warmup_s=1.0, server="server",
        last_hop=topology.wifi(ap_path=_linux(), rate_control=_fixed(7)),
        stations=[topology.station("client", topology.fixed_snr(24.0, coherence_ms=20.0)),
                  topology.station("bg1", topology.fixed_snr(30.0)),
                  topology.station("bg2", topology.fixed_snr(30.0))],
        flows=[topology.udp_cbr("video", "server", "client", 10.0, 1200),
               topology.udp_cbr("bg1", "server", "bg1", 20.0, 1500),
               topology.udp_cbr("bg2", "bg2", "server", 5.0, 1500)],
        link_delay_ms=5.0)
    return [PlannedRun("linux", sc, opts.seed)]


def reduce_latency_breakdown(done: list[Done]) -> dict[str, Any]:
    (d,) = done
    p = d.result.packets
    v = p[(p["flow"] == "video") & p["t_delivered_ns"].notna()]
    t = {c: v[c].astype("float64") for c in v.columns if c.startswith("t_")}
    layers = {
        "wired": (t["t_wired_tx_ns"] - t["t_wired_enq_ns"]) + (t["t_txq_enq_ns"] - t["t_wired_tx_ns"]),
        "txq": t["t_txq_deq_ns"] - t["t_txq_enq_ns"],
        "driver": t["t_hw_enq_ns"] - t["t_txq_deq_ns"],
        "hardware": t["t_air_start_ns"] - t["t_hw_enq_ns"],
        "air": t["t_delivered_ns"] - t["t_air_start_ns"],
        "total": t["t_delivered_ns"] - t["t_sent_ns"],
    }
    rows = []
    for name, delay in layers.items():
        ms = delay.to_numpy() / 1e6
        p50, p99, p999 = percentiles(ms, (50, 99, 99.9))
        rows.append({"variant": d.planned.variant, "layer": name, "p50_ms": p50, "p99_ms": p99, "p999_ms": p999})
    return {"rows": rows}


RATE_CONTROLS: dict[str, Json] = {"minstrel_ht": {"type": "minstrel_ht"}, "thompson": {"type": "thompson"}}
"""The adaptive rate controls compared with the best fixed MCS."""


def _goodput_run(variant: str, point: Json, channel: Json, rc: Json, opts: Options) -> PlannedRun:
    sc = topology.single_ap(
        "rate-control", duration_s=4.0 if opts.quick else 10.0, warmup_s=1.0, server="server",
        last_hop=topology.wifi(ap_path=_linux(), rate_control=rc), stations=[topology.station("sta", channel)],
        flows=[topology.saturated("bulk", "server", "sta", 300)], link_delay_ms=1.0, packets=False)
    return PlannedRun(variant, sc, opts.seed, point)


def plan_rate_control(opts: Options) -> list[PlannedRun]:
    """One HT20 station (one stream) with saturated downlink at static SNRs and under Rayleigh fading
    (mean 20 dB, 20 ms coherence), through the Linux AP path. Variants: Minstrel-HT (modern), Thompson
    sampling, and the best fixed MCS (the maximum over MCS0–7 of each point's goodput). Expected: on
    static SNRs both adaptive schemes reach ≥ 90 % of the best fixed rate's goodput."""
    points: list[tuple[Any, Json]] = [(snr, topology.fixed_snr(float(snr))) for snr in (5, 10, 15, 20, 25, 30)]
    points.append(("fading", topology.fixed_snr(20.0, coherence_ms=20.0)))
    plan = []
    for label, channel in points:
        plan += [_goodput_run("fixed", {"snr_db": label, "mcs": m}, channel, _fixed(m), opts) for m in range(8)]
        plan += [_goodput_run(v, {"snr_db": label}, channel, rc, opts) for v, rc in RATE_CONTROLS.items()]
    return plan


def reduce_rate_control(done: list[Done]) -> dict[str, Any]:
    goodput: dict[Any, dict[str, list[float]]] = {}
    for d in done:
        g = float(d.result.flows["throughput_mbps"].iloc[0])
        goodput.setdefault(d.planned.point["snr_db"], {}).setdefault(d.planned.variant, []).append(g)
    rows: list[dict[str, Any]] = []
    for label, by in goodput.items():
        best = max(by.pop("fixed"))
        rows.append({"variant": "fixed_best", "snr_db": label, "goodput_mbps": best})
        rows += [{"variant": v, "snr_db": label, "goodput_mbps": g, "fraction_of_best": g / best if best > 0 else None}
                 for v, (g,) in by.items()]
    return {"rows": rows}


EXPERIMENTS = [
    Experiment("rate-control", plan_rate_control, reduce_rate_control),
    Experiment("airtime-fairness", plan_airtime_fairness, reduce_airtime_fairness),
    Experiment("sparse-flow", plan_sparse_flow, reduce_sparse_flow),
    Experiment("latency-breakdown", plan_latency_breakdown, reduce_latency_breakdown),
]
