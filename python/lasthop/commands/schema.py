"""``lasthop schema``: the JSON Schema of scenario files."""

from __future__ import annotations

import json

import click

from lasthop import _lasthop


@click.command("schema")
@click.option("--markdown", "as_markdown", is_flag=True,
              help="Print a readable reference instead: every key by where it sits in a scenario file, with its "
                   "type, default and meaning (docs/scenario-reference.md is this output).")
def command(as_markdown: bool) -> None:
    """Print the JSON Schema of scenario files (every key, its type, default and meaning)."""
    if as_markdown:
        from lasthop.schema_doc import markdown

        click.echo(markdown(json.loads(_lasthop.schema())), nl=False)
        return
    click.echo(_lasthop.schema())
