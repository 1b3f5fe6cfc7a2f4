"""`lasthop run --pcap`: every end host's packets as a pcap file, checked against the packet log with a
reader of our own, and read by tcpdump where it is installed (make test installs it)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from support import lasthop_cli, read_pcap, small_scenario, write_scenario


def _scenario(tmp: Path) -> Path:
    d = small_scenario(2.0)
    d["flows"] = [
        {"name": "video", "type": "udp_cbr", "from": "server", "to": "laptop", "rate_mbps": 2},
        {"name": "dl", "type": "tcp", "from": "server", "to": "phone", "start_s": 0.2},
        {"name": "echo", "type": "ping", "from": "laptop", "to": "server", "interval_ms": 100},
    ]
    return write_scenario(tmp / "pcap.toml", d)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pcap")
    r = lasthop_cli("run", _scenario(tmp), "--out", tmp / "run", "--pcap", cwd=tmp)
    assert r.returncode == 0, r.stderr
    return tmp / "run"


def _ends(packets: pd.DataFrame) -> pd.DataFrame:
    """The node each packet was sent from and delivered to (a reverse packet goes from `to` to `from`)."""
    ends = {"video": ("server", "laptop"), "dl": ("server", "phone"), "echo": ("laptop", "server")}
    src = packets.apply(lambda p: ends[p["flow"]][1 if p["reverse"] else 0], axis=1)
    dst = packets.apply(lambda p: ends[p["flow"]][0 if p["reverse"] else 1], axis=1)
    return packets.assign(src=src, dst=dst)


def test_each_end_host_has_what_it_sent_and_received_at_the_models_times(run_dir: Path) -> None:
    p = _ends(pd.read_parquet(run_dir / "packets.parquet"))
    assert sorted(f.name for f in (run_dir / "pcap").iterdir()) == ["laptop.pcap", "phone.pcap", "server.pcap"]
    for node in ("server", "laptop", "phone"):
        recs = read_pcap(run_dir / "pcap" / f"{node}.pcap")
        sent = p[p["src"] == node]
        got = p[(p["dst"] == node) & p["t_delivered_ns"].notna()]
        want = Counter(zip(sent["t_sent_ns"].astype(int), sent["size_bytes"].astype(int)))
        want += Counter(zip(got["t_delivered_ns"].astype(int), got["size_bytes"].astype(int)))
        assert Counter((r.t_ns, r.orig_len) for r in recs) == want, node
        assert [r.t_ns for r in recs] == sorted(r.t_ns for r in recs), "in time order"
        for r in recs:
            assert r.data[0] == 0x45 and struct.unpack("!H", r.data[2:4])[0] == r.orig_len, "IPv4, total length = size"


def test_tcp_segments_carry_the_models_sequence_numbers(run_dir: Path) -> None:
    recs = read_pcap(run_dir / "pcap" / "server.pcap")
    tcp = [r.data for r in recs if r.data[9] == 6]
    data = [(struct.unpack("!I", t[24:28])[0], struct.unpack("!H", t[2:4])[0] - 20 - (t[32] >> 4) * 4)
            for t in tcp if t[12:16] == bytes([10, 78, 0, 1])]
    assert len(data) > 100
    # The first transmission of each segment starts where the previous one ended: the stream, in order.
    first: dict[int, int] = {}
    for seq, length in data:
        first.setdefault(seq, length)
    seqs = sorted(first)
    assert seqs[0] == 0 and all(a + first[a] == b for a, b in zip(seqs, seqs[1:]))
    acks = [struct.unpack("!I", t[28:32])[0] for t in tcp if t[12:16] == bytes([10, 78, 0, 4])]
    assert acks and max(acks) <= seqs[-1] + first[seqs[-1]] and acks == sorted(acks)


def test_ping_is_icmp_echo_and_the_rest_udp(run_dir: Path) -> None:
    laptop = [r.data for r in read_pcap(run_dir / "pcap" / "laptop.pcap")]
    kinds = Counter((d[9], d[20]) if d[9] == 1 else (d[9], None) for d in laptop)
    assert kinds[(1, 8)] == kinds[(1, 0)] > 10, kinds  # echo requests out, as many replies in
    assert kinds[(17, None)] > 100 and set(kinds) == {(1, 8), (1, 0), (17, None)}


def test_the_captures_are_the_same_on_every_run_and_change_nothing(tmp_path: Path, run_dir: Path) -> None:
    r = lasthop_cli("run", _scenario(tmp_path), "--out", tmp_path / "again", "--pcap", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for f in ("server.pcap", "laptop.pcap", "phone.pcap"):
        assert (tmp_path / "again" / "pcap" / f).read_bytes() == (run_dir / "pcap" / f).read_bytes()
    r = lasthop_cli("run", _scenario(tmp_path), "--out", tmp_path / "plain", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "plain" / "pcap").exists()
    digest = [json.loads((d / "summary.json").read_text())["event_digest"] for d in (run_dir, tmp_path / "plain")]
    assert digest[0] == digest[1]


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed; make test installs it")
def test_tcpdump_reads_them(run_dir: Path) -> None:
    r = subprocess.run(["tcpdump", "-r", str(run_dir / "pcap" / "phone.pcap"), "-nn", "-tt", "--nano"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(read_pcap(run_dir / "pcap" / "phone.pcap"))
    assert any("10.78.0.1.10001 > 10.78.0.4.20001: Flags [.], seq" in x for x in lines), lines[:3]
    assert "truncated" not in r.stdout.lower()
