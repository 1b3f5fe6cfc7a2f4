"""QAir (seed 001; spec qair-lastpq.md §7–8): the dense co-channel testbed, QAir on every node against
plain EDCA (the paper's "802.11 DCF").

Ten AP–station pairs share one 5 GHz channel (802.11n HT20, 2 streams, fixed MCS 13, every node in one
collision domain, the ath9k-style Linux path at every node, stations included). Links 1..n carry
background from the server to the station — saturating UDP (100 Mbit/s each, ``qair-udp``) or
persistent Cubic TCP (``qair-tcp``) — and link 10 carries a ping (every 100 ms). Each n runs with QAir
on every node and with it off; the metric is the ping's mean RTT and the background's aggregate rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lasthop.experiments import topology
from lasthop.experiments.plan import Done, Experiment, Options, PlannedRun
from lasthop.experiments.topology import Json
from lasthop.stats import jain

PAIRS = 10
SINGLE_LINK_MBPS = 96.0
"""UDP goodput of one saturated link of the testbed alone (HT20, 2 streams, MCS 13, 32-subframe
A-MPDUs), Mbit/s: the "capacity" of spec §8's offered-load cap (``test_qair.py`` checks it against a run)."""
VO_DSCP = 46
"""EF: user priority 6, AC_VO (RFC 8325 as Linux maps it)."""
VARIANTS = ("dcf", "qair", "qair_stable")
"""EDCA alone, QAir with its defaults and QAir with its stable set (the live-stream case)."""
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


T_CYCLE_MS = 4.0025
"""Spec §4.3's T_cycle of the testbed PHY: AIFS + CWmin/2 · slot + TXTIME(32 × 1538 B at MCS 13) + SIFS +
BlockAck = 43 + 67.5 + 3,844 + 16 + 32 µs (``test_qair.py`` measures it as a lone node's per-frame delay)."""
N_STARS = {"qair": 3.0, "qair_nstar2": 2.0, "qair_nstar1.5": 1.5, "qair_stable": 3.0}
"""QAir's variants by N* (T_target = N* · T_cycle, spec §4.3): the default 3 (QAir's own 12-ms default)
and the smaller targets spec §19 item 1 asks to sweep for Q1; and QAir with the departures from
Algorithm 1 with which the saturated nodes split fairly (``STABLE``) at the default target."""

STABLE: Json = {"t_k_from": "hw_enqueue", "increase": "per_interval", "delta": 0.03, "alpha": 0.5, "decrease_hold": 5,
                "decrease_floor": 0.8, "first_descent": "from_delivered"}
"""QAir's departures from Algorithm 1 with which saturated nodes converge to one fair R_tc (FIDELITY.md: QP2 and
QP1's R_tc holds; QP1's T̂ band does not): t_k from the hardware-queue entry, the additive increase per check
interval elapsed (δ = 0.03, 12 PSDUs/s per second), T̂ averaged with α_Q = 0.5 (a horizon of two updates), a
decrease held for 5 updates and floored at 0.8, and a first descent from the delivered rate."""


QAIR_DEFAULT_T_TARGET_MS = 12.0
"""QAir's own default T_target (spec §6: 3 · T_cycle rounded, as `QairParams` has it)."""


def t_target_ms(variant: str) -> float:
    """The T_target a QAir variant runs with: QAir's default for N* = 3, else N* · T_cycle."""
    n_star = N_STARS[variant]
    return QAIR_DEFAULT_T_TARGET_MS if n_star == 3.0 else n_star * T_CYCLE_MS


def _qair(variant: str) -> list[Json] | None:
    """The node mechanisms of a variant: none for EDCA alone; QAir with its defaults for N* = 3 (with
    ``STABLE`` for ``qair_stable``); else with T_target = N* · T_cycle."""
    if variant == "dcf":
        return None
    if variant == "qair_stable":
        return [{"type": "qair", **STABLE}]
    if N_STARS[variant] == 3.0:
        return [{"type": "qair"}]
    return [{"type": "qair", "t_target_ms": t_target_ms(variant)}]


