"""``lasthop run``: run a scenario, save its run directory, print a summary."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import click

from lasthop.commands import OutDir
from lasthop.errors import LasthopError
from lasthop.scenario import Scenario


def default_out(sc: Scenario) -> Path:
    """``runs/<scenario name>`` (``runs/<scenario name>/<variant>`` for a variant, where ``lasthop
    compare`` puts it too when the name is the file's stem), with the name reduced to characters safe
    in a path."""
    safe = re.sub(r"[^\w.-]+", "-", sc.name).strip("-.") or "run"
    out = Path("runs") / safe
    return out / sc.variant if sc.variant else out


def parse_set(text: str) -> tuple[str, Any]:
    """``PATH=VALUE`` (VALUE a TOML value) → ``(PATH, value)``; a usage error says what is wrong."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    path, eq, value = text.partition("=")
    if not eq or not path.strip():
        raise click.BadParameter(f"{text!r}: write PATH=VALUE, e.g. 'stations[0].channel.snr_db=20'",
                                 param_hint="--set")
    try:
        return path.strip(), tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        raise click.BadParameter(f"{text!r}: {value.strip()!r} is not a TOML value (strings are quoted: "
                                 "--set 'name=\"x\"')", param_hint="--set") from None


def _check_writable(out: Path) -> None:
    """Fails before the run, not after it, when the run directory cannot be written."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".lasthop-write-test"
        probe.touch()
        probe.unlink()
    except OSError as e:
        from lasthop.cli import EXIT_USAGE

        click.echo(f"error: cannot write the run directory {out}: {e.strerror or e}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None


@click.command("run")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), help="Master seed (overrides the scenario's).")
@click.option("--out", type=OutDir(),
              help="Run directory to write [default: runs/<scenario name>].")
@click.option("--variant", metavar="NAME", help="Run the scenario's [[variants]] entry NAME instead of its base.")
@click.option("--set", "sets", multiple=True, metavar="PATH=VALUE",
              help="Set a value (a TOML value: 20, 0.5, true, \"text\", [1, 2], { type = \"fifo\" }) at a path "
                   "written as in a variant's `set`, e.g. --set 'stations[0].channel.snr_db=20' (repeatable; "
                   "after --variant).")
@click.option("--trace", type=click.Path(dir_okay=False, path_type=Path),
              help="Capacity trace (pitree `time_s Mbps` or Mahimahi) for every `capacity_trace` last hop.")
@click.option("--pcap", is_flag=True,
              help="Also write OUT/pcap/<node>.pcap for every end host of a flow: what its flows sent and "
                   "received, as `lasthop emulate` captures real nodes (raw IPv4 headers built from the model's "
                   "fields; Wireshark, tcpdump).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary as one JSON document on stdout, and nothing else.")
def command(scenario: Path, seed: int | None, out: Path | None, variant: str | None, sets: tuple[str, ...],
            trace: Path | None, pcap: bool, as_json: bool) -> None:
    """Run SCENARIO and write its run directory (packets, flows, rtt, frames and tx tables as Parquet,
    summary.json last)."""
    sc = Scenario.load(scenario, variant=variant)
    if sets:
        sc = sc.with_set(dict(parse_set(s) for s in sets))
    if trace is not None:
        sc = sc.with_trace(trace)
    if seed is not None:
        sc = sc.with_seed(seed)
    out = out or default_out(sc)
    _check_writable(out)
    if pcap and (out / "pcap").exists() and not (out / "pcap").is_dir():
        # Checked now: once the run is written, its captures could not be put in place.
        from lasthop.cli import EXIT_USAGE

        click.echo(f"error: cannot write the captures: {out / 'pcap'} exists and is not a directory", err=True)
        raise click.exceptions.Exit(EXIT_USAGE)
    label = f"{sc.name} (variant {sc.variant})" if sc.variant else sc.name
    click.echo(f"lasthop: running {label}: {sc.describe()}", err=True)

    from lasthop.runner import run

    # The summary's printer (rich: ≈ 60 ms to import) loads while the engine runs, which releases the
    # GIL; the import below then finds it loaded (or waits for it). Whole process on the ns-3 anchor's
    # default window: A/B 0.93 (farm-bench -n 14).
    def load_printer() -> None:
        try:
            importlib.import_module("lasthop.commands._display")
        except Exception:  # noqa: BLE001 - the import below raises it where it is reported
            pass

    printer = threading.Thread(target=load_printer, daemon=True)
    partial = out / ".pcap.partial"
    try:
        if pcap:
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
        if not as_json:
            printer.start()
        result = run(sc, progress=True, pcap_dir=partial if pcap else None, out=out)
        if pcap:
            shutil.rmtree(out / "pcap", ignore_errors=True)
            os.replace(partial, out / "pcap")
    except OSError as e:
        raise LasthopError(f"cannot write the run directory {out}: {e.strerror or e}") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        if printer.is_alive():  # a failed run exits without an import left half done
            printer.join()
    if as_json:
        sys.stdout.write(result.summary_json())
        sys.stdout.flush()
        return
    from lasthop.commands._display import print_run

    print_run(result, out)
