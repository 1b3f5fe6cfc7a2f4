"""Law (seed 000: Shen and Meng, "Law: Towards Consistent Low Latency in 802.11 Home Networks", NSDI'26),
§4 on a simulated copy of its testbed.

The testbed (§4.1): an OpenWiFi AP (802.11n, 20 MHz, one spatial stream, 5 GHz) and one client in an
office during working hours; the sender is a router one Ethernet hop from the AP. Law runs with
Limit_q = 40 ms and Limit_h = 3 ms. The baselines are OpenWiFi with the stock three queue layers
(mac80211 TXQs with FQ-CoDel → driver software-retry queue → hardware queues of 2 A-MPDUs / 8 frames)
and single-rate hardware (no multi-rate retry, 7 tries per PSDU, 30 hardware attempts per MPDU before
the driver drops it), under Minstrel-HT, LLRA (reconstructed) and Thompson sampling. The radio channel
is lasthop's ``office`` model with its defaults. ``examples/law_testbed.toml`` is the ``law`` variant of
:func:`testbed` (a test keeps them equal).

Experiments (``lasthop reproduce NAME``):

* ``law-packet`` — 10 Mbit/s iperf-like UDP; per-packet latency p50/p99/p99.9, loss rate, deadline
  miss rate (latency above Limit_q + 2·Limit_h + the wired delay) and runs of ≥ 5 consecutive lost
  packets per second (Fig. 16).
* ``law-limits`` — Law with Limit_q = 40 ms and 54 ms (§4.4, Fig. 20).
* ``law-competing`` — plus a 2 Mbit/s UDP flow to the same client (§4.4, Fig. 21).
* ``law-bbr`` — one TCP BBR bulk flow; its throughput (§4.4, Fig. 22).
* ``law-frame`` — WebRTC-like video with GCC and FEC 1/8; frame delivery latency and frame deadline
  misses (§4.3, Fig. 17).

Each experiment is a plan of runs (``plan_*``: one testbed run per variant) and a reduce step
(``reduce_*``: the runs to rows); see :mod:`lasthop.experiments.plan`.

Latency is measured from the sender (one wired hop before the AP) to the client, as Law's iperf
measured it. Packets sent in the warm-up (Minstrel and Law climbing from the slowest rate) and in the
last second (their fate may be undecided at the end) are not counted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import lasthop
from lasthop.experiments import topology
from lasthop.experiments.plan import Done, Experiment, Options, PlannedRun
from lasthop.experiments.topology import Json
from lasthop.stats import percentiles

LIMIT_Q_MS = 40.0
LIMIT_H_MS = 3.0
WIRED_DELAY_MS = 1.0
"""Router → AP Ethernet plus both kernels, one way (the paper gives no number)."""
PACKET_BYTES = 1470
"""IP packet size of the iperf UDP flows."""
VARIANTS = ("law", "minstrel_ht", "llra", "thompson")

# OpenWiFi's single-rate hardware: max_rates = 1; mac80211's default of 7 tries when the driver sets no
# max_rate_tries (wifi-model.md §5.7, §8.1 item 6). The same limits for every baseline.
BASELINE_RATE_CONTROL: dict[str, dict[str, Any]] = {
    "minstrel_ht": {"type": "minstrel_ht", "max_rates": 1, "max_retry": 7},
    "llra": {"type": "llra", "minstrel": {"max_rates": 1, "max_retry": 7}},
    "thompson": {"type": "thompson", "max_rates": 1, "tries": 7},
}

PAPER: dict[str, Any] = {
    "packet": {
        "source": "Law §4.2 and Fig. 16: OpenWiFi testbed, 10 Mbit/s iperf UDP, office hours, ≥ 10 min per run",
        "law_p99_reduction_vs_baselines": [0.479, 0.787],
        "law_p999_reduction_vs_baselines": [0.753, 0.832],
        "law_latency_cutoff_ms": 60,
        "law_loss_rate": "slightly below 0.01",
        "law_lowest_loss_plus_deadline_miss": True,
        "law_loss_runs5_reduction_vs_baselines": [0.163, 0.563],
    },
    "limits": {
        "source": "Law §4.4 and Fig. 20 (frame delivery latency of WebRTC video, not per-packet latency)",
        "limit_q_54_p99_lower_by": 0.036,
        "limit_q_40_p999_lower_by": 0.151,
        "limit_q_54_p999_reduction_vs_baselines_at_least": 0.509,
    },
    "competing": {
        "source": "Law §4.4 and Fig. 21: a 2 Mbit/s iperf UDP flow added; frame-level latency compared with "
                  "the RSSI-aligned OpenWrt router (not with the OpenWiFi baselines)",
        "law_p99_reduction_vs_openwrt": 0.254,
        "law_p999_reduction_vs_openwrt": 0.213,
    },
    "bbr": {
        "source": "Law §4.4 and Fig. 22: average throughput of TCP BBR flows",
        "law_minus_minstrel_mbps_at_least": 0.7,
        "law_minus_llra_mbps_at_least": 0.7,
        "law_minus_thompson_mbps": -0.7,
    },
    "frame": {
        "source": "Law §4.3 and Fig. 17: WebRTC video, 10 Mbit/s target, 30 fps, FEC 1/8, GCC",
        "law_p99_frame_latency_reduction": [0.506, 0.703],
        "law_p999_frame_latency_reduction_at_least": 0.584,
        "law_frame_deadline_miss_reduction": [0.698, 0.785],
    },
}


def deadline_ms(limit_q_ms: float = LIMIT_Q_MS) -> float:
    """Law's latency bound as the per-packet deadline: Limit_q + 2·Limit_h + the wired delay."""
    return limit_q_ms + 2 * LIMIT_H_MS + WIRED_DELAY_MS


