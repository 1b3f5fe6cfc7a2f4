"""``lasthop reproduce NAME``: rerun a published experiment (scenarios built as data, every variant)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from lasthop.experiments import EXPERIMENTS, run_experiment, takes_trace


@click.command("reproduce")
@click.argument("name", type=click.Choice(sorted(EXPERIMENTS)))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--seed", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--quick", is_flag=True, help="Shorter runs (for smoke tests).")
@click.option("--trace", "trace", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Run trace-driven experiments over this capacity trace (pitree `time_s Mbps` or "
                   "Mahimahi) instead of their default trace families.")
def command(name: str, as_json: bool, seed: int, quick: bool, trace: Path | None) -> None:
    """Run experiment NAME and print its rows (one per variant and point)."""
    if trace is not None and not takes_trace(name):
        raise click.UsageError(f"experiment {name!r} is not trace-driven; --trace applies to: "
                               + ", ".join(sorted(n for n in EXPERIMENTS if takes_trace(n))))
    doc = run_experiment(name, seed=seed, quick=quick, trace=trace)
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
        return
    rows = doc["rows"]
    t = Table(title=f"{name} · seed {seed}", title_justify="left")
    for k in rows[0]:
        t.add_column(k, justify="left" if isinstance(rows[0][k], str) else "right")
    for r in rows:
        t.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in r.values()])
    Console().print(t)
