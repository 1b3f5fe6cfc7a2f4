"""``lasthop replay RUN_DIR``: an emulation's recorded inputs through the same model, in simulation."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from lasthop.commands import OutDir
from lasthop.errors import LasthopError


@click.command("replay")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=OutDir(),
              help="Run directory for the replay [default: RUN_DIR/replay].")
@click.option("--json", "as_json", is_flag=True, help="Print the replay's summary as JSON on stdout.")
@click.pass_context
def command(ctx: click.Context, run_dir: Path, out: Path | None, as_json: bool) -> None:
    """Feed the real packets an emulation recorded (RUN_DIR/inputs.parquet) to the same scenario and seed
    in simulation, each at its model time: the model decides exactly as it did in real time. Exit 1 if
    the replay's event digest differs from the emulation's, 2 if RUN_DIR is not an emulation's run
    directory (or its files are damaged)."""
    from lasthop.cli import EXIT_ERROR, EXIT_USAGE
    from lasthop.emulate import replay
    from lasthop.errors import RunDirError

    try:
        res = replay(run_dir)
    except RunDirError as e:  # bad input, as `report` says of a run directory it cannot read
        click.echo(f"error: {e}", err=True)
        ctx.exit(EXIT_USAGE)
    out = out or run_dir / "replay"
    try:
        res.save(out)
    except OSError as e:
        raise LasthopError(f"cannot write the run directory {out}: {e.strerror or e}") from None
    rep = res.summary["replay_of"]
    if as_json:
        sys.stdout.write(res.summary_json())
    else:
        verdict = "identical to the emulation" if rep["identical"] else f"DIFFERS from the emulation's {rep['event_digest']}"
        click.echo(f"replay of {run_dir}: event digest {res.summary['event_digest']}, {verdict}; run directory {out}")
    if not rep["identical"]:
        ctx.exit(EXIT_ERROR)
