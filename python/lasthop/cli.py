"""The ``lasthop`` command: a click group whose subcommands live in ``lasthop.commands``.

Each public module of ``lasthop.commands`` (name not starting with ``_``) is one subcommand and exposes
``command`` (a ``click.Command`` or group). Adding a subcommand is adding a module: nothing here needs
editing, so work on different subcommands never collides. Modules keep heavy imports (pandas, pyarrow)
inside their functions, so ``lasthop check`` starts fast. The group turns lasthop's own errors into clean messages and exit codes, so no command
prints a traceback for bad input:

    0    success
    1    a lasthop error that is not the user's input (e.g. the run directory cannot be written)
    2    bad input: an invalid or missing scenario, a bad flag (click's usage errors also exit 2)
    130  interrupted (Ctrl-C); a run directory is never left looking complete
"""

from __future__ import annotations

import importlib
import pkgutil
import signal
import threading
from typing import Any

import click

from lasthop import __version__, commands
from lasthop.errors import LasthopError, ScenarioError

__all__ = ["cli", "main", "EXIT_USAGE", "EXIT_INTERRUPTED"]

EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130



def command_modules() -> list[str]:
    """Names of the subcommand modules in ``lasthop.commands``, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def scenario_error_lines(e: ScenarioError) -> list[str]:
    """``error: FILE: flows[2].rate_mbps: ...`` lines (the file is named once per line, if known)."""
    out = []
    for line in e.lines():
        if e.source and not line.startswith(e.source):
            line = f"{e.source}: {line}"
        out.append(f"error: {line}")
    return out


class LasthopGroup(click.Group):
    """A group that maps lasthop errors and Ctrl-C to exit codes for every subcommand. Subcommands are
    imported when named (``lasthop run`` imports ``lasthop.commands.run`` only; ``--help`` lists them
    all): importing every module first cost each command 0.15 s of start-up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return command_modules()

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in command_modules():
            return None
        module = importlib.import_module(f"lasthop.commands.{name}")
        command = getattr(module, "command", None)
        if not isinstance(command, click.Command):
            raise ImportError(f"lasthop.commands.{name} must define `command`, a click.Command")
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ScenarioError as e:
            for line in scenario_error_lines(e):
                click.echo(line, err=True)
            ctx.exit(EXIT_USAGE)
        except LasthopError as e:
            click.echo(f"error: {e}", err=True)
            ctx.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            # What was finished is on disk and the rest cleaned up; more presses while the process
            # winds down (joining worker processes at exit) must not print tracebacks. Only when the
            # command is the process (``main``), not a call inside someone's program.
            if _AS_PROCESS and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=LasthopGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lasthop")
def cli() -> None:
    """lasthop: a fast, deterministic simulator of the Wi-Fi last hop."""


_AS_PROCESS = False
"""Whether the command is the whole process (:func:`main`), as opposed to ``cli`` called in a program."""


def main() -> None:
    """Entry point of the ``lasthop`` console script (and ``python -m lasthop``)."""
    global _AS_PROCESS
    _AS_PROCESS = True
    cli(prog_name="lasthop")
