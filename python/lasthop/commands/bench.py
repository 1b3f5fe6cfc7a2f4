"""``lasthop bench``: simulated seconds per wall second and engine events per second on the saturated
anchor scenarios, side by side with ns-3's speed on this machine kind (from the anchors)."""

from __future__ import annotations

import time

import click

from lasthop import _lasthop
from lasthop.anchors import ns3_results
from lasthop.commands.validate import NS, SCENARIOS, _emit


@click.command("bench")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--scenario", type=click.Choice(SCENARIOS), default=None, help="Run one scenario only.")
@click.option("--n", "n_only", type=click.IntRange(min=1), default=None, help="Run one station count only.")
@click.option("--seconds", default=10.0, show_default=True, help="Simulated seconds per run.")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1),
              help="Runs per point; the fastest is reported.")
def command(as_json: bool, scenario: str | None, n_only: int | None, seconds: float, repeat: int) -> None:
    """Speed of the 802.11 model on the saturated scenarios (whole run, fastest of --repeat)."""
    try:
        ref = ns3_results()
    except OSError:
        ref = {}
    rows = []
    for sc in [scenario] if scenario else SCENARIOS:
        for n in [n_only] if n_only else NS:
            best = float("inf")
            events = 0
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = _lasthop.saturation(sc, n, 1, 0.0, seconds)
                best = min(best, time.perf_counter() - t0)
                events = r["events"]
            row = {"scenario": sc, "n": n, "sim_seconds_per_wall_second": seconds / best,
                   "events_per_second": events / best}
            if (sc, n) in ref:
                ns3 = ref[(sc, n)]["sim_seconds_per_wall_second"]
                row["ns3_sim_seconds_per_wall_second"] = ns3
                row["speedup_vs_ns3"] = seconds / best / ns3
            rows.append(row)
    _emit({"rows": rows}, as_json, "lasthop speed (saturated scenarios)")
