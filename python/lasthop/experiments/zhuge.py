"""Zhuge's trace-driven experiments (issue 7; `zhuge.md` §5–§8).

Topology (§6.1, profile `paper`): sender ──(1 Gbit/s, 9 ms)── AP ──(trace × 15/13, 16 ms)── client;
base RTT 50 ms. The AP's egress queue is the variant's: FIFO (pfifo, 250 packets), FQ-CoDel (ns-3.34
defaults: 5 ms / 100 ms, 1024 flows, limit 10240), each with or without an AP mechanism. Every variant
gets the same queue sizes (the artifact's 100-packet driver queue under the baselines' AQM and the
1-packet one under Zhuge are a parity hazard, §5.1; here no variant has a driver queue below its
qdisc).

Flows start at 1 s. RTC runs use the artifact's flavour of the call (§6.2–§6.6: 25 fps constant-size
frames, no FEC, GCC from 500 kbit/s with 10-ms groups, no loss-based controller, no probing); TCP runs
send video over TCP (§6.8) with Copa (δ = 0.5; FastAck runs δ = 0.02 as `copa-fast2`) or ABC.

Metrics per run (§6.10): ``rtt_over_200ms_ratio`` and ``rtt_p99_ms`` over the sender's RTT samples
after warm-up, ``frame_delay_over_400ms_ratio`` (frames decoded or discarded later than 400 ms after
capture), ``fps_under_10_ratio`` (1-s bins with < 10 decoded frames, empty bins included) and
``bitrate_mbps`` (encoded video bitrate).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import lasthop
from lasthop.anchors import shared_dir
from lasthop.experiments import topology
from lasthop.experiments.plan import Done, Experiment, Options, PlannedRun
from lasthop.experiments.topology import Json
from lasthop.stats import percentile

SCALE = 15 / 13
FAMILIES = {"W1": "rest-wifi", "W2": "office-wifi", "C2": "xu4g", "C3": "xu5g"}

FIFO = {"type": "fifo", "packets": 250}
CODEL = {"type": "fq_codel"}

ARTIFACT_RTC = {
    "video": {"fps": 25, "cv": 0.0, "keyframe_multiplier": 1.0},
    "fec": {"type": "none"},
    "rate_control": {"type": "gcc", "start_kbps": 500, "min_kbps": 500, "group_length_ms": 10,
                     "loss_based": False, "probing": False},
    "receiver": {"after_loss": "continue"},
}

RTP_VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "gcc_fifo": (FIFO, None),
    "gcc_codel": (CODEL, None),
    "gcc_zhuge": (CODEL, {"type": "zhuge"}),
}


def _copa(delta: float = 0.5) -> dict[str, Any]:
    return {"type": "copa", "delta": delta, "queue_delay": "latest"}


def tcp_variants(cellular: bool) -> dict[str, tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]]:
    """(queue, mechanism, cc) per TCP variant; §5.5: Copa's baseline and Zhuge's queue are FIFO on the
    Wi-Fi traces and FQ-CoDel on the cellular ones."""
    q = CODEL if cellular else FIFO
    return {
        "copa": (q, None, _copa()),
        "copa_fastack": (FIFO, {"type": "fastack"}, _copa(0.02)),
        "abc": (FIFO, {"type": "abc"}, {"type": "abc"}),
        "copa_zhuge": (q, {"type": "zhuge"}, _copa()),
    }


def scenario(trace: str | os.PathLike[str], queue: Json, mechanism: Json | None, flow: Json, duration_s: float,
             warmup_s: float, scale: float = SCALE, packets: bool = False) -> Json:
    """One trace-driven run: the topology of §6.1 with `flow` from the sender to the client."""
    link = {"type": "capacity_trace", "trace": os.fspath(trace), "delay_ms": 16.0, "scale": scale, "queue": queue}
    return topology.single_ap(
        "zhuge", duration_s=duration_s, warmup_s=warmup_s, server="sender", last_hop=link, mechanism=mechanism,
        stations=[topology.station("client")], flows=[_video(flow)], link_delay_ms=9.0, packets=packets)


def _video(flow: Json) -> Json:
    """The call's flow (``flow`` gives its type) from the sender to the client, from 1 s."""
    return topology.flow("video", None, "sender", "client", start_s=1.0, **flow)


def rtc_flow() -> dict[str, Any]:
    return {"type": "rtc", "deadline_ms": 400.0, "rtc": ARTIFACT_RTC}


