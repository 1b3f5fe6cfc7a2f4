"""``lasthop check``: validate a scenario file without running it."""

from __future__ import annotations

from pathlib import Path

import click

from lasthop.scenario import Scenario


@click.command("check")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
def command(scenario: Path) -> None:
    """Check SCENARIO (a TOML or JSON file): print "ok" and what it describes, or every problem."""
    sc = Scenario.load(scenario)
    click.echo(f"ok: {sc.name}: {sc.describe()}")
