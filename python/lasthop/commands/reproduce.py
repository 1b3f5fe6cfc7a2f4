"""``lasthop reproduce NAME``: rerun a published experiment (scenarios built as data, every variant)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from lasthop.commands import OutDir
from lasthop.commands._display import RunProgress, console, rows_table
from lasthop.commands.run import _check_writable
from lasthop.experiments import EXPERIMENTS, quick_scope, run_experiment, takes_trace


@click.command("reproduce")
@click.argument("name", type=click.Choice(sorted(EXPERIMENTS)))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--seed", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--quick", is_flag=True, help="Shorter runs (for smoke tests).")
@click.option("--trace", "trace", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Run trace-driven experiments over this capacity trace (pitree `time_s Mbps` or "
                   "Mahimahi) instead of their default trace families.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs at a time in worker processes; the rows are identical to --jobs 1.")
@click.option("--out", "out", type=OutDir(),
              help="Also write DIR/experiment.json and DIR/report.html (the paper's numbers beside ours, "
                   "a chart per metric by variant, every row), and keep every run in DIR/runs/<key> as a "
                   "sweep does: rerun with the same DIR, only the runs not complete there run.")
def command(name: str, as_json: bool, seed: int, quick: bool, trace: Path | None, jobs: int, out: Path | None) -> None:
    """Run experiment NAME and print its rows (one per variant and point)."""
    if trace is not None and not takes_trace(name):
        raise click.UsageError(f"experiment {name!r} is not trace-driven; --trace applies to: "
                               + ", ".join(sorted(n for n in EXPERIMENTS if takes_trace(n))))
    if out is not None:
        _check_writable(out)
    progress = RunProgress()
    doc = run_experiment(name, seed=seed, quick=quick, trace=trace, jobs=jobs, cache=out, on_run=progress.done,
                         on_plan=progress.plan)
    if out is not None:
        from lasthop.report.experiment import write_experiment_report  # matplotlib: only when writing

        page = write_experiment_report(doc, out)
        if not as_json:
            runs = doc["runs"]
            console().print(f"report: {page} · runs: {runs['ran']} ran, {runs['reused']} reused from {out / 'runs'}")
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
        return
    con = console()
    con.print(rows_table(f"{name} · seed {seed}" + (" · quick" if quick else ""), doc["rows"]))
    if quick:
        q = quick_scope(name, seed, trace)
        cases = ("every case" if len(q["cases"]) >= q["full_cases"] else
                 f"{len(q['cases'])} of {q['full_cases']} cases ({'; '.join(q['cases'])})")
        length = (f"runs of up to {q['seconds']:g} s instead of {q['full_seconds']:g} s"
                  if q["seconds"] < q["full_seconds"] else "runs at full length")
        con.print(f"quick: {cases}, {length}; without --quick every case runs at full length")
    if doc.get("checks"):
        verdict = {True: "✓", False: "✗", None: "–"}
        met = sum(c["met"] is True for c in doc["checks"])
        con.print(rows_table(f"against the paper: {met} of {len(doc['checks'])} met",
                             [{**c, "met": verdict[c["met"]]} for c in doc["checks"]]))
    for k, v in doc.items():
        if k not in ("rows", "paper", "experiment", "figures", "runs", "checks", "seed", "quick", "series"):
            con.print(f"{k.replace('_', ' ')}: {json.dumps(v, sort_keys=True)}")
    if "paper" in doc:
        con.print(f"paper: {json.dumps(doc['paper'], ensure_ascii=False, sort_keys=True)}")