def tcp_flow(cc: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tcp_video", "deadline_ms": 400.0, "tcp": {"mss": 1448, "cc": cc}}


def metrics(res: lasthop.RunResult, warmup_s: float) -> dict[str, Any]:
    """The §6.10 metrics of the run's video flow."""
    f = res.flows.set_index("flow").loc["video"]
    rtt = res.rtt[res.rtt["t_ns"] >= warmup_s * 1e9]["rtt_ms"].to_numpy()
    return {
        "rtt_over_200ms_ratio": float(np.mean(rtt > 200.0)) if len(rtt) else None,
        "frame_delay_over_400ms_ratio": _float(f["frame_deadline_miss_rate"]),
        "fps_under_10_ratio": _float(f["fps_under_10_ratio"]),
        "rtt_p99_ms": percentile(rtt, 99),
        "bitrate_mbps": _float(f["bitrate_mbps"]),
    }


def _float(v: Any) -> float | None:
    return None if v is None or v != v else float(v)


def family_traces(family: str, count: int) -> list[Path]:
    """The first `count` traces of a family in ``../shared/traces/zhuge``, in numeric order."""
    d = shared_dir() / "traces" / "zhuge"
    files = sorted(d.glob(f"{family}_*.pitree-trace"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    if not files:
        raise lasthop.LasthopError(f"no {family}_*.pitree-trace files in {d}")
    return files[:count]


def _trace_sets(trace: str | os.PathLike[str] | None, quick: bool) -> list[tuple[str, list[Path]]]:
    if trace is not None:
        return [(Path(trace).name, [Path(trace)])]
    n = 1 if quick else 3
    fams = ("W1", "W2") if quick else tuple(FAMILIES)
    return [(fam, family_traces(FAMILIES[fam], n)) for fam in fams]


def _mean_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in rows[0] if k not in ("variant", "trace")]
    out = {k: rows[0][k] for k in ("variant", "trace")}
    for k in keys:
        vals = [r[k] for r in rows if r[k] is not None]
        out[k] = float(np.mean(vals)) if vals else None
    return out


PAPER_RTP = {
    "W1": {"gcc_best_baseline": {"rtt_p99_ms": 400, "frame_delay_over_400ms_ratio": 0.01},
           "gcc_zhuge": {"rtt_p99_ms": 170, "frame_delay_over_400ms_ratio": 0.0055}},
    "claims": "rtt_over_200ms_ratio -45..-75 % and frame_delay_over_400ms_ratio -38..-92 % vs the best "
              "of GCC+FIFO and GCC+CoDel on W1/W2/C1-C3; fps<10 ratio >= -50 % on two traces (slides)",
}


def _per_trace(opts: Options, variants: Callable[[str], dict[str, tuple[Json, Json | None, Json]]],
               duration: float) -> list[PlannedRun]:
    """For each trace family (or the user's trace), each variant's (queue, mechanism, flow) on each trace."""
    plan = []
    for label, files in _trace_sets(opts.trace, opts.quick):
        for variant, (queue, mech, flow) in variants(label).items():
            plan += [PlannedRun(variant, scenario(tf, queue, mech, flow, duration, 5.0), opts.seed,
                                {"trace": label, "traces_per_family": 1 if opts.quick else 3}) for tf in files]
    return plan


def _family_rows(done: list[Done]) -> list[dict[str, Any]]:
    """The §6.10 metrics per (variant, trace family): the mean over the family's traces."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for d in done:
        key = (d.planned.variant, d.planned.point["trace"])
        row = {"variant": key[0], "trace": key[1], **metrics(d.result, d.scenario["warmup_s"])}
        groups.setdefault(key, []).append(row)
    return [_mean_rows(per) for per in groups.values()]


def _rtp_variants(label: str) -> dict[str, tuple[Json, Json | None, Json]]:
    return {v: (queue, mech, rtc_flow()) for v, (queue, mech) in RTP_VARIANTS.items()}


def plan_rtp(opts: Options) -> list[PlannedRun]:
    """GCC over FIFO, FQ-CoDel and FQ-CoDel + Zhuge on each trace family (mean over its first traces)."""
    return _per_trace(opts, _rtp_variants, 40.0 if opts.quick else 300.0)


def reduce_rtp(done: list[Done]) -> dict[str, Any]:
    return {"rows": _family_rows(done), "paper": PAPER_RTP,
            "traces_per_family": done[0].planned.point["traces_per_family"],
            "duration_s": done[0].scenario["duration_s"]}


def _tcp_variants(label: str) -> dict[str, tuple[Json, Json | None, Json]]:
    cellular = label in ("C1", "C2", "C3")
    return {v: (queue, mech, tcp_flow(cc)) for v, (queue, mech, cc) in tcp_variants(cellular).items()}


def plan_tcp(opts: Options) -> list[PlannedRun]:
    """Video over TCP: Copa, Copa + FastAck, ABC and Copa + Zhuge on each trace family."""
    return _per_trace(opts, _tcp_variants, 40.0 if opts.quick else 300.0)


def reduce_tcp(done: list[Done]) -> dict[str, Any]:
    return {"rows": _family_rows(done), "paper": {"claims": "Copa+Zhuge has the lowest tail RTT and frame delay "
                                                            "overall; Copa+FastAck slightly better frame delay on "
                                                            "some traces (slides)"},
            "duration_s": done[0].scenario["duration_s"]}


def k_trace(k: float, cut: int, directory: Path, lines: int = 5000, line_ms: int = 40) -> Path:
    """The §7.2 ABW-drop trace as a pitree file: 30 Mbit/s for lines 1..cut-1, then 30/k (two
    decimals), one line per 40 ms."""
    path = directory / f"k{k:g}-{cut}.pitree-trace"
    low = float(f"{30.0 / k:.2f}")
    with path.open("w") as f:
        for i in range(lines):
            f.write(f"{i * line_ms / 1000:.3f} {30.0 if i + 1 < cut else low}\n")
    return path


def degradation_ms(res: lasthop.RunResult, t_drop_s: float, window_s: float = 20.0) -> dict[str, float]:
    """§6.10 ABW-drop durations within [t_drop, t_drop + window]: RTT > 200 ms (last − first sample
    time), frame delay > 400 ms ((last − first frame id) × frame interval) and fps < 10 ((last − first
    1-s bin) × 1000 ms); 0 when never."""
    lo, hi = t_drop_s * 1e9, (t_drop_s + window_s) * 1e9
    r = res.rtt
    bad = r[(r["t_ns"] >= lo) & (r["t_ns"] <= hi) & (r["rtt_ms"] > 200.0)]["t_ns"]
    rtt_ms = (bad.max() - bad.min()) / 1e6 if len(bad) else 0.0
    fr = res.frames
    near = fr[(fr["capture_ns"] >= lo) & (fr["capture_ns"] <= hi)]
    late = near[near["delay_ms"] > 400.0]["frame"]
    fd_ms = float(late.max() - late.min()) * 40.0 if len(late) else 0.0
    dec = fr[~fr["dropped"]]["done_ns"].to_numpy()
    first_bin, last_bin = int(t_drop_s), int(t_drop_s + window_s)
    counts = np.bincount((dec // 1_000_000_000).astype(np.int64), minlength=last_bin + 1)[first_bin:last_bin + 1]
    low = np.nonzero(counts < 10)[0]
    fps_ms = float(low.max() - low.min()) * 1000.0 if len(low) else 0.0
    return {"rtt_over_200ms_ms": float(rtt_ms), "frame_delay_over_400ms_ms": fd_ms, "fps_under_10_ms": fps_ms}


PAPER_ABW = {
    "source": "zhuge repository wifi-exp/p2p/stats/gcc-net-{rtt,fd,fps}.result, mean over 21 CUTs (ms)",
    "rtt_over_200ms_ms": {"2": [778, 462, 0], "5": [3007, 4782, 337], "10": [5033, 2672, 849],
                          "20": [7123, 3782, 1192], "30": [8525, 6459, 1572], "50": [9687, 18015, 2284]},
    "frame_delay_over_400ms_ms": {"2": [960, 769, 0], "5": [3213, 2720, 289], "10": [5548, 2318, 790],
                                  "20": [7811, 3470, 2026], "30": [9245, 6091, 1746],
                                  "50": [21960, 17146, 3163]},
    "fps_under_10_ms": {"2": [0, 0, 0], "5": [1285, 0, 0], "10": [190, 190, 0], "20": [1333, 761, 0],
                        "30": [761, 1190, 142], "50": [7809, 2000, 333]},
    "columns": ["gcc_codel", "gcc_fifo", "gcc_zhuge"],
}


def plan_abw_drop(opts: Options) -> list[PlannedRun]:
    """30 Mbit/s dropping to 30/k: how long RTT, frame delay and fps stay degraded, per variant."""
    # The repository's k-traces (§7.2): 200-s runs with the drop at (CUT − 1) × 40 ms, CUT ∈ 3600..4400
    # (three of its 21 CUTs here); quick runs use a 72-s "test trace" with CUT 1000.
    ks = (5, 20) if opts.quick else (2, 5, 10, 20, 30, 50)
    cuts = (1000,) if opts.quick else (3600, 4000, 4400)
    duration = 70.0 if opts.quick else 200.0
    traces = {(k, cut): k_trace(k, cut, opts.workdir) for k in ks for cut in cuts}
    return [PlannedRun(variant, scenario(traces[k, cut], queue, mech, rtc_flow(), duration, 5.0), opts.seed,
                       {"k": k, "cut": cut})
            for k in ks for variant, (queue, mech) in RTP_VARIANTS.items() for cut in cuts]


def reduce_abw_drop(done: list[Done]) -> dict[str, Any]:
    groups: dict[tuple[float, str], list[dict[str, float]]] = {}
    for d in done:
        k, cut = d.planned.point["k"], d.planned.point["cut"]
        groups.setdefault((k, d.planned.variant), []).append(degradation_ms(d.result, (cut - 1) * 0.040))
    rows = [{"variant": variant, "trace": f"k{k}", "k": k, **{m: float(np.mean([p[m] for p in per])) for m in per[0]}}
            for (k, variant), per in groups.items()]
    cuts = list(dict.fromkeys(d.planned.point["cut"] for d in done))
    return {"rows": rows, "paper": PAPER_ABW, "cuts": cuts,
            "note": "drops at (cut − 1) × 40 ms; durations within [t_drop, t_drop + 20 s]"}


def plan_accuracy(opts: Options) -> list[PlannedRun]:
    """Fortune Teller's predicted versus actual AP delay per packet, by actual-delay bucket."""
    duration = 40.0 if opts.quick else 120.0
    tf = opts.trace if opts.trace is not None else family_traces("rest-wifi", 1)[0]
    sc = scenario(tf, CODEL, {"type": "zhuge"}, rtc_flow(), duration, 5.0, packets=True)
    return [PlannedRun("zhuge", sc, opts.seed, {"trace": tf.name})]


def reduce_accuracy(done: list[Done]) -> dict[str, Any]:
    (d,) = done
    mechanisms = d.result.summary["components"].get("mechanisms", [{}])
    acc = mechanisms[0].get("prediction_errors")
    if acc is None:
        raise lasthop.LasthopError("the Zhuge mechanism reported no prediction errors")
    rows = [{"variant": d.planned.variant, "trace": d.planned.point["trace"], **b} for b in acc]
    return {"rows": rows, "under_64ms": mechanisms[0].get("prediction_errors_under_64ms"),
            "paper": {"claims": "accurate for 1–64 ms; mostly below the 50 ms RTT (slides)"}}


def wifi_scenario(mechanism: Json | None, duration_s: float, competing: int = 2) -> Json:
    """An 802.11n AP (Linux path: FQ-CoDel TXQs, airtime fairness, Minstrel-HT) serving the call's
    client on a fading channel with a walk-by fade, and `competing` stations downloading with TCP."""
    ramp = [[0.0, 24.0], [15.0, 24.0], [17.0, 10.0], [21.0, 10.0], [23.0, 24.0]]
    stations = [topology.station("client", {"type": "ramp", "points": ramp, "fading": topology.rayleigh(20)})]
    flows = [_video(rtc_flow())]
    for i in range(competing):
        stations.append(topology.station(f"sta{i}", topology.fixed_snr(20.0 + 5 * i, coherence_ms=50)))
        flows.append(topology.flow(f"download{i}", "tcp", "sender", f"sta{i}", start_s=2.0))
    return topology.single_ap(
        "zhuge-wifi", duration_s=duration_s, warmup_s=5.0, server="sender",
        last_hop=topology.wifi(rate_control={"type": "minstrel_ht"}), mechanism=mechanism, stations=stations,
        flows=flows, link_delay_ms=9.0, packets=False)


def plan_wifi(opts: Options) -> list[PlannedRun]:
    """The RTC comparison over the modeled 802.11 AP instead of a trace link."""
    duration = 30.0 if opts.quick else 60.0
    return [PlannedRun(variant, wifi_scenario(mech, duration), opts.seed)
            for variant, mech in (("gcc_linux", None), ("gcc_linux_zhuge", {"type": "zhuge", "flows": ["video"]}))]


def reduce_wifi(done: list[Done]) -> dict[str, Any]:
    rows = [{"variant": d.planned.variant, "trace": "wifi", **metrics(d.result, d.scenario["warmup_s"])}
            for d in done]
    return {"rows": rows, "paper": {"claims": "Wi-Fi interference runs: RTT>200 ms 0.215/0.212 → 0.081, frame delay "
                                              ">400 ms 0.074/0.075 → 0.036 (CoDel/FIFO → Zhuge, zhuge.md §8)"}}


EXPERIMENTS = [
    Experiment("zhuge-rtp", plan_rtp, reduce_rtp, takes_trace=True),
    Experiment("zhuge-tcp", plan_tcp, reduce_tcp, takes_trace=True),
    Experiment("zhuge-abw-drop", plan_abw_drop, reduce_abw_drop),
    Experiment("zhuge-accuracy", plan_accuracy, reduce_accuracy, takes_trace=True),
    Experiment("zhuge-wifi", plan_wifi, reduce_wifi),
]
