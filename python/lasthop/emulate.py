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

With ``control=PATH`` the emulation listens on a Unix socket for run-time commands while it runs, the
same as a scenario's ``commands`` and ``Sim.command`` (a LAST-PQ demand, a station's SNR, Law's
limits): one JSON line ``{"target": ..., "set": {...}}`` per command, answered by ``{"ok": true,
"at_s": ...}`` or ``{"ok": false, "error": ...}`` (:func:`send_command` does both; so does ``socat -
UNIX-CONNECT:PATH``). The command in the namespace finds the path in ``LASTHOP_CONTROL``. Each command
acts at the model time it is read and is recorded in the result's scenario as a ``commands`` entry, so
:func:`replay` reproduces the run with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lasthop import _lasthop
from lasthop.errors import LasthopError
from lasthop.result import RunResult
from lasthop.runner import _as_scenario, in_engine_thread
from lasthop.scenario import Scenario

__all__ = ["emulate", "replay", "send_command", "Emulation", "EmulationError"]

LAG_FILE, INPUTS_FILE = "lag.parquet", "inputs.parquet"


class EmulationError(LasthopError):
    """The emulation could not be set up or run (privileges, iproute2, /dev/net/tun, the command)."""


@dataclass
class Emulation:
    """An emulation's results: the run (``result.summary["emulation"]`` has the lag figures and
    counters) and the lag of every packet written to a real node (``lag``: ``packet_id``, ``lag_us``;
    ``packet_id`` is the packet's row in ``result.packets``)."""

    result: RunResult
    lag: Any
    inputs: Any
    """Every real packet handed to the model, in order: ``t_ns`` (model time), ``flow``, ``reverse``,
    ``size_bytes``, ``dscp``, and for TCP segments ``tcp_seq``, ``tcp_len``, ``tcp_ack`` (read in the
    clear; null otherwise); with a flow that has ``rtp``, ``rtp_seq`` (an RTP packet's transport-wide
    sequence number), ``rtcp`` and ``rtcp_twcc`` (its transport-cc message's bytes) — what
    :func:`replay` feeds the same model to reproduce the run."""
    pcaps: dict[str, bytes]
    """Per real node, the bytes of ``<node>.pcap`` (empty without ``pcap=True``): raw IPv4, every packet
    it sent into the model and every one the model delivered to it, stamped with the time it crossed
    the device (Wireshark, ``tcpdump -r``)."""

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
        for name, df in ((LAG_FILE, self.lag), (INPUTS_FILE, self.inputs)):
            tmp = d / f".{name}.tmp"
            df.to_parquet(tmp, index=False)
            os.replace(tmp, d / name)
        if self.pcaps:
            (d / "pcap").mkdir(exist_ok=True)
            for name, data in self.pcaps.items():
                tmp = d / "pcap" / f".{name}.tmp"
                tmp.write_bytes(data)
                os.replace(tmp, d / "pcap" / name)
        return self.result.save(d)


def emulate(scenario: Scenario | str | os.PathLike[str] | Mapping[str, Any], command: Sequence[str] = (), *,
            seed: int | None = None, duration_s: float | None = None, node: str | None = None,
            lag_budget_us: float = 500.0, spin_us: float = 100.0, stdout_to_stderr: bool = False,
            pcap: bool = True, bypass: bool = False, control: str | os.PathLike[str] | None = None) -> Emulation:
    """Runs ``scenario`` in real time with its external flows' endpoints as real namespaces; see the
    module docs. Ctrl-C ends the emulation (namespaces removed) and raises KeyboardInterrupt."""
    sc = _as_scenario(scenario)
    if seed is not None:
        sc = sc.with_seed(seed)
    import tempfile

    handle = _lasthop.Progress()
    captures = tempfile.TemporaryDirectory(prefix="lasthop-pcap-")
    try:
        out = in_engine_thread(lambda: _lasthop.emulate(sc.to_json(), sc.base_dir, None, duration_s, lag_budget_us,
                                                        spin_us, list(command), node, handle, stdout_to_stderr,
                                                        captures.name if pcap else None, bypass,
                                                        None if control is None else os.path.abspath(control)),
                               handle, sc, name="lasthop-emulate")
    except (ValueError, OSError) as e:
        raise EmulationError(str(e)) from None
    import numpy as np
    import pandas as pd

    res = RunResult._from_native(out, variant=sc.variant_info())
    emu = dict(out["emulation"])
    ids, lags = emu.pop("lag_packets")
    t_ns, flow, reverse, size, dscp, tcp, rtp = emu.pop("inputs")
    names = [f.get("name") or f"flow{i}" for i, f in enumerate(sc.to_dict()["flows"])]
    inputs = pd.DataFrame({"t_ns": np.asarray(t_ns, dtype=np.int64), "flow": [names[f] for f in flow],
                           "reverse": np.asarray(reverse, dtype=bool), "size_bytes": np.asarray(size, dtype=np.int64),
                           "dscp": np.asarray(list(dscp), dtype=np.int64)})
    for i, col in enumerate(("tcp_seq", "tcp_len", "tcp_ack")):
        inputs[col] = pd.array([None if t is None else t[i] for t in tcp], dtype="Int64")
    if any(r is not None for r in rtp):
        inputs["rtp_seq"] = pd.array([None if r is None else r[1] for r in rtp], dtype="Int64")
        inputs["rtcp"] = np.asarray([r is not None and r[0] for r in rtp], dtype=bool)
        inputs["rtcp_twcc"] = pd.Series([None if r is None or r[2] is None else bytes(r[2]) for r in rtp], dtype=object)
    emu["rtp"] = json.loads(emu["rtp"])
    emu["valid"] = bool(emu.pop("within_budget"))
    emu["nodes"] = [{"node": n, "netns": ns, "address": a} for n, ns, a in emu["nodes"]]
    emu["command"] = list(command)
    res.summary["emulation"] = emu
    lag = pd.DataFrame({"packet_id": np.asarray(ids, dtype=np.uint64),
                        "lag_us": np.asarray(lags, dtype=np.float64) / 1e3})
    with captures:
        pcaps = {p.name: p.read_bytes() for p in sorted(Path(captures.name).glob("*.pcap"))}
    return Emulation(res, lag, inputs, pcaps)


