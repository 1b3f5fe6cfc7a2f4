"""lasthop: the fast, faithful simulator of the Wi-Fi last hop for real-time traffic.

    import lasthop
    sc = lasthop.Scenario.load("examples/quickstart.toml")
    res = lasthop.run(sc, seed=7)
    res.flows                      # one row per flow (pandas)
    res.packets                    # one row per packet, a timestamp per stage
    res.save("runs/quickstart")    # packets.parquet, flows.parquet, summary.json
    sw = lasthop.sweep("examples/home_rtc.toml", grid={"variant": ["linux_fq_codel", "law"]}, seeds=5)
    sw.table                       # one row per point × flow, the grid's parameters as columns

The engine is the Rust core behind the private module ``lasthop._lasthop``.
"""

from typing import TYPE_CHECKING

from lasthop._lasthop import __version__
from lasthop.errors import LasthopError, ScenarioError, TraceFormatError
from lasthop.result import RunResult
from lasthop.runner import run
from lasthop.scenario import Scenario
from lasthop.sim import Egress, Sim

if TYPE_CHECKING:
    from lasthop.sweeps import SweepResult, sweep


if not TYPE_CHECKING:
    def __getattr__(name: str) -> object:
        """``sweep`` and ``SweepResult``, imported when first named: ``lasthop run`` never needs them, and
        they cost every command's start-up a few ms (tempfile, shutil, random). Hidden from type
        checkers, which would otherwise accept any name of the package."""
        if name in ("sweep", "SweepResult"):
            from lasthop import sweeps

            globals()[name] = value = getattr(sweeps, name)
            return value
        raise AttributeError(f"module 'lasthop' has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*globals(), "sweep", "SweepResult"})


__all__ = ["Scenario", "run", "Sim", "Egress", "RunResult", "sweep", "SweepResult", "LasthopError", "ScenarioError", "TraceFormatError", "__version__"]
