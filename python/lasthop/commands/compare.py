"""``lasthop compare``: run every variant of a scenario, then one report and one table of them all."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import click

from lasthop.commands import OutDir


# The terminal table: these flows.parquet columns when present (and set for some flow), in this order.
# (column, header, scale, decimals); the HTML report and --json carry every column.
KEY_METRICS = (
    # (flow column, header, scale, decimals); times in ms, rates in Mbit/s, ratios in %.
    ("throughput_mbps", "Mb/s", 1.0, 1),
    ("goodput_mbps", "goodput", 1.0, 1),
    ("bitrate_mbps", "video", 1.0, 1),
    ("loss_rate", "loss%", 100.0, 1),
    ("latency_p99_ms", "p99", 1.0, 1),
    ("rtt_p99_ms", "RTT p99", 1.0, 1),
    ("frame_latency_p99_ms", "frame p99", 1.0, 1),
    ("frame_deadline_miss_rate", "late%", 100.0, 1),
    ("freezes", "freezes", 1.0, 0),
    ("fps_under_10_ratio", "<10fps%", 100.0, 1),
)


@click.command("compare")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=OutDir(),
              help="Directory for the runs (OUT/<variant>/) and the report (OUT/report/) "
                   "[default: runs/<scenario file stem>].")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), help="Master seed for every variant (overrides the file's).")
@click.option("--variant", "names", multiple=True, metavar="NAME",
              help="Run only this variant (repeatable; in the order given) [default: every variant].")
@click.option("--seeds", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Run every variant over this many seeds (the scenario's, then the next ones) and print "
                   "mean ± 95 % CI per metric with a verdict: which variant is best, and whether "
                   "significantly.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs at a time, in worker processes; results are identical to --jobs 1.")
@click.option("--title", help="Report title [default: the scenario's name and the number of runs].")
@click.option("--json", "as_json", is_flag=True,
              help='Print one JSON document {"rows": [...], "report": path} on stdout, and nothing else.')
@click.pass_context
def command(ctx: click.Context, scenario: Path, out: Path | None, seed: int | None, names: tuple[str, ...],
            seeds: int, jobs: int, title: str | None, as_json: bool) -> None:
    """Run every variant of SCENARIO (or the base when it has none), write a report comparing them,
    and print one row per variant and flow."""
    from lasthop.cli import EXIT_ERROR, EXIT_USAGE
    from lasthop.compare import Outcome, default_root, plan, run_jobs

    root = out or default_root(scenario)
    todo = plan(scenario, root, names, seed, seeds)
    workers = min(jobs, len(todo))
    click.echo(f"lasthop: comparing {len(todo)} run{'s' if len(todo) != 1 else ''} of {scenario} into {root}"
               + (f" ({workers} at a time)" if workers > 1 else ""), err=True)

    def done(o: Outcome) -> None:
        if o.ok:
            click.echo(f"  {o.job.name}: done in {o.seconds:.1f} s → {o.job.out}", err=True)
        else:
            click.echo(f"  {o.job.name}: failed", err=True)

    outcomes, interrupted = run_jobs(todo, workers, done)
    finished = [o for o in outcomes if o.ok]
    if interrupted:
        kept = ", ".join(str(o.job.out) for o in finished) or "none"
        left = ", ".join(o.job.name for o in outcomes if not o.ok) or "none"
        click.echo(f"lasthop: stopped; finished runs (complete): {kept}; not finished: {left}", err=True)
        raise KeyboardInterrupt

    report = None
    # Over several seeds the report shows each variant's first seed; the verdict covers them all.
    first: dict[str, Any] = {}
    for o in finished:  # in plan order: each variant's seeds ascending
        first.setdefault(o.job.variant, o)
    shown = finished if seeds == 1 else list(first.values())
    rows = _rows(finished)
    doc: dict[str, Any] = {"rows": rows}
    verdict = None
    if seeds > 1:
        from lasthop.verdict import summarize, verdicts

        verdict = {"seeds": seeds, "summary": summarize(rows), "verdicts": verdicts(rows)}
        doc |= {"summary": verdict["summary"], "verdicts": verdict["verdicts"]}
        (root / "verdict.json").write_text(json.dumps(verdict, indent=1) + "\n")
    if finished:
        from lasthop.report import build_report

        report = build_report([o.job.out for o in shown], root / "report", title, verdict)
    doc["report"] = str(report) if report else None
    if as_json:
        sys.stdout.write(json.dumps(doc, allow_nan=False) + "\n")
    else:
        if seeds > 1:
            _print_verdict(doc, scenario, seeds)
        else:
            _print_table(rows, scenario)
        if report:
            click.echo(f"report: {report}" + (" (each variant's first seed)" if seeds > 1 else ""))
    failed = [o for o in outcomes if o.status == "failed"]
    for o in failed:
        for line in o.message.splitlines() or [""]:
            click.echo(f"error: variant {o.job.name}: {line}", err=True)
    if failed:
        click.echo(f"lasthop: {len(failed)} of {len(outcomes)} runs failed; the other run directories are complete",
                   err=True)
        ctx.exit(EXIT_USAGE if all(o.input_error for o in failed) else EXIT_ERROR)


def _plain(v: Any) -> Any:
    """A flows.parquet cell as a JSON value (numpy scalars to Python, NaN and NA to null)."""
    if hasattr(v, "item") and callable(v.item):
        v = v.item()
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    if not isinstance(v, (bool, int, float, str)):
        try:
            import pandas as pd

            if pd.isna(v):
                return None
        except (TypeError, ValueError):
            pass
        return str(v)
    return v


def _rows(finished: list[Any]) -> list[dict[str, Any]]:
    """One dict per (run, flow): ``variant``, ``seed``, ``run_dir`` and every flows.parquet column."""
    import pandas as pd

    rows = []
    for o in finished:
        flows = pd.read_parquet(o.job.out / "flows.parquet")
        seed = o.job.scenario.to_dict().get("seed")
        for rec in flows.to_dict("records"):
            rows.append({"variant": o.job.variant or o.job.name, "seed": seed, "run_dir": str(o.job.out),
                         **{str(k): _plain(v) for k, v in rec.items()}})
    return rows


def _key_table(title: str, cols: list[tuple[str, str, float, int]]) -> Any:
    """An empty terminal table: variant, flow, then one right-aligned column per key metric."""
    from rich import box
    from rich.table import Table

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("variant", no_wrap=True)
    t.add_column("flow", no_wrap=True)
    for _, header, _, _ in cols:
        t.add_column(header, justify="right", no_wrap=True)
    return t


def _print_verdict(doc: dict[str, Any], scenario: Path, seeds: int) -> None:
    """Mean ± 95 % CI per variant, flow and key metric (the terminal table's columns), then the verdicts."""
    from rich.console import Console

    from lasthop.verdict import sentence

    cells = {(s["variant"], s["flow"], s["metric"]): s for s in doc["summary"]}
    cols = [m for m in KEY_METRICS if any(k[2] == m[0] for k in cells)]
    t = _key_table(f"{scenario.stem}: mean ± 95 % CI over {seeds} seeds (ms, Mbit/s)", cols)
    last = None
    for variant, flow in dict.fromkeys((s["variant"], s["flow"]) for s in doc["summary"]):
        row = []
        for key, _, scale, decimals in cols:
            c = cells.get((variant, flow, key))
            if c is None:
                row.append("–")
            else:
                ci = "" if c["ci95"] is None else f" ±{c['ci95'] * scale:,.{decimals}f}"
                row.append(f"{c['mean'] * scale:,.{decimals}f}{ci}")
        t.add_row(variant if variant != last else "", flow, *row)
        last = variant
    con = Console(width=None if sys.stdout.isatty() else 160, highlight=False)
    con.print(t)
    con.print("verdict (Welch's t-test between the best variant and each other, p < 0.05):")
    for v in doc["verdicts"]:
        con.print("  " + sentence(v))


def _print_table(rows: list[dict[str, Any]], scenario: Path) -> None:
    from rich.console import Console
    from rich.text import Text

    cols = [m for m in KEY_METRICS if any(r.get(m[0]) is not None for r in rows)]
    t = _key_table(f"{scenario.stem}: {len({r['variant'] for r in rows})} runs (ms, Mbit/s; full table in the report)", cols)
    last = None
    for r in rows:
        cells = []
        for key, _, scale, decimals in cols:
            v = r.get(key)
            cells.append("–" if not isinstance(v, (int, float)) else f"{v * scale:,.{decimals}f}")
        t.add_row(Text(r["variant"] if r["variant"] != last else ""), Text(str(r.get("flow", ""))), *cells,
                  end_section=False)
        last = r["variant"]
    Console(width=None if sys.stdout.isatty() else 120, highlight=False).print(t)