def send_command(path: str | os.PathLike[str], target: str, set: Mapping[str, Any] | None = None, *,
                 timeout_s: float = 5.0, **values: Any) -> float:
    """Sends one run-time command to a running emulation's control socket (``emulate(control=PATH)``,
    ``lasthop emulate --control PATH``), e.g. ``send_command(path, "aps.ap.lastpq", demand_ms={"vr":
    15})``; returns the model time (s) it acted at. Raises ``ValueError`` with the emulation's answer
    when it refuses the command, ``OSError`` when nothing listens at ``path``."""
    import socket

    from lasthop.scenario import _to_json_value

    request = {"target": target, "set": _to_json_value({**(set or {}), **values}, ("set",))}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        s.connect(os.fspath(path))
        s.sendall(json.dumps(request).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise OSError(f"{os.fspath(path)}: the emulation closed the connection without an answer")
            reply += chunk
    answer = json.loads(reply)
    if not answer.get("ok"):
        raise ValueError(answer.get("error", "refused"))
    return float(answer["at_s"])


def replay(run_dir: str | os.PathLike[str]) -> RunResult:
    """Feeds an emulation's recorded inputs (``inputs.parquet``) to the same scenario and seed in
    simulation, each at its model time, up to the time the emulation ended: the model decides exactly
    as it did (same event digest, same per-packet stage timestamps)."""
    import pandas as pd

    from lasthop.errors import RunDirError
    from lasthop.result import _read_summary, read_table
    from lasthop.sim import Sim

    d = Path(run_dir)
    summary = _read_summary(d, os.fspath(run_dir))
    emu = summary.get("emulation")
    if not isinstance(emu, dict) or not (d / INPUTS_FILE).is_file():
        raise RunDirError(f"{run_dir}: not an emulation's run directory (no `emulation` in summary.json, "
                           f"or no {INPUTS_FILE})")
    try:  # what the replay needs of summary.json, read before anything runs
        doc, seed = summary["scenario"], int(summary["seed"])
        ended_at_ns, digest = int(emu["ended_at_ns"]), str(summary["event_digest"])
    except (KeyError, TypeError, ValueError) as e:
        raise RunDirError(f"{os.path.join(os.fspath(run_dir), 'summary.json')}: not an emulation's summary "
                          f"({type(e).__name__}: {e})") from None
    sc = Scenario.from_dict(doc)
    sim = Sim(sc, seed=seed)

    inputs = read_table(d, INPUTS_FILE).to_pandas()  # a damaged file: a RunDirError naming it
    missing = [c for c in ("t_ns", "flow", "reverse", "size_bytes", "dscp") if c not in inputs]
    if missing:
        raise RunDirError(f"{os.path.join(os.fspath(run_dir), INPUTS_FILE)}: not an emulation's inputs "
                          f"(no column {', '.join(missing)})")
    cols = [inputs[c].tolist() for c in ("t_ns", "flow", "reverse", "size_bytes", "dscp")]
    tcp = [None if s is pd.NA or s is None else (int(s), int(n), int(a))
           for s, n, a in zip(*(inputs[c].astype(object).tolist() if c in inputs else [None] * len(inputs)
                                for c in ("tcp_seq", "tcp_len", "tcp_ack")))]
    n = len(inputs)
    rtp_seq = [None if s is pd.NA or s is None else int(s)
               for s in (inputs["rtp_seq"].astype(object).tolist() if "rtp_seq" in inputs else [None] * n)]
    rtcp = inputs["rtcp"].tolist() if "rtcp" in inputs else [False] * n
    twcc = inputs["rtcp_twcc"].tolist() if "rtcp_twcc" in inputs else [None] * n
    for (t, flow, rev, size, dscp), seg, seq, is_rtcp, fb in zip(zip(*cols), tcp, rtp_seq, rtcp, twcc):
        sim.advance_to_ns(t)
        sim.inject(flow, size, reverse=rev, dscp=dscp, tcp=seg, rtp_seq=seq, rtcp=bool(is_rtcp),
                   rtcp_twcc=None if fb is None else bytes(fb))
    sim.advance_to_ns(ended_at_ns)
    res = sim.finish()
    res.summary["replay_of"] = {"run_dir": os.fspath(run_dir), "event_digest": digest,
                                "identical": res.summary["event_digest"] == digest}
    return res
