"""Subcommands of the ``lasthop`` CLI, one module each; every module exposes ``command``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


class OutDir(click.Path):
    """The type of every ``--out``: a directory path as ``click.Path`` takes it, but not an empty one,
    which named the current directory without a word (``--out ''`` wrote a run's tables into it)."""

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail("an empty path: give a directory (`.` for the current one)", param, ctx)
        return super().convert(value, param, ctx)
