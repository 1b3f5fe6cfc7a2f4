"""``lasthop validate bianchi|ns3|airtime``: the 802.11 model against theory, ns-3 and the IEEE formula."""

from __future__ import annotations

import json
from fractions import Fraction
from math import ceil
from pathlib import Path
from typing import Any

import click
from lasthop import _lasthop
from lasthop.commands._display import console, rows_table
from lasthop import downlink_anchor
from lasthop.anchors import missing, ns3_downlink, ns3_results

NS = (1, 2, 5, 10, 20, 50)
SCENARIOS = ("sat_11a_54_noagg", "sat_11n_mcs7_noagg", "sat_11n_mcs7_agg")


def _emit(doc: dict[str, Any], as_json: bool, title: str) -> None:
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
        return
    console().print(rows_table(title, doc["rows"], digits=4))


@click.group("validate")
def command() -> None:
    """Check the 802.11 model against Bianchi's model, ns-3 and the IEEE airtime formula."""


@command.command("bianchi")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--seconds", default=10.0, show_default=True, help="Measured simulated seconds per point.")
@click.option("--seed", default=1, show_default=True)
@click.option("--rts-cts", is_flag=True,
              help="RTS/CTS ahead of every frame (Bianchi's eq. 15; no ns-3 columns).")
def bianchi(as_json: bool, seconds: float, seed: int, rts_cts: bool) -> None:
    """802.11a 54 Mbit/s, ACK 24 Mbit/s, basic access (or RTS/CTS), 1500-byte payloads, N saturated
    stations."""
    rows = []
    for n in NS:
        # sat_11a_54_noagg with the model's unlimited retries (no drop, no CW reset at 8 failures).
        r = _lasthop.saturation("bianchi_11a_54_rts" if rts_cts else "bianchi_11a_54", n, seed, 1.0, seconds)
        _, p, model = _lasthop.bianchi_ofdm54(n, rts_cts)
        row = {"n": n, "sim_mbps": r["throughput_mbps"], "model_mbps": model,
               "rel_error": (r["throughput_mbps"] - model) / model, "sim_p": r["p_fail"], "model_p": p}
        if rts_cts:
            rows.append(row)
            continue
        # wifi-model.md §7.3: the ns-3 configuration (its CW reset and retry limit) against ns-3's
        # modified Bianchi model, the closer of its DIFS and EIFS collision variants.
        ns3_cfg = _lasthop.saturation("sat_11a_54_noagg", n, seed, 1.0, seconds)["throughput_mbps"]
        ref = _lasthop.ns3_model_ofdm54(n, ns3_cfg)
        row |= {"ns3_config_sim_mbps": ns3_cfg, "ns3_model_mbps": ref,
                "ns3_model_rel_error": None if ref is None else (ns3_cfg - ref) / ref}
        rows.append(row)
    access = "RTS/CTS" if rts_cts else "basic access"
    _emit({"rows": rows}, as_json, f"Saturation throughput vs Bianchi ({access}, DIFS collision time)")


@command.command("ns3")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--seconds", default=10.0, show_default=True, help="Measured simulated seconds per point.")
@click.option("--seeds", default=3, show_default=True, type=click.IntRange(min=1),
              help="Seeds averaged per point (ns-3's anchor averages 3).")