def _last_hop(variant: str, limit_q_ms: float) -> tuple[Json, Json | None]:
    """The AP's BSS and mechanism: Law, or the stock three layers (mac80211 TXQs, driver retry queue,
    2-A-MPDU / 8-frame hardware queues) under a baseline rate control."""
    bss = topology.wifi(width_mhz=20, gi_ns=800, max_nss=1)
    if variant == "law":
        return bss, {"type": "law", "limit_q_ms": limit_q_ms, "limit_h_ms": LIMIT_H_MS}
    return {**bss, "ap_path": {"type": "linux"}, "rate_control": dict(BASELINE_RATE_CONTROL[variant])}, None


def udp(name: str, rate_mbps: float) -> Json:
    """An iperf-like UDP flow from the sender to the client."""
    return topology.udp_cbr(name, "sender", "client", rate_mbps, PACKET_BYTES)


def testbed(variant: str, *, duration_s: float = 600.0, warmup_s: float = 10.0, limit_q_ms: float = LIMIT_Q_MS,
            flows: list[Json] | None = None, packets: bool = True) -> Json:
    """Law's testbed as a scenario dict, for ``variant`` in :data:`VARIANTS`."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    last_hop, mechanism = _last_hop(variant, limit_q_ms)
    # The client's uplink (TCP ACKs) at a fixed robust rate, the same for every variant.
    client = topology.station("client", {"type": "office"}, rate_control={"type": "fixed", "mcs": 3})
    return topology.single_ap(
        f"law-testbed-{variant}", duration_s=duration_s, warmup_s=warmup_s, server="sender", last_hop=last_hop,
        mechanism=mechanism, stations=[client], flows=flows if flows is not None else [udp("iperf", 10.0)],
        link_delay_ms=WIRED_DELAY_MS, packets=packets)


def loss_runs(lost_in_seq_order: np.ndarray, at_least: int = 5) -> int:
    """Runs of ``at_least`` or more consecutive lost packets (each run counted once)."""
    runs, cur = 0, 0
    for x in lost_in_seq_order:
        if x:
            cur += 1
            if cur == at_least:
                runs += 1
        else:
            cur = 0
    return runs


def packet_metrics(res: lasthop.RunResult, flow: str, bound_ms: float, t0_s: float, t1_s: float) -> dict[str, float]:
    """Per-packet metrics of ``flow`` over packets sent in [t0_s, t1_s)."""
    p = res.packets
    f = p[(p["flow"] == flow) & ~p["reverse"]]
    sent_s = f["t_sent_ns"].astype("int64").to_numpy() / 1e9
    f = f[(sent_s >= t0_s) & (sent_s < t1_s)].sort_values("seq")
    lost = f["drop_reason"].notna().to_numpy()
    delivered = f["latency_ms"].notna().to_numpy()
    settled = int(lost.sum() + delivered.sum())
    lat = f["latency_ms"].to_numpy()[delivered]
    p50, p99, p999 = (math.nan if p is None else p for p in percentiles(lat, (50, 99, 99.9)))
    span = t1_s - t0_s
    return {
        "latency_p50_ms": p50,
        "latency_p99_ms": p99,
        "latency_p999_ms": p999,
        "loss_rate": float(lost.sum()) / settled if settled else math.nan,
        "deadline_miss_rate": float((lat > bound_ms).sum()) / settled if settled else math.nan,
        "loss_runs5_per_s": loss_runs(lost[delivered | lost]) / span,
        "throughput_mbps": float(f["size_bytes"].to_numpy()[delivered].sum()) * 8 / span / 1e6,
    }


def _plan(opts: Options, variants: tuple[str, ...] = VARIANTS, **testbed_kw: Any) -> list[PlannedRun]:
    """One run of the testbed per variant (ten minutes as in the paper, or a short smoke run)."""
    duration, warmup = (12.0, 4.0) if opts.quick else (600.0, 10.0)
    return [PlannedRun(v, testbed(v, duration_s=duration, warmup_s=warmup, **testbed_kw), opts.seed)
            for v in variants]


def _packets(done: Done, flow: str, limit_q_ms: float = LIMIT_Q_MS) -> dict[str, float]:
    """:func:`packet_metrics` of ``flow`` over packets sent after the warm-up and before the last second."""
    sc = done.scenario
    return packet_metrics(done.result, flow, deadline_ms(limit_q_ms), sc["warmup_s"], sc["duration_s"] - 1.0)


def _flow_row(done: Done, flow: str, columns: tuple[str, ...]) -> dict[str, Any]:
    """``columns`` of ``flow``'s row in the flows table, as floats."""
    f = done.result.flows.set_index("flow").loc[flow]
    return {"variant": done.planned.variant, **{k: float(f[k]) for k in columns}}


