"""Real-time emulation: real applications and the kernel's TCP in network namespaces, carried through
the modelled last hop of a scenario (the Rust crate ``lasthop-emu``).

Every endpoint of the scenario's ``external`` flows is a *real node*: a network namespace
``lh-<pid>-<node>`` with a TUN device and the address ``10.77.0.k`` (k from 1, in flow order). What a
real node sends to another real node's address enters the model at the flow between them and comes out
at the other end when the model delivers it, in real time; modelled flows share the channel with it.
``command`` runs in one real node's namespace (the ``to`` end of the first external flow by default),
told every real node's address and namespace in ``LASTHOP_IP_<NODE>`` / ``LASTHOP_NS_<NODE>``; the
emulation ends when it exits, at ``duration_s``, or at the scenario's end.

The result is a :class:`~lasthop.RunResult` like a simulated run's, whose summary has an ``emulation``
section: the lag of every packet written out (write time − the model's release time: p50, p99, p99.9,
max), whether the p99.9 is within ``lag_budget_us`` (``valid``), packets carried, unmapped and not
writable, the real nodes, and the command's exit status. Needs root (namespaces, ``/dev/net/tun``) and
iproute2; ``lasthop doctor`` checks them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lasthop import _lasthop
from lasthop.errors import LasthopError
from lasthop.result import RunResult
from lasthop.runner import _as_scenario, _cancel, _wait
from lasthop.scenario import Scenario

__all__ = ["emulate", "Emulation", "EmulationError"]

LAG_FILE = "lag.parquet"


class EmulationError(LasthopError):
    """The emulation could not be set up or run (privileges, iproute2, /dev/net/tun, the command)."""


@dataclass
class Emulation:
    """An emulation's results: the run (``result.summary["emulation"]`` has the lag figures and
    counters) and the lag of every packet written to a real node (``lag``: ``packet_id``, ``lag_us``;
    ``packet_id`` is the packet's row in ``result.packets``)."""

    result: RunResult
    lag: Any

    @property
    def valid(self) -> bool:
        """The p99.9 lag is within the budget."""
        return bool(self.result.summary["emulation"]["valid"])

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """The run directory of :meth:`RunResult.save` plus ``lag.parquet`` (written first, so
        ``summary.json``, last, still marks a complete directory)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "summary.json").unlink(missing_ok=True)
        tmp = d / f".{LAG_FILE}.tmp"
        self.lag.to_parquet(tmp, index=False)
        os.replace(tmp, d / LAG_FILE)
        return self.result.save(d)


def emulate(scenario: Scenario | str | os.PathLike[str] | Mapping[str, Any], command: Sequence[str] = (), *,
            seed: int | None = None, duration_s: float | None = None, node: str | None = None,
            lag_budget_us: float = 500.0, spin_us: float = 100.0, stdout_to_stderr: bool = False) -> Emulation:
    """Runs ``scenario`` in real time with its external flows' endpoints as real namespaces; see the
    module docs. Ctrl-C ends the emulation (namespaces removed) and raises KeyboardInterrupt."""
    sc = _as_scenario(scenario)
    if seed is not None:
        sc = sc.with_seed(seed)
    handle = _lasthop.Progress()
    done = threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["out"] = _lasthop.emulate(sc.to_json(), sc.base_dir, None, duration_s, lag_budget_us, spin_us,
                                          list(command), node, handle, stdout_to_stderr)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            box["err"] = e
        finally:
            done.set()

    threading.Thread(target=work, name="lasthop-emulate", daemon=True).start()
    try:
        _wait(done, handle, sc, show=False)
    except BaseException:
        _cancel(done, handle)
        raise
    err = box.get("err")
    if isinstance(err, ValueError):
        raise EmulationError(str(err)) from None
    if isinstance(err, OSError):
        raise EmulationError(str(err)) from None
    if err is not None:
        raise err
    import numpy as np
    import pandas as pd

    out = box["out"]
    res = RunResult._from_native(out, variant=sc.variant_info())
    emu = dict(out["emulation"])
    ids, lags = emu.pop("lag_packets")
    emu["valid"] = bool(emu.pop("within_budget"))
    emu["nodes"] = [{"node": n, "netns": ns, "address": a} for n, ns, a in emu["nodes"]]
    emu["command"] = list(command)
    res.summary["emulation"] = emu
    lag = pd.DataFrame({"packet_id": np.asarray(ids, dtype=np.int64),
                        "lag_us": np.asarray(lags, dtype=np.float64) / 1e3})
    return Emulation(res, lag)