@click.option("--anchors", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="ns-3 results.csv (default: shared/anchors/ns3/results.csv beside the repository).")
def ns3(as_json: bool, seconds: float, seeds: int, anchors: Path | None) -> None:
    """The saturated uplink anchors against ns-3 3.44's throughput (mean over its seeds)."""
    try:
        ref = ns3_results(anchors)
    except KeyError as e:
        raise click.UsageError(f"cannot read the ns-3 anchors {anchors or ''}: not an anchors file "
                               f"(a row without its {e} column)") from None
    except (OSError, ValueError) as e:
        raise click.UsageError(f"cannot read the ns-3 anchors: {e}") from None
    if lacking := missing(ref, SCENARIOS, NS):
        raise click.UsageError(f"the ns-3 anchors file has no row for {', '.join(lacking)}")
    rows = []
    for sc in SCENARIOS:
        warmup = 3.0 if sc.endswith("_agg") else 1.0
        for n in NS:
            runs = [_lasthop.saturation(sc, n, s, warmup, seconds) for s in range(1, seeds + 1)]
            thr = sum(r["throughput_mbps"] for r in runs) / seeds
            want = ref[(sc, n)]
            rows.append({"scenario": sc, "n": n, "sim_mbps": thr, "ns3_mbps": want["throughput_mbps"],
                         "rel_error": (thr - want["throughput_mbps"]) / want["throughput_mbps"],
                         "jain": sum(r["jain"] for r in runs) / seeds, "ns3_jain": want["jain"]})
    _emit({"rows": rows}, as_json, "Saturated uplink vs ns-3 3.44")


@command.command("ns3-delay")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--profile", type=click.Choice(["ns3", "linux"]), default="ns3", show_default=True,
              help="ns3: ns-3's queueing, ns-3's numbers are targets; linux: the Linux AP path, "
                   "checked for VI below BE at every N.")
@click.option("--n", "ns", type=click.Choice([str(n) for n in downlink_anchor.NS]), multiple=True,
              help="Station counts to run (repeatable); default all of 1, 2, 5, 10, 20, 50.")
@click.option("--seconds", default=10.0, show_default=True, type=click.FloatRange(min=0.1, max=3600),
              help="Measured simulated seconds per point (ns-3's anchor: 10).")
