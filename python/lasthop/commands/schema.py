"""``lasthop schema``: the JSON Schema of scenario files."""

from __future__ import annotations

import click

from lasthop import _lasthop


@click.command("schema")
def command() -> None:
    """Print the JSON Schema of scenario files (every key, its type, default and meaning)."""
    click.echo(_lasthop.schema())
