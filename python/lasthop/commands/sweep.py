"""``lasthop sweep``: a scenario over a grid of values and seeds, resumable, gathered into one table."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lasthop.commands import OutDir

if TYPE_CHECKING:
    from lasthop.sweeps import Point


@click.command("sweep")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=OutDir(),
              help="Sweep directory: runs/<key>/ per point, results.parquet, summary.csv, report.html "
                   "[default: runs/sweep-<spec file stem>].")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs at a time in worker processes (local backend); results are identical to --jobs 1.")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where the runs go: this machine, or a Ray cluster (pip install 'lasthop[ray]').")
@click.option("--address", metavar="ADDR",
              help="Ray cluster address (e.g. ray://head:10001 or auto) [default: a local Ray instance].")
@click.option("--batch", type=click.IntRange(min=1), metavar="N",
              help="Runs per Ray task [default: about four tasks per CPU of the cluster].")
@click.option("--print-command", "print_point", metavar="KEY",
              help="Print the `lasthop run` command that reproduces point KEY (as listed in sweep.json), "
                   "and run nothing.")
@click.option("--list", "list_points", is_flag=True, help="List the points (key, parameters, seed) and run nothing.")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"out", "ran", "reused", "failed", "results"} as JSON on stdout, and nothing else.')
@click.pass_context
def command(ctx: click.Context, spec: Path, out: Path | None, jobs: int, backend: str, address: str | None,
            batch: int | None, print_point: str | None, list_points: bool, as_json: bool) -> None:
    """Run the scenario of sweep SPEC (TOML: scenario, [grid], seeds) at every point of its grid and
    seed, skipping points already complete in the sweep directory, then gather every point into one
    table (results.parquet: a row per point and flow) with a summary over seeds and a report."""
    from lasthop.cli import EXIT_ERROR, EXIT_USAGE
    from lasthop.commands._display import RunProgress
    from lasthop.sweeps import load_spec, plan, point_command, sweep

    if backend == "local" and (address is not None or batch is not None):
        raise click.UsageError("--address and --batch are the ray backend's (add --backend ray)")
    if backend == "ray" and ctx.get_parameter_source("jobs") is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--jobs sizes the local pool; on Ray every CPU of the cluster takes runs (--batch per task)")
    sp = load_spec(spec)
    root = out or Path("runs") / f"sweep-{spec.stem}"
    if print_point is not None or list_points:
        points = plan(sp)
        if list_points:
            for p in points:
                click.echo(f"{p.key}  seed={p.seed}  {p.label()}")
            return
        match = [p for p in points if p.key.startswith(print_point or "\0")]
        if len(match) != 1:
            raise click.BadParameter(f"{print_point!r} names {'no' if not match else 'more than one'} point "
                                     "(lasthop sweep --list shows the keys)", param_hint="--print-command")
        click.echo(point_command(sp, match[0], root))
        return
    n = len(plan(sp))
    click.echo(f"lasthop: sweep of {sp.scenario}: {n} point{'s' if n != 1 else ''} into {root}"
               + (f" ({jobs} at a time)" if backend == "local" and jobs > 1 else f" (on Ray)" if backend == "ray" else ""),
               err=True)

    progress = RunProgress()

    def done(p: Point, status: str, seconds: float) -> None:
        progress.done(f"{p.key} {p.label()} seed={p.seed}", status, seconds)

    started = time.time()
    try:
        res = sweep(sp, root, jobs=jobs, backend=backend, address=address, batch=batch, on_done=done,
                    on_plan=progress.plan)
    except KeyboardInterrupt:
        results = root / "results.parquet"
        gathered = results.is_file() and results.stat().st_mtime >= started
        click.echo(f"lasthop: stopped; finished points are complete in {root}/runs"
                   + (f" and gathered in {root}/results.parquet" if gathered else " (not gathered yet)")
                   + "; run the same command again to resume", err=True)
        raise
    if as_json:
        doc = {"out": str(res.out), "ran": res.ran, "reused": res.reused, "failed": res.failed,
               "results": str(res.out / "results.parquet")}
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        click.echo(f"{len(res.ran)} run now, {len(res.reused)} already complete, {len(res.failed)} failed")
        click.echo(f"results: {res.out / 'results.parquet'} (one row per point and flow); "
                   f"summary over seeds: {res.out / 'summary.csv'}; report: {res.out / 'report.html'}")
    for key, msg in res.failed.items():
        for line in msg.splitlines() or [""]:
            click.echo(f"error: point {key}: {line}", err=True)
    if res.failed:
        ctx.exit(EXIT_USAGE if res.input_error else EXIT_ERROR)

