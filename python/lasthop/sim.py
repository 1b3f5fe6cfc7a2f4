"""``lasthop.Sim``: a run you step, change and feed while it runs (the open loop of the Rust core).

    sim = lasthop.Sim("examples/quickstart.toml", seed=7)
    sim.advance_to(5.0)                                   # simulate up to t = 5 s
    sim.command("flows.video", rate_mbps=2)               # as a `commands` entry would, now
    sim.advance_to(sim.end_s)
    res = sim.finish()                                    # a RunResult, as lasthop.run gives

``inject`` hands packets of ``external`` flows to the model and ``drain_egress`` returns those it
delivered, which is how the emulator carries real traffic. A scenario's own ``commands`` run at their
``at_s`` whether the run is stepped or not; stepping by any increments gives the run ``lasthop.run``
gives (same seed, same event digest).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from lasthop import _lasthop
from lasthop.result import RunResult
from lasthop.runner import _as_scenario
from lasthop.scenario import Scenario, _to_json_value

__all__ = ["Sim", "Egress"]


_NS_MAX = 2**64 - 1
"""The engine's clock limit in ns; a time past it is past every run's end."""

class Egress(NamedTuple):
    """A packet of an ``external`` flow that the model delivered."""

    flow: str
    reverse: bool
    id: int
    size_bytes: int
    dscp: int
    sent_ns: int
    delivered_ns: int


class Sim:
    """A model of ``scenario`` (a Scenario, a path or a dict) at time zero, stepped by its caller."""

    def __init__(self, scenario: Scenario | str | os.PathLike[str] | Mapping[str, Any], seed: int | None = None):
        self._sc = _as_scenario(scenario)
        if seed is not None:
            self._sc = self._sc.with_seed(seed)
        self._native = _lasthop.Sim(self._sc.to_json(), self._sc.base_dir, None)
        self._flow_names = [f.get("name") or f"flow{i}" for i, f in enumerate(self._sc.to_dict()["flows"])]

    @property
    def now_ns(self) -> int:
        """The model's clock, ns."""
        return self._native.now_ns

    @property
    def now_s(self) -> float:
        return self._native.now_ns / 1e9

    @property
    def end_s(self) -> float:
        """The end of the run (``duration_s``)."""
        return self._native.end_ns / 1e9

    def next_wakeup_ns(self) -> int | None:
        """When the model next has something to do, or None when nothing is due before the end."""
        return self._native.next_wakeup_ns()

    def advance_to(self, t_s: float) -> int:
        """Simulates up to ``t_s`` seconds (at most the end of the run); returns the events processed
        (0 for a time already passed: the clock never goes back). ``ValueError`` for a negative or
        non-finite time."""
        if not math.isfinite(t_s) or t_s < 0:
            raise ValueError(f"advance_to: t_s must be a finite time ≥ 0 s, got {t_s}")
        return self._native.advance_to(min(round(t_s * 1e9), _NS_MAX))  # past the end: the end

    def advance_to_ns(self, t_ns: int) -> int:
        if t_ns < 0:
            raise ValueError(f"advance_to_ns: t_ns must be ≥ 0, got {t_ns}")
        return self._native.advance_to(min(t_ns, _NS_MAX))

    def components(self) -> dict[str, Any]:
        """Every component's counters and state so far, as ``summary.json``'s ``components`` will
        hold them at the end: e.g. each QAir gate's current ``rate_psdus_per_s`` and ``t_hat_ms``
        under ``["wifi"]["nodes"][i]["path"]["release_gate"]``. Link utilizations are over the whole
        run's length."""
        result: dict[str, Any] = json.loads(self._native.components_json())
        return result

    def command(self, target: str, set: Mapping[str, Any] | None = None, **values: Any) -> None:
        """Applies a run-time command now, e.g. ``command("stations.laptop", snr_db=12)``. Raises
        ``ValueError`` naming the target or key at fault. It acts after every event due now (as a
        scenario's ``commands`` entry acts after every other event of its instant). The result's
        scenario (``summary.json``) records it as a ``commands`` entry at this time, after the
        scenario's own, so running that scenario with the seed gives this run, to the event digest."""
        # As the scenario's own values are: plain JSON, a NaN or a non-JSON value refused at its key.
        table = _to_json_value({**(set or {}), **values}, ("set",))
        self._native.command(target, json.dumps(table))

    def inject(self, flow: str, size_bytes: int, reverse: bool = False, dscp: int | None = None,
               tcp: tuple[int, int, int] | None = None, rtp_seq: int | None = None, rtcp: bool = False,
               rtcp_twcc: bytes | None = None) -> int:
        """Hands a packet of ``external`` flow ``flow`` to the model now (``reverse``: at its ``to``
        end); returns its packet id. ``tcp = (seq, payload_len, ack)`` makes it a TCP segment to the
        model (mechanisms such as Zhuge then act on it). ``rtp_seq`` makes it RTP media with that
        transport-wide sequence number (16 bits, as on the wire); ``rtcp=True`` makes it RTCP, with
        ``rtcp_twcc`` the bytes of its transport-cc feedback message if it has one (Zhuge rewrites TWCC
        on a flow with ``rtp``)."""
        return self._native.inject(flow, size_bytes, reverse, dscp, tcp, rtp_seq, rtcp, rtcp_twcc)

    def drain_egress(self) -> list[Egress]:
        """The external flows' packets the model delivered since the last call, in delivery order."""
        return [Egress(self._flow_names[f], rev, i, size, dscp, sent, done)
                for f, rev, i, size, dscp, sent, done in self._native.drain_egress()]

    def finish(self) -> RunResult:
        """Ends the run and returns its result up to now."""
        return RunResult._from_native(self._native.finish(), variant=self._sc.variant_info())