def _plan(kind: str, opts: Options) -> list[PlannedRun]:
    ns = (2, 4) if opts.quick else tuple(range(1, 10))
    duration, warmup = (6.0, 2.0) if opts.quick else (65.0, 5.0)
    runs = []
    for n in ns:
        flows = [_background(kind, i) for i in range(1, n + 1)]
        flows.append(topology.flow("ping", "ping", "server", f"sta{PAIRS}", interval_ms=100.0))
        for variant in ("dcf", *N_STARS):
            sc = topology.co_channel_pairs(f"qair-{kind}-{variant}-n{n}", pairs=PAIRS, duration_s=duration, warmup_s=warmup,
                                           last_hop=_last_hop(), flows=flows, node_mechanisms=_qair(variant))
            runs.append(PlannedRun(variant, sc, opts.seed, {"n": n}))
    return runs


BANDS = {"udp": ("Q1", 4, (0.50, 0.75), "Q2", 0.10), "tcp": ("Q3", 5, (0.50, 0.60), "Q4", 0.15)}
"""Per kind: the RTT row, the largest n it covers, its band of reductions; the throughput row and its
tolerance (UDP: within ±10 %; TCP: a loss of at most 15 %)."""


TOLERANCE = 0.30
"""The acceptance (spec §8): a relative gain within ±30 % of the paper's band."""


def _fit(kind: str, gains: list[dict[str, Any]]) -> dict[str, Any]:
    """How one N* fits the paper: the n whose RTT reduction falls in the paper's band and within ±30 % of
    it, how far the others miss the band (mean distance), and the n whose background throughput breaks
    the paper's row."""
    rtt_row, n_max, (lo, hi), thr_row, tol = BANDS[kind]
    small = [g for g in gains if g["n"] <= n_max]
    dist = [max(lo - g["rtt_reduction"], g["rtt_reduction"] - hi, 0.0) for g in small]
    near = [g["n"] for g in small if lo * (1 - TOLERANCE) <= g["rtt_reduction"] <= hi * (1 + TOLERANCE)]
    broken = [g["n"] for g in gains if (abs(g["throughput_change"]) > tol if kind == "udp" else g["throughput_change"] < -tol)]
    return {f"{rtt_row}_n_in_band": [g["n"] for g, d in zip(small, dist) if d == 0.0],
            f"{rtt_row}_n_within_30pct": near,
            f"{rtt_row}_mean_miss": sum(dist) / len(dist) if dist else None,
            f"{thr_row}_n_outside": broken}


