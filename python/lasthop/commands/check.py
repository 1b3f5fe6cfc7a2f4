"""``lasthop check``: validate a scenario file (its base and every variant) without running it."""

from __future__ import annotations

from pathlib import Path

import click

from lasthop.scenario import Scenario


@click.command("check")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
def command(scenario: Path) -> None:
    """Check SCENARIO (a TOML or JSON file) and each of its variants: print "ok" and what each
    describes, or every problem."""
    sc = Scenario.load(scenario)
    variants = Scenario.variants(scenario)
    click.echo(f"ok: {sc.name}: {sc.describe()}")
    for v in variants:
        click.echo(f"ok: {sc.name} (variant {v.variant}): {v.describe()}")