def _reductions(rows: list[dict[str, Any]], metric: str, law: str = "law") -> dict[str, float]:
    """1 − law/baseline of ``metric`` for every other variant."""
    by = {r["variant"]: r[metric] for r in rows}
    return {v: 1.0 - by[law] / x for v, x in by.items() if v != law and x and not math.isnan(x)}


def plan_packet(opts: Options) -> list[PlannedRun]:
    """``law-packet``: Fig. 16 — per-packet latency, loss and loss pattern of a 10 Mbit/s UDP flow."""
    return _plan(opts)


def reduce_packet(done: list[Done]) -> dict[str, Any]:
    rows = [{"variant": d.planned.variant, **_packets(d, "iperf")} for d in done]
    return {"rows": rows, "paper": PAPER["packet"], "deadline_ms": deadline_ms(),
            "law_reduction": {m: _reductions(rows, m) for m in ("latency_p99_ms", "latency_p999_ms", "loss_runs5_per_s")}}


def plan_limits(opts: Options) -> list[PlannedRun]:
    """``law-limits``: Fig. 20 — Law with Limit_q = 40 ms (default) and 54 ms (a 60-ms overall bound)."""
    return [PlannedRun(f"law_limit_q_{q:.0f}ms", run.scenario, run.seed, {"limit_q_ms": q})
            for q in (LIMIT_Q_MS, 54.0) for run in _plan(opts, ("law",), limit_q_ms=q)]


def reduce_limits(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in done:
        q = d.planned.point["limit_q_ms"]
        rows.append({"variant": d.planned.variant, "limit_q_ms": q, "deadline_ms": deadline_ms(q),
                     **_packets(d, "iperf", q)})
    return {"rows": rows, "paper": PAPER["limits"]}


def plan_competing(opts: Options) -> list[PlannedRun]:
    """``law-competing``: Fig. 21 — the 10 Mbit/s flow with a 2 Mbit/s UDP flow to the same client."""
    return _plan(opts, flows=[udp("iperf", 10.0), udp("competing", 2.0)])


def reduce_competing(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in done:
        c = _packets(d, "competing")
        rows.append({"variant": d.planned.variant, **_packets(d, "iperf"),
                     "competing_latency_p999_ms": c["latency_p999_ms"], "competing_loss_rate": c["loss_rate"]})
    return {"rows": rows, "paper": PAPER["competing"],
            "law_reduction": {m: _reductions(rows, m) for m in ("latency_p99_ms", "latency_p999_ms")}}


def plan_bbr(opts: Options) -> list[PlannedRun]:
    """``law-bbr``: Fig. 22 — throughput of one TCP BBR bulk flow."""
    flow = topology.flow("bbr", "tcp", "sender", "client", tcp={"cc": {"type": "bbr"}})
    return _plan(opts, flows=[flow], packets=False)


def reduce_bbr(done: list[Done]) -> dict[str, Any]:
    rows = [_flow_row(d, "bbr", ("throughput_mbps", "latency_p50_ms", "latency_p99_ms")) for d in done]
    by: dict[str, float] = {r["variant"]: r["throughput_mbps"] for r in rows}
    return {"rows": rows, "paper": PAPER["bbr"],
            "law_minus_mbps": {v: by["law"] - x for v, x in by.items() if v != "law"}}


def plan_frame(opts: Options) -> list[PlannedRun]:
    """``law-frame``: Fig. 17 — a WebRTC-like call (10 Mbit/s target: GCC capped at 10 Mbit/s, 30 fps,
    FEC 1/8) over the testbed; frame delivery latency (capture → decodable), misses of the 100-ms
    deadline (dropped frames count as misses) and the encoded bitrate."""
    call = topology.flow("call", "rtc", "sender", "client", deadline_ms=100.0,
                         rtc={"video": {"fps": 30}, "fec": {"type": "row", "l": 8},
                              "rate_control": {"type": "gcc", "max_kbps": 10_000}})
    return _plan(opts, flows=[call], packets=False)


def reduce_frame(done: list[Done]) -> dict[str, Any]:
    columns = ("frame_latency_p50_ms", "frame_latency_p99_ms", "frame_latency_p999_ms", "frame_deadline_miss_rate",
               "bitrate_mbps")
    rows = [_flow_row(d, "call", columns) for d in done]
    return {"rows": rows, "paper": PAPER["frame"],
            "law_reduction": {m: _reductions(rows, m) for m in ("frame_latency_p99_ms", "frame_latency_p999_ms",
                                                                "frame_deadline_miss_rate")}}


EXPERIMENTS = [
    Experiment("law-packet", plan_packet, reduce_packet),
    Experiment("law-frame", plan_frame, reduce_frame),
    Experiment("law-limits", plan_limits, reduce_limits),
    Experiment("law-competing", plan_competing, reduce_competing),
    Experiment("law-bbr", plan_bbr, reduce_bbr),
]
