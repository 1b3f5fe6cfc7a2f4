"""``lasthop emulate``: real applications through the modelled last hop, in real time."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from lasthop.commands import OutDir
from lasthop.errors import LasthopError
from lasthop.scenario import Scenario


@click.command("emulate")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND...]")
@click.option("--duration", "duration_s", type=click.FloatRange(min=0, min_open=True), metavar="S",
              help="Stop after S seconds [default: when COMMAND exits, or the scenario's duration_s].")
@click.option("--out", type=OutDir(),
              help="Run directory [default: runs/<scenario name>-emulated].")
@click.option("--in", "node", metavar="NODE",
              help="The real node whose namespace runs COMMAND [default: the `to` end of the first external flow].")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), help="Master seed (overrides the scenario's).")
@click.option("--variant", metavar="NAME", help="Emulate the scenario's [[variants]] entry NAME instead of its base.")
@click.option("--lag-budget-us", type=click.FloatRange(min=0, min_open=True), default=500.0, show_default=True,
              help="The run is invalid (exit 1) when the p99.9 of the packets' lag exceeds this.")
@click.option("--spin-us", type=click.FloatRange(min=0), default=100.0, show_default=True,
              help="Poll without sleeping for this long before each model wakeup (precision against CPU).")
@click.option("--pcap/--no-pcap", default=True, show_default=True,
              help="Write OUT/pcap/<node>.pcap: what each real node sent into the model and received from it.")
@click.option("--bypass", is_flag=True,
              help="Relay real packets straight through, without the model (measures the emulator's own cost).")
@click.option("--control", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
              help="Take run-time commands on this Unix socket while running: JSON lines "
                   '{"target": "aps.ap.lastpq", "set": {"demand_ms": {"vr": 15}}} (COMMAND finds it in $LASTHOP_CONTROL).')
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document on stdout.")
@click.pass_context
def command(ctx: click.Context, scenario: Path, cmd: tuple[str, ...], duration_s: float | None, out: Path | None,
            node: str | None, seed: int | None, variant: str | None, lag_budget_us: float, spin_us: float, pcap: bool, bypass: bool,
            control: Path | None, as_json: bool) -> None:
    """Run SCENARIO in real time, with the endpoints of its `external` flows as real network namespaces
    (each with a TUN device and an address 10.77.0.k), and COMMAND in one of them. Real packets cross the
    modelled network between them; modelled flows share it. Needs root (see `lasthop doctor`)."""
    from lasthop.cli import EXIT_ERROR
    from lasthop.commands.run import _check_writable
    from lasthop.emulate import EmulationError, emulate

    command_line = list(cmd[1:] if cmd[:1] == ("--",) else cmd)
    sc = Scenario.load(scenario, variant=variant)
    out = out or Path("runs") / f"{sc.name}-emulated"
    _check_writable(out)
    if not command_line and duration_s is None:
        click.echo(f"lasthop: no command: emulating for the scenario's duration ({sc.duration_s:g} s)", err=True)
    try:
        em = emulate(sc, command_line, seed=seed, duration_s=duration_s, node=node, lag_budget_us=lag_budget_us,
                     spin_us=spin_us, stdout_to_stderr=as_json, pcap=pcap, bypass=bypass, control=control)
    except EmulationError as e:
        raise click.UsageError(str(e)) if "not a real node" in str(e) or "no `external` flow" in str(e) \
            else LasthopError(f"emulation: {e}") from None
    try:
        em.save(out)
    except OSError as e:
        raise LasthopError(f"cannot write the run directory {out}: {e.strerror or e}") from None
    emu = em.result.summary["emulation"]
    if as_json:
        sys.stdout.write(em.result.summary_json())
    else:
        from lasthop.commands._display import print_run

        print_run(em.result, out)
        nodes = ", ".join(f"{n['node']} {n['address']} ({n['netns']})" for n in emu["nodes"])
        click.echo(f"real nodes: {nodes}")
        if control is not None:
            click.echo(f"control socket {control}: {emu['control_commands']} command(s) applied (summary.json's scenario has them)")
        click.echo(f"packets: {emu['injected']} into the model, {emu['written']} out, {emu['unmapped']} not carried; "
                   f"lag p50 {emu['lag_p50_us']:.0f} µs, p99.9 {emu['lag_p999_us']:.0f} µs, "
                   f"max {emu['lag_max_us']:.0f} µs (budget {lag_budget_us:g} µs at p99.9)")
    failed = False
    if not emu["valid"]:
        click.echo(f"error: the emulation fell behind the model: p99.9 lag {emu['lag_p999_us']:.0f} µs > budget "
                   f"{lag_budget_us:g} µs; summary.json marks it invalid (try a quieter machine, pinning, "
                   "or --lag-budget-us)", err=True)
        failed = True
    status = emu["command_status"]
    if status not in (None, 0):
        click.echo(f"error: the command exited with status {status}", err=True)
        failed = True
    if failed:
        ctx.exit(EXIT_ERROR)