def _reduce(kind: str, done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in done:
        f = {r["flow"]: r for r in d.result.flows.to_dict("records")}
        rate = "goodput_mbps" if kind == "tcp" else "throughput_mbps"
        thr = [r[rate] or 0.0 for name, r in f.items() if name.startswith("bg")]
        rows.append({"n": d.planned.point["n"], "variant": d.planned.variant,
                     "ping_rtt_mean_ms": f["ping"]["latency_mean_ms"], "ping_rtt_p99_ms": f["ping"]["latency_p99_ms"],
                     "background_mbps": sum(thr),
                     "background_jain": jain(thr)})
    by = {(r["n"], r["variant"]): r for r in rows}
    gains, fits = [], {}
    for variant, n_star in N_STARS.items():
        mine = []
        for n in sorted({r["n"] for r in rows}):
            dcf, qair = by[(n, "dcf")], by[(n, variant)]
            mine.append({"n": n, "variant": variant, "n_star": n_star,
                         "rtt_reduction": 1 - qair["ping_rtt_mean_ms"] / dcf["ping_rtt_mean_ms"],
                         "throughput_change": qair["background_mbps"] / dcf["background_mbps"] - 1})
        gains += mine
        fits[variant] = {"n_star": n_star, "t_target_ms": t_target_ms(variant), **_fit(kind, mine)}
    return {"rows": rows, "qair_vs_dcf": gains, "n_star_fit": fits,
            "best_n_star": N_STARS[_best(kind, {v: f for v, f in fits.items() if v != "qair_stable"})],
            "best_variant": _best(kind, fits), "paper": PAPER[kind]}


def _best(kind: str, fits: dict[str, dict[str, Any]]) -> str:
    """The variant that fits the paper best: the most n within ±30 % of the RTT row's band, then the
    fewest n breaking the throughput row, then the smallest mean miss of the band; ties go to the first
    listed."""
    rtt_row, thr_row = BANDS[kind][0], BANDS[kind][3]

    def score(v: str) -> tuple[int, int, float]:
        f = fits[v]
        return len(f[f"{rtt_row}_n_within_30pct"]), -len(f[f"{thr_row}_n_outside"]), -(f[f"{rtt_row}_mean_miss"] or 0.0)
    return max(fits, key=score)


def plan_udp(opts: Options) -> list[PlannedRun]:
    return _plan("udp", opts)


def reduce_udp(done: list[Done]) -> dict[str, Any]:
    return _reduce("udp", done)


def plan_tcp(opts: Options) -> list[PlannedRun]:
    return _plan("tcp", opts)


def reduce_tcp(done: list[Done]) -> dict[str, Any]:
    return _reduce("tcp", done)


def frame_delay(d: Done, nodes: set[str] | None = None) -> tuple[float | None, int]:
    """The mean per-frame delay t_k (ms) of the PSDUs delivered by ``nodes`` (every node if ``None``),
    as the hardware saw it (head of the hardware queue to completion), and how many PSDUs it covers."""
    total_ns = count = 0
    for node in d.result.summary["components"]["wifi"]["nodes"]:
        driver = node["path"].get("driver", {})
        if (nodes is None or node["node"] in nodes) and "delivered_psdus" in driver:
            total_ns += driver["per_frame_delay_ns"]
            count += driver["delivered_psdus"]
    return (total_ns / count / 1e6 if count else None), count


def collision_probability(d: Done) -> float | None:
    """Collided exchanges per channel access, over every node."""
    nodes = d.result.summary["components"]["wifi"]["nodes"]
    accesses = sum(n["mac"]["accesses"] for n in nodes)
    return sum(n["mac"]["collisions"] for n in nodes) / accesses if accesses else None


def _linear_r2(xs: list[float], ys: list[float]) -> float | None:
    """R² of the least-squares line through (xs, ys)."""
    if len(xs) < 3:
        return None
    fit = np.polyfit(xs, ys, 1)
    residual = float(np.sum((np.polyval(fit, xs) - np.asarray(ys)) ** 2))
    spread = float(np.sum((np.asarray(ys) - np.mean(ys)) ** 2))
    return 1 - residual / spread if spread > 0 else None


CAP_SHARE = 3
"""Spec §8: each node's offered load is capped at capacity / 3 (field devices and the testbed's 560 MHz
routers cannot fill the channel alone), which is what makes the paper's throughput rise for N = 1..2."""


def plan_delay_throughput(opts: Options) -> list[PlannedRun]:
    """Fig. 6's shape: the baseline with N = 1..9 active links, each offering capacity / 3."""
    ns = (1, 3, 6) if opts.quick else tuple(range(1, 10))
    duration, warmup = (4.0, 1.0) if opts.quick else (32.0, 2.0)
    cap = SINGLE_LINK_MBPS / CAP_SHARE
    runs = []
    for n in ns:
        flows = [topology.udp_cbr(f"bg{i}", "server", f"sta{i}", cap, 1500) for i in range(1, n + 1)]
        sc = topology.co_channel_pairs(f"qair-delay-throughput-n{n}", pairs=max(ns), duration_s=duration,
                                       warmup_s=warmup, last_hop=_last_hop(), flows=flows)
        runs.append(PlannedRun("dcf", sc, opts.seed, {"n": n, "offered_mbps_per_node": cap}))
    return runs


def reduce_delay_throughput(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in sorted(done, key=lambda d: d.planned.point["n"]):
        n = d.planned.point["n"]
        delay, psdus = frame_delay(d, {f"ap{i}" for i in range(1, n + 1)})
        rows.append({"n": n, "offered_mbps_per_node": d.planned.point["offered_mbps_per_node"],
                     "frame_delay_mean_ms": delay, "psdus": psdus,
                     "throughput_mbps": float(d.result.flows["throughput_mbps"].fillna(0.0).sum()),
                     "collision_probability": collision_probability(d)})
    peak = max(rows, key=lambda r: r["throughput_mbps"])
    shape = {"delay_linear_r2": _linear_r2([r["n"] for r in rows], [r["frame_delay_mean_ms"] or 0.0 for r in rows]),
             "delay_monotonic": all(a["frame_delay_mean_ms"] <= b["frame_delay_mean_ms"] for a, b in zip(rows, rows[1:])),
             "throughput_peak_n": peak["n"], "delay_at_peak_ms": peak["frame_delay_mean_ms"]}
    return {"rows": rows, "shape": shape, "paper": {
        "source": "QAir §IV-B, Fig. 6 (shape only; spec §8): per-frame delay against the number of contenders",
        "delay": "rises about linearly in N (R² ≥ 0.95)",
        "throughput_peak_n": [3, 4],
        "delay_at_peak_ms": "≈ T_target (12 ms)"}}


EDCA_VARIANTS = ("be", "vo", "be_qair")


def plan_edca(opts: Options) -> list[PlannedRun]:
    """Fig. 3's motivation: N saturated flows all in AC_VO (CW 3/7, never aggregated) against the same N
    in AC_BE, with EDCA alone and with QAir on every node (QAir's answer: no priority class, a short
    queue in the air); a ping in the flows' AC on the last link."""
    ns = (2, 6) if opts.quick else (1, 2, 3, 4, 6, 9)
    duration, warmup = (4.0, 1.0) if opts.quick else (22.0, 2.0)
    runs = []
    for n in ns:
        for variant in EDCA_VARIANTS:
            dscp = VO_DSCP if variant == "vo" else 0
            flows = [{**topology.udp_cbr(f"bg{i}", "server", f"sta{i}", 100.0, 1500), "dscp": dscp} for i in range(1, n + 1)]
            flows.append(topology.flow("ping", "ping", "server", f"sta{PAIRS}", interval_ms=100.0, dscp=dscp))
            mech = [{"type": "qair"}] if variant == "be_qair" else None
            sc = topology.co_channel_pairs(f"qair-edca-{variant}-n{n}", pairs=PAIRS, duration_s=duration,
                                           warmup_s=warmup, last_hop=_last_hop(), flows=flows, node_mechanisms=mech)
            runs.append(PlannedRun(variant, sc, opts.seed, {"n": n}))
    return runs


def reduce_edca(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in sorted(done, key=lambda d: (d.planned.point["n"], EDCA_VARIANTS.index(d.planned.variant))):
        n = d.planned.point["n"]
        f = {r["flow"]: r for r in d.result.flows.to_dict("records")}
        rows.append({"n": n, "variant": d.planned.variant,
                     "collision_probability": collision_probability(d),
                     "frame_delay_mean_ms": frame_delay(d, {f"ap{i}" for i in range(1, n + 1)})[0],
                     "ping_rtt_mean_ms": f["ping"]["latency_mean_ms"], "ping_rtt_p99_ms": f["ping"]["latency_p99_ms"],
                     "background_mbps": sum(r["throughput_mbps"] or 0.0 for name, r in f.items() if name.startswith("bg"))})
    ns = sorted({r["n"] for r in rows})
    by = {(r["n"], r["variant"]): r for r in rows}
    rise = {v: by[(ns[-1], v)]["collision_probability"] - by[(ns[0], v)]["collision_probability"] for v in EDCA_VARIANTS}
    return {"rows": rows, "shape": {"collision_probability_rise": rise, "from_n": ns[0], "to_n": ns[-1]}, "paper": {
        "source": "QAir §II, Fig. 3 (motivation, shape only; spec §8): N saturated VO flows",
        "collision_probability": "rises steeply with N in AC_VO compared with the same N in AC_BE",
        "latency": "rises steeply with N in AC_VO"}}


LIVE_PIPELINE_S = 2.15
"""Spec §7 [LH, R6]: the viewer sits behind a server pipeline with a fixed lag, the paper's measured
minimum end-to-end delay (Table III)."""
LIVE_REBUFFER_S = 0.5
"""A stalled player resumes once this much media is buffered."""


@dataclass(frozen=True)
class Playback:
    """What a live-stream viewer saw: buffering events, and the least and greatest end-to-end delay
    (capture to display) of the frames it played."""

    buffering_events: int
    min_e2e_s: float
    max_e2e_s: float
    stalled_s: float
    frames: int


def live_player(capture_s: Sequence[float], done_s: Sequence[float], pipeline_s: float = LIVE_PIPELINE_S,
                rebuffer_s: float = LIVE_REBUFFER_S) -> Playback:
    """The player of spec §7's live-streaming case, over frames in capture order with the times their
    last byte reached the server (``done_s``; the stream is TCP, so in order).

    A frame reaches the viewer ``pipeline_s`` after the server has it. Frame 0 plays as it arrives, which
    sets the lag L (capture to display). Frame i is due at capture_i + L; if it has not arrived then, the
    player stalls (a buffering event) until every frame captured within ``rebuffer_s`` after it has
    arrived, plays frame i then, and keeps the longer lag: it never catches up, so the greatest delay is
    the first one plus the stalls. Frames after the last arrival are not judged (the run ended).
    """
    arrive = [d + pipeline_s for d in done_s]
    if not arrive:
        return Playback(0, float("nan"), float("nan"), 0.0, 0)
    lag = arrive[0] - capture_s[0]
    lags, events, stalled = [lag], 0, 0.0
    for i in range(1, len(arrive)):
        due = capture_s[i] + lag
        if arrive[i] > due + 1e-9:  # later than due by more than the ns the times are kept in
            window = [a for c, a in zip(capture_s[i:], arrive[i:]) if c < capture_s[i] + rebuffer_s]
            resume = max(window)
            events += 1
            stalled += resume - due
            lag = resume - capture_s[i]
        lags.append(lag)
    return Playback(events, min(lags), max(lags), stalled, len(arrive))


PAPER_LIVE: dict[str, Any] = {
    "source": "QAir §VI-C, Table III: a phone's live stream beside 9 background links, 100 s",
    "Q7_buffering_events": {"dcf": 7, "qair": 0},
    "Q8_e2e_delay_s": {"dcf": {"min": 2.15, "max": 9.76}, "qair": {"min": 2.15, "max": 2.23}},
}


def plan_live(opts: Options) -> list[PlannedRun]:
    """Spec §7's live stream: 9 saturating UDP links, and station 10 broadcasting 1.5 Mbit/s of 30-fps
    video over Cubic TCP (uplink) to the server, EDCA alone against QAir on every node, as printed and
    with its stable set."""
    n, duration = (4, 12.0) if opts.quick else (9, 100.0)
    flows = [topology.udp_cbr(f"bg{i}", "server", f"sta{i}", 100.0, 1500) for i in range(1, n + 1)]
    flows.append(topology.flow("live", "tcp_video", f"sta{PAIRS}", "server", video={"fps": 30, "rate_mbps": 1.5},
                               tcp={"cc": {"type": "cubic"}}))
    runs = []
    for variant in VARIANTS:
        sc = topology.co_channel_pairs(f"qair-live-{variant}", pairs=PAIRS, duration_s=duration, warmup_s=0.0,
                                       last_hop=_last_hop(), flows=flows, node_mechanisms=_qair(variant))
        sc["output"] = {"packets": "none"}
        runs.append(PlannedRun(variant, sc, opts.seed, {"background": n}))
    return runs


def reduce_live(done: list[Done]) -> dict[str, Any]:
    rows = []
    for d in sorted(done, key=lambda d: VARIANTS.index(d.planned.variant)):
        fr = d.result.frames
        fr = fr[(fr["flow"] == "live") & fr["done_ns"].notna()].sort_values("frame")
        play = live_player((fr["capture_ns"] / 1e9).tolist(), (fr["done_ns"] / 1e9).tolist())
        f = d.result.flows.set_index("flow")
        rows.append({"variant": d.planned.variant, "background": d.planned.point["background"],
                     "buffering_events": play.buffering_events, "min_e2e_s": play.min_e2e_s,
                     "max_e2e_s": play.max_e2e_s, "stalled_s": play.stalled_s, "frames": play.frames,
                     "live_mbps": float(f.loc["live", "throughput_mbps"]),
                     "background_mbps": float(f.loc[[i for i in f.index if i.startswith("bg")], "throughput_mbps"].sum())})
    return {"rows": rows, "paper": PAPER_LIVE}


EXPERIMENTS = [
    Experiment("qair-udp", plan_udp, reduce_udp),
    Experiment("qair-tcp", plan_tcp, reduce_tcp),
    Experiment("qair-delay-throughput", plan_delay_throughput, reduce_delay_throughput),
    Experiment("qair-edca", plan_edca, reduce_edca),
    Experiment("qair-live", plan_live, reduce_live),
]
