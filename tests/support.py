"""Test helpers: small scenarios as dicts, a tiny TOML writer, a CLI runner, and a pcap reader."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def small_scenario(duration_s: float = 3.0) -> dict[str, Any]:
    """The quick start's topology, shortened: a CBR flow plus a Poisson flow that overloads the last hop."""
    return {
        "name": "small",
        "duration_s": duration_s,
        "seed": 1,
        "servers": [{"name": "server"}],
        "aps": [{"name": "ap", "last_hop": {"type": "wired", "rate_mbps": 30, "delay_ms": 2,
                                            "queue": {"type": "fifo", "packets": 100}}}],
        "stations": [{"name": "laptop"}, {"name": "phone"}],
        "links": [{"a": "server", "b": "ap", "rate_mbps": 100, "delay_ms": 10}],
        "flows": [
            {"name": "video", "type": "udp_cbr", "from": "server", "to": "laptop", "rate_mbps": 10},
            {"name": "bulk", "type": "udp_poisson", "from": "server", "to": "phone", "rate_mbps": 25,
             "packet_bytes": 1500, "start_s": 0.5, "stop_s": duration_s - 0.5},
        ],
    }


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return json.dumps(v)
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(type(v))


def toml_dumps(d: Mapping[str, Any]) -> str:
    """Enough TOML for scenarios: top-level scalars, arrays of tables, nested tables inline."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in d.items()
             if not (isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v))]
    for k, v in d.items():
        if isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            for item in v:
                lines += ["", f"[[{k}]]"] + [f"{ik} = {_toml_value(iv)}" for ik, iv in item.items()]
    return "\n".join(lines) + "\n"


def write_scenario(path: Path, d: Mapping[str, Any]) -> Path:
    path.write_text(toml_dumps(d), encoding="utf-8")
    return path


def lasthop_cli(*args: str | os.PathLike[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m lasthop ARGS`` (the same code as the ``lasthop`` script) and captures its output."""
    return subprocess.run([sys.executable, "-m", "lasthop", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def ctrl_c_able() -> None:
    """``preexec_fn`` for a child a test sends Ctrl-C (SIGINT): the default disposition, so that Python in
    the child handles it even when this test run was started as a background job (whose shell made it
    ignore SIGINT, a disposition children inherit)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


class PcapRecord(NamedTuple):
    t_ns: int
    orig_len: int
    data: bytes


def read_pcap(path: Path) -> list[PcapRecord]:
    """The records of a pcap file (either byte order, µs or ns stamps), checked to be raw IP
    (LINKTYPE_RAW) and to end with the last record: a reader of our own, independent of the writer."""
    import struct

    data = path.read_bytes()
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    magic = struct.unpack(order + "I", data[:4])[0]
    assert magic in (0xA1B2C3D4, 0xA1B23C4D)
    frac_ns = 1 if magic == 0xA1B23C4D else 1000
    assert struct.unpack(order + "I", data[20:24])[0] == 101, "LINKTYPE_RAW"
    out, i = [], 24
    while i < len(data):
        sec, frac, incl, orig = struct.unpack(order + "IIII", data[i:i + 16])
        assert incl <= orig
        out.append(PcapRecord(sec * 10**9 + frac * frac_ns, orig, data[i + 16:i + 16 + incl]))
        i += 16 + incl
    assert i == len(data)
    return out