@click.option("--seed", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--anchors", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="ns-3 details.csv (default: shared/anchors/ns3/details.csv beside the repository).")
def ns3_delay(as_json: bool, profile: str, ns: tuple[str, ...], seconds: float, seed: int,
              anchors: Path | None) -> None:
    """Per-packet delay of a 10 Mbit/s video beside saturating background, AC_VI and AC_BE, against
    ns-3 3.44's downlink anchor (shared/anchors/ns3/RESULTS.md §4)."""
    grid = tuple(sorted(int(n) for n in ns)) or downlink_anchor.NS
    try:
        ref = ns3_downlink(anchors)
    except (OSError, ValueError, KeyError) as e:
        raise click.UsageError(f"cannot read the ns-3 downlink anchors: {e}") from None
    if lacking := missing(ref, ("dl_video_vi", "dl_video_be"), grid):
        raise click.UsageError(f"the ns-3 anchors file has no row for {', '.join(lacking)}")
    window = downlink_anchor.Window(seconds=seconds)
    rows = downlink_anchor.rows(ref, grid, profile, seed, window)
    order = downlink_anchor.ordering(rows)
    ok = all(order.values()) and all(v for r in rows for k, v in r.items() if k.startswith("ok_"))
    doc = {"profile": profile, "seed": seed, "seconds": seconds, "rows": rows,
           "vi_below_be": {str(n): v for n, v in order.items()}, "all_targets_met": ok}
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
        return
    title = f"Downlink video vs ns-3 3.44, lasthop / ns-3 ({profile} profile, seed {seed}, {seconds:g} s)"
    console().print(rows_table(title, [_delay_display(r) for r in rows]))
    console().print(f"VI below BE at every N: {all(order.values())}   all targets met: {ok}")


def _delay_display(r: dict[str, Any]) -> dict[str, str]:
    """One row of ``ns3-delay`` as "lasthop / ns-3" cells and the targets it misses."""
    def pair(key: str, fmt: str) -> str:
        ours = "-" if r[key] is None else format(r[key], fmt)
        return f"{ours} / {format(r['ns3_' + key], fmt)}"
    out = {"video": r["case"].upper(), "N": str(r["n"]), "video Mbit/s": pair("video_mbps", ".2f"),
           "loss": pair("video_loss", ".1%"), "p50 ms": pair("p50_ms", ".3g"), "p99 ms": pair("p99_ms", ".3g"),
           "p99.9 ms": pair("p999_ms", ".3g"), "max ms": pair("max_ms", ".3g"),
           "aggregate Mbit/s": pair("aggregate_mbps", ".1f")}
    misses = [k.removeprefix("ok_") for k, v in r.items() if k.startswith("ok_") and not v]
    if any(k.startswith("ok_") for k in r):
        out["targets"] = "met" if not misses else "missed: " + ", ".join(misses)
    return out


# --- an independent implementation of the IEEE TXTIME formula (wifi-model.md §1.3, §2.1–2.2) ---
_N_SD = {"ofdm": {20: 48}, "ht": {20: 52, 40: 108}, "vht": {20: 52, 40: 108, 80: 234, 160: 468},
         "he": {20: 234, 40: 468, 80: 980, 160: 1960}}
_MOD = [(1, Fraction(1, 2)), (2, Fraction(1, 2)), (2, Fraction(3, 4)), (4, Fraction(1, 2)), (4, Fraction(3, 4)),
        (6, Fraction(2, 3)), (6, Fraction(3, 4)), (6, Fraction(5, 6)), (8, Fraction(3, 4)), (8, Fraction(5, 6)),
        (10, Fraction(3, 4)), (10, Fraction(5, 6))]
_OFDM = [(1, Fraction(1, 2)), (1, Fraction(3, 4)), (2, Fraction(1, 2)), (2, Fraction(3, 4)), (4, Fraction(1, 2)),
         (4, Fraction(3, 4)), (6, Fraction(2, 3)), (6, Fraction(3, 4))]
_N_LTF = [1, 2, 4, 4, 6, 6, 8, 8]


def ieee_txtime_ns(tx: dict[str, Any], n_es: int, length: int, sgi_round4: bool = True) -> int:
    """TXTIME in ns of a PSDU of ``length`` bytes, from the standard's formula (5 GHz)."""
    std, mcs, w, gi, nss = tx["standard"], tx["mcs"], tx["width_mhz"], tx["gi_ns"], tx["nss"]
    bpscs, rate = (_OFDM if std == "ofdm" else _MOD)[mcs]
    n_dbps = nss * _N_SD[std][w] * bpscs * rate
    if std == "he":
        n_dbps = Fraction(int(n_dbps))  # 802.11ax tables floor N_CBPS·R
    tail = 0 if tx.get("ldpc") else 6 * n_es
    n_sym = ceil((16 + 8 * length + tail) / n_dbps) if length else 0
    if std == "ofdm":
        return int(20_000 + n_sym * 4_000)
    if std == "he":
        return int((44_000 if nss == 1 else 36_000 + 8_000 * _N_LTF[nss - 1]) + n_sym * (12_800 + gi))
    data = n_sym * (3_200 + gi)
    if gi == 400 and sgi_round4:
        data = ceil(data / 4_000) * 4_000
    ltf = 4_000 * _N_LTF[nss - 1]
    pre = 8_000 + 8_000 + 4_000 + 8_000 + 4_000 + ltf + (4_000 if std == "vht" else 0)
    return int(pre + data)


@command.command("airtime")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def airtime(as_json: bool) -> None:
    """PPDU durations of every MCS × width × GI × streams of each standard against the IEEE formula."""
    lengths = [14, 32, 200, 1538, 4000, 12350, 65535]
    rows = []
    for std in ("ofdm", "ht", "vht", "he"):
        lens = [x for x in lengths if not (std == "ofdm" and x > 4095)]
        table = _lasthop.airtime_table(std, lens)
        worst, bad = 0, 0
        for entry in table:
            for length, got in zip(lens, entry["durations_ns"]):
                want = ieee_txtime_ns(entry["txvector"], entry["n_es"], length)
                worst = max(worst, abs(got - want))
                bad += got != want
        rows.append({"standard": std, "txvectors": len(table), "lengths": len(lens),
                     "max_abs_error_ns": worst, "mismatches": bad})
    _emit({"rows": rows}, as_json, "PPDU airtime vs the IEEE TXTIME formula")
