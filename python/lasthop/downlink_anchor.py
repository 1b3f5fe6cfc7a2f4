"""The ns-3 downlink delay anchor rebuilt in lasthop (``lasthop validate ns3-delay``).

``shared/anchors/ns3/ap_downlink.cc``: one AP, N stations, HT MCS 7 at 20 MHz with A-MPDU, UDP over
IPv4 with 1500-byte IP packets (1472-byte payloads). Station 0 receives a 10 Mbit/s constant-rate video
(rate counted in UDP payload bits), stations 1 … N−1 one background flow each, 120 Mbit/s offered in
total. The video is in AC_VI (TOS 0xa0, DSCP 40) or in AC_BE with the background. Applications start
at warmup/2; the measured window is [warmup, warmup + seconds); the run goes on ``drain`` seconds so
late video packets are counted.

Measured as ``ap_downlink.cc`` measures (so the two columns mean the same thing):

* video delay: application-to-application one-way delay of the video packets *sent* in the window,
  percentiles by nearest rank (:mod:`lasthop.stats`, the same definition as ns-3's script);
* video loss: the share of those packets not delivered by the end of the run;
* throughput: UDP payload bytes *received* in the window, per flow, over the window's length.

In the ``ns3`` profile the AP's queueing is ns-3's default stack as the script configures it: an
``fq_codel`` qdisc per AC above a 500-packet ``WifiMacQueue`` per AC, with flow control between them
(``ap_path = { type = "fifo", qdisc = { type = "fq_codel" } }``, ``queue_packets = 500``). In the
``linux`` profile the AP runs the Linux path; there ns-3's numbers are a reference, not a target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import lasthop
from lasthop.stats import percentiles

NS = (1, 2, 5, 10, 20, 50)
CASES = ("vi", "be")
PAYLOAD_BYTES = 1472
PACKET_BYTES = 1500
VIDEO_MBPS = 10.0
BACKGROUND_MBPS = 120.0
DSCP = {"vi": 40, "be": 0}  # TOS 0xa0 → DSCP 40 → UP 5 → AC_VI

# Targets of issue 13: throughput within 5 %, loss within 5 points, p50/p99 within 25 % or 1 ms.
REL_THROUGHPUT = 0.05
ABS_LOSS = 0.05
REL_DELAY, ABS_DELAY_MS = 0.25, 1.0


@dataclass(frozen=True)
class Window:
    warmup_s: float = 1.0
    seconds: float = 10.0
    drain_s: float = 0.5


def scenario(n: int, case: str, profile: str = "ns3", window: Window = Window()) -> dict[str, Any]:
    """The anchor's topology as a scenario dict (checked like a user's file by ``Scenario.from_dict``)."""
    ip_per_payload = PACKET_BYTES / PAYLOAD_BYTES  # ns-3's DataRate counts payload bits
    start = window.warmup_s / 2
    flows = [{"name": "video", "type": "udp_cbr", "from": "server", "to": "sta0", "dscp": DSCP[case],
              "rate_mbps": VIDEO_MBPS * ip_per_payload, "packet_bytes": PACKET_BYTES, "start_s": start}]
    flows += [{"name": f"bg{i}", "type": "udp_cbr", "from": "server", "to": f"sta{i}",
               "rate_mbps": BACKGROUND_MBPS / (n - 1) * ip_per_payload, "packet_bytes": PACKET_BYTES,
               "start_s": start + 1e-4 * i} for i in range(1, n)]
    wifi: dict[str, Any] = {"type": "wifi", "standard": "ht", "profile": profile,
                            "rate_control": {"type": "fixed", "mcs": 7}}
    if profile == "ns3":
        wifi |= {"queue_packets": 500, "ap_path": {"type": "fifo", "qdisc": {"type": "fq_codel"}}}
    return {
        "name": f"ns3-delay-{case}-{n}",
        "duration_s": window.warmup_s + window.seconds + window.drain_s,
        "warmup_s": window.warmup_s,
        "servers": [{"name": "server"}],
        "aps": [{"name": "ap", "last_hop": wifi}],
        "stations": [{"name": f"sta{i}", "channel": {"type": "fixed_snr", "snr_db": 45.0}} for i in range(n)],
        "links": [{"a": "server", "b": "ap", "rate_mbps": 10_000.0, "delay_ms": 0.0}],
        "flows": flows,
    }


def measure(res: lasthop.RunResult, window: Window = Window()) -> dict[str, float | None]:
    """The anchor's metrics from one run's packet log."""
    p = res.packets
    t0, t1 = window.warmup_s * 1e9, (window.warmup_s + window.seconds) * 1e9
    received = p[(p.t_delivered_ns >= t0) & (p.t_delivered_ns < t1) & (p.reverse == 0)]
    payload_bits = (received.size_bytes - (PACKET_BYTES - PAYLOAD_BYTES)) * 8
    mbps = payload_bits.groupby(received.flow).sum() / window.seconds / 1e6
    video = p[(p.flow == "video") & (p.t_sent_ns >= t0) & (p.t_sent_ns < t1)]
    delivered = video[video.t_delivered_ns.notna()]
    delay_ms = ((delivered.t_delivered_ns - delivered.t_sent_ns) / 1e6).to_numpy(np.float64)
    p50, p99, p999, pmax = percentiles(delay_ms, (50, 99, 99.9, 100))
    return {"video_mbps": float(mbps.get("video", 0.0)),
            "video_loss": 1.0 - len(delivered) / len(video) if len(video) else None,
            "p50_ms": p50, "p99_ms": p99, "p999_ms": p999, "max_ms": pmax,
            "aggregate_mbps": float(mbps.sum())}


def _within(got: float | None, want: float, rel: float, absolute: float = 0.0) -> bool:
    return got is not None and abs(got - want) <= max(rel * abs(want), absolute)


def verdict(row: dict[str, Any]) -> dict[str, bool]:
    """Which targets one row (``measure`` plus the ``ns3_*`` values) meets."""
    return {"ok_throughput": _within(row["video_mbps"], row["ns3_video_mbps"], REL_THROUGHPUT),
            "ok_loss": _within(row["video_loss"], row["ns3_video_loss"], 0.0, ABS_LOSS),
            "ok_p50": _within(row["p50_ms"], row["ns3_p50_ms"], REL_DELAY, ABS_DELAY_MS),
            "ok_p99": _within(row["p99_ms"], row["ns3_p99_ms"], REL_DELAY, ABS_DELAY_MS)}


def rows(ref: dict[tuple[str, int], dict[str, float]], ns: tuple[int, ...] = NS, profile: str = "ns3",
         seed: int = 1, window: Window = Window()) -> list[dict[str, Any]]:
    """One row per (case, N): lasthop's metrics, ns-3's beside them and, in the ``ns3`` profile, the
    targets met. ``ref`` is :func:`lasthop.anchors.ns3_downlink`."""
    out = []
    for case in CASES:
        for n in ns:
            res = lasthop.run(lasthop.Scenario.from_dict(scenario(n, case, profile, window)), seed=seed)
            row: dict[str, Any] = {"case": case, "n": n, **measure(res, window)}
            row |= {f"ns3_{k}": v for k, v in ref[(f"dl_video_{case}", n)].items()}
            if profile == "ns3":
                row |= verdict(row)
            out.append(row)
    return out


def ordering(table: list[dict[str, Any]]) -> dict[int, bool]:
    """Per N: whether the video waits less in AC_VI than in AC_BE (p50 and p99), as in any EDCA AP."""
    by = {(r["case"], r["n"]): r for r in table}
    return {n: by[("vi", n)]["p50_ms"] <= by[("be", n)]["p50_ms"] and by[("vi", n)]["p99_ms"] <= by[("be", n)]["p99_ms"]
            for (case, n) in by if case == "vi" and ("be", n) in by}
