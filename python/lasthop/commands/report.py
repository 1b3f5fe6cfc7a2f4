"""``lasthop report``: one offline HTML page (figures and tables) comparing run directories."""

from __future__ import annotations

from pathlib import Path

import click

from lasthop.commands import OutDir



@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=OutDir(),
              help="Directory for report.html and its PNGs [default: RUN_DIR/report for one run, else "
                   "report/ beside the run directories].")
@click.option("--title", help="Page title [default: the scenario's name and the number of runs].")
@click.pass_context
def command(ctx: click.Context, run_dirs: tuple[Path, ...], out: Path | None, title: str | None) -> None:
    """Write an HTML report of RUN_DIR... (run directories of `lasthop run`, or the directory `lasthop
    compare` wrote, which stands for its runs): a table of every flow metric per run, latency CCDFs,
    time series and the per-layer breakdown."""
    from lasthop.cli import EXIT_USAGE
    import warnings

    from lasthop.report import LeftOut, RunDirError, build_report

    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", LeftOut)
            try:
                path = build_report(run_dirs, out, title)
            finally:
                for w in said:  # runs left out, said as the CLI says things; other warnings as Python shows them
                    if issubclass(w.category, LeftOut):
                        click.echo(f"warning: {w.message}", err=True)
                    else:
                        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    except RunDirError as e:
        click.echo(f"error: {e}", err=True)
        ctx.exit(EXIT_USAGE)
    click.echo(f"report: {path}")
