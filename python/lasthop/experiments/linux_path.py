"""Experiments on the Linux AP transmit path (issue 4): airtime fairness and sparse flows.

Scenarios are built as dicts by :mod:`lasthop.experiments.topology`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import lasthop
from lasthop.experiments import topology
from lasthop.experiments.topology import Json


def _linux(**kw: Any) -> Json:
    """The Linux AP transmit path (mac80211 TXQs with FQ-CoDel), with ``kw`` set."""
    return {"type": "linux", **kw}


def _fixed(mcs: int) -> Json:
    """Fixed-rate control at ``mcs``."""
    return {"type": "fixed", "mcs": mcs}


def airtime_fairness(seed: int, quick: bool) -> dict[str, Any]:
    """One AP, two saturated downlink stations: "fast" (2 streams, MCS15, 130 Mbit/s) and "slow" (MCS0,
    6.5 Mbit/s), both on clean channels. Variants: the airtime-fairness scheduler off
    (round robin per PSDU, as before mac80211's AFS) and on. Expected (Høiland-Jørgensen et al., ATC'17):
    with fairness the airtime shares are within 10 % of equal and the aggregate throughput is higher."""
    duration = 4.0 if quick else 20.0
    rows = []
    for variant, afs in (("afs_off", False), ("afs_on", True)):
        sc = topology.single_ap(
            f"airtime-fairness-{variant}", duration_s=duration, warmup_s=1.0, server="server",
            last_hop=topology.wifi(ap_path=_linux(airtime_fairness=afs)),
            stations=[topology.station("fast", topology.fixed_snr(35.0), downlink_rate_control=_fixed(15)),
                      topology.station("slow", topology.fixed_snr(10.0), downlink_rate_control=_fixed(0))],
            flows=[topology.saturated(name, "server", name, 400) for name in ("fast", "slow")],
            link_delay_ms=1.0, packets=False)
        res = lasthop.run(lasthop.Scenario.from_dict(sc), seed=seed)
        links = {l["link"]: l["stats"]["airtime_ns"] for l in res.summary["components"]["wifi"]["links"]}
        air = {name: links[f"ap->{name}"] for name in ("fast", "slow")}
        total_air = sum(air.values())
        thr = {r["flow"]: r["throughput_mbps"] for r in res.flows.to_dict("records")}
        aggregate = sum(thr.values())
        for name in ("slow", "fast"):
            rows.append({"variant": variant, "station": name, "airtime_share": air[name] / total_air,
                         "throughput_mbps": thr[name], "aggregate_mbps": aggregate})
    return {"rows": rows}


def sparse_flow(seed: int, quick: bool) -> dict[str, Any]:
    """A ping flow (every 100 ms) and four saturating UDP flows to the same station. Variants: ``fifo``
    (one driver-style queue per AC: the ping waits behind the bulk) and ``fq_codel`` (mac80211 TXQs:
    the ping's sparse flow is served first). Expected: fq_codel keeps ping p99 to a few ms plus airtime
    while FIFO's grows by an order of magnitude."""
    duration = 5.0 if quick else 30.0
    rows = []
    for variant, path in (("fifo", {"type": "fifo"}), ("fq_codel", _linux())):
        flows = [topology.udp_cbr(f"bulk{i}", "server", "sta", 20.0, 1500) for i in range(4)]
        flows.append(topology.flow("ping", "ping", "server", "sta", interval_ms=100.0))
        sc = topology.single_ap(
            f"sparse-flow-{variant}", duration_s=duration, warmup_s=1.0, server="server",
            last_hop=topology.wifi(ap_path=path, rate_control=_fixed(7)),
            stations=[topology.station("sta", topology.fixed_snr(35.0))], flows=flows, link_delay_ms=0.5)
        res = lasthop.run(lasthop.Scenario.from_dict(sc), seed=seed)
        f = {r["flow"]: r for r in res.flows.to_dict("records")}
        bulk = sum(f[f"bulk{i}"]["throughput_mbps"] for i in range(4))
        rows.append({"variant": variant, "ping_rtt_p50_ms": f["ping"]["latency_p50_ms"],
                     "ping_rtt_p99_ms": f["ping"]["latency_p99_ms"], "bulk_mbps": bulk})
    return {"rows": rows}


def latency_breakdown(seed: int, quick: bool) -> dict[str, Any]:
    """One 10 Mbit/s UDP flow on a fluctuating channel (mean SNR 24 dB at MCS7 with Rayleigh fading,
    20 ms coherence) with background traffic (20 Mbit/s downlink to one station, 5 Mbit/s uplink from
    another); per-layer delay percentiles of the video packets through the Linux AP path:
    wired, txq (mac80211 FQ-CoDel), driver (software queues until the hardware queue), hardware (until
    the first attempt), air (first attempt to delivery). The baseline picture Law's paper starts from."""
    duration = 5.0 if quick else 30.0
    sc = topology.single_ap(
        "latency-breakdown", duration_s=duration, warmup_s=1.0, server="server",
        last_hop=topology.wifi(ap_path=_linux(), rate_control=_fixed(7)),
        stations=[topology.station("client", topology.fixed_snr(24.0, coherence_ms=20.0)),
                  topology.station("bg1", topology.fixed_snr(30.0)),
                  topology.station("bg2", topology.fixed_snr(30.0))],
        flows=[topology.udp_cbr("video", "server", "client", 10.0, 1200),
               topology.udp_cbr("bg1", "server", "bg1", 20.0, 1500),
               topology.udp_cbr("bg2", "bg2", "server", 5.0, 1500)],
        link_delay_ms=5.0)
    res = lasthop.run(lasthop.Scenario.from_dict(sc), seed=seed)
    p = res.packets
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
    for name, d in layers.items():
        ms = d.to_numpy() / 1e6
        rows.append({"variant": "linux", "layer": name, "p50_ms": float(np.percentile(ms, 50)),
                     "p99_ms": float(np.percentile(ms, 99)), "p999_ms": float(np.percentile(ms, 99.9))})
    return {"rows": rows}


def _goodput(channel: Json, rc: Json, seed: int, duration: float) -> float:
    sc = topology.single_ap(
        "rate-control", duration_s=duration, warmup_s=1.0, server="server",
        last_hop=topology.wifi(ap_path=_linux(), rate_control=rc), stations=[topology.station("sta", channel)],
        flows=[topology.saturated("bulk", "server", "sta", 300)], link_delay_ms=1.0, packets=False)
    res = lasthop.run(lasthop.Scenario.from_dict(sc), seed=seed)
    return float(res.flows["throughput_mbps"].iloc[0])


def rate_control(seed: int, quick: bool) -> dict[str, Any]:
    """One HT20 station (one stream) with saturated downlink at static SNRs and under Rayleigh fading
    (mean 20 dB, 20 ms coherence), through the Linux AP path. Variants: Minstrel-HT (modern), Thompson
    sampling, and the best fixed MCS (the maximum over MCS0–7 of each point's goodput). Expected: on
    static SNRs both adaptive schemes reach ≥ 90 % of the best fixed rate's goodput."""
    duration = 4.0 if quick else 10.0
    points: list[tuple[Any, Json]] = [(snr, topology.fixed_snr(float(snr))) for snr in (5, 10, 15, 20, 25, 30)]
    points.append(("fading", topology.fixed_snr(20.0, coherence_ms=20.0)))
    rows = []
    for label, channel in points:
        best = max(_goodput(channel, _fixed(m), seed, duration) for m in range(8))
        rows.append({"variant": "fixed_best", "snr_db": label, "goodput_mbps": best})
        for variant, rc in (("minstrel_ht", {"type": "minstrel_ht"}), ("thompson", {"type": "thompson"})):
            g = _goodput(channel, rc, seed, duration)
            rows.append({"variant": variant, "snr_db": label, "goodput_mbps": g,
                         "fraction_of_best": g / best if best > 0 else None})
    return {"rows": rows}


EXPERIMENTS: dict[str, Callable[..., dict[str, Any]]] = {
    "rate-control": rate_control,
    "airtime-fairness": airtime_fairness,
    "sparse-flow": sparse_flow,
    "latency-breakdown": latency_breakdown,
}
