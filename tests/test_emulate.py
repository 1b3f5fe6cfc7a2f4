"""Real-time emulation for real: namespaces, TUN devices, real sockets and kernel TCP through the model.

These need root, /dev/net/tun and iproute2 (as CI has); the emulator's own lag figures are reported,
never asserted (they depend on the machine's load), but the model's delays and rates are."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import lasthop
from lasthop.emulate import send_command
from support import EXAMPLES, REPO, ctrl_c_able, read_pcap, small_scenario, write_scenario

pytestmark = [pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or not shutil.which("ip"),
                                 reason="emulation needs root, /dev/net/tun and iproute2 (lasthop doctor)"),
              pytest.mark.serial]

APPS = Path(__file__).parent / "emu_apps"


def _scenario(tmp: Path, **last_hop: object) -> Path:
    d = small_scenario(30.0)
    d["aps"][0]["last_hop"] = {"type": "wired", "rate_mbps": 20, "delay_ms": 5, **last_hop}
    d["links"][0]["delay_ms"] = 10
    d["flows"] = [{"name": "real", "type": "external", "from": "server", "to": "laptop"}]
    return write_scenario(tmp / "emu.toml", d)


def _emulate(*args: object, cwd: Path, env: dict[str, str] | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lasthop", "emulate", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def _our_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("lh-")]


def test_real_udp_crosses_the_model_with_the_models_delay(tmp_path: Path) -> None:
    sc = _scenario(tmp_path)
    r = _emulate(sc, "--out", tmp_path / "run", "--json", "--", sys.executable, APPS / "udp_echo.py",
                 cwd=tmp_path, env={"N": "30"})
    assert r.returncode in (0, 1), r.stderr  # 1 only when this machine's lag exceeded the budget
    summary = json.loads(r.stdout)
    app = json.loads(r.stderr.strip().splitlines()[0])  # the command's stdout goes to stderr under --json
    emu = summary["emulation"]
    assert r.returncode == 0 or not emu["valid"], r.stderr
    assert app["lost"] == 0 and len(app["rtt_ms"]) == 30
    flows = summary["metrics"]["flows"]["real"]
    assert flows["sent_packets"] == 30 and flows["delivered_packets"] == 30
    # The model's one-way delay: 10 ms + 5 ms of propagation plus serialization of 228-byte packets.
    one_way = flows["latency_p50_ms"]
    assert 15.0 < one_way < 15.5
    # The real round trip is the model's, twice, plus the kernel and Python on either side.
    median = statistics.median(app["rtt_ms"])
    assert 2 * one_way <= median < 2 * one_way + 3.0, (median, one_way)
    assert emu["injected"] == emu["written"] == 60 and emu["command_status"] == 0
    assert [n["address"] for n in emu["nodes"]] == ["10.77.0.1", "10.77.0.2"]
    lag = pd.read_parquet(tmp_path / "run" / "lag.parquet")
    packets = pd.read_parquet(tmp_path / "run" / "packets.parquet")
    assert len(lag) == 60 and set(lag["packet_id"]) == set(range(60))
    assert packets["t_delivered_ns"].notna().all() and packets["reverse"].sum() == 30
    assert not {n["netns"] for n in emu["nodes"]} & set(_our_namespaces()), "its namespaces are gone"
    # What crossed each side, as a pcap (raw IPv4): the laptop sent 30 requests and got 30 replies.
    laptop = [r.data for r in read_pcap(tmp_path / "run" / "pcap" / "laptop.pcap")]
    udp = [p for p in laptop if p[0] >> 4 == 4 and p[9] == 17]
    assert len(udp) == 60 and sum(p[12:16] == bytes([10, 77, 0, 2]) for p in udp) == 30


def test_kernel_tcp_is_shaped_by_the_modelled_link(tmp_path: Path) -> None:
    sc = _scenario(tmp_path)
    r = _emulate(sc, "--out", tmp_path / "run", "--json", "--lag-budget-us", "100000", "--",
                 sys.executable, APPS / "http_fetch.py", cwd=tmp_path, env={"BYTES": "2000000"})
    assert r.returncode == 0, r.stderr
    app = json.loads(r.stderr.strip().splitlines()[-1])
    assert app["bytes"] == 2_000_000
    mbps = app["bytes"] * 8 / app["seconds"] / 1e6
    # 20 Mbit/s of IP on the modelled last hop, 30 ms of round trip: TCP gets most of it, never more.
    assert 8.0 < mbps < 20.0, mbps
    fl = json.loads(r.stdout)["metrics"]["flows"]["real"]
    assert fl["delivered_bytes"] > 2_000_000


def test_a_real_station_shares_the_channel_with_modelled_ones(tmp_path: Path) -> None:
    """The real laptop's round trip over the modelled 802.11n AP grows when modelled stations download."""
    rtt = {}
    for variant in ("quiet", None):
        args = ["--variant", variant] if variant else []
        r = _emulate(EXAMPLES / "emulate_home.toml", *args, "--duration", "6", "--out", tmp_path / str(variant),
                     "--json", "--lag-budget-us", "100000", "--", sys.executable, APPS / "udp_echo.py",
                     cwd=tmp_path, env={"N": "40"})
        assert r.returncode == 0, r.stderr
        rtt[variant] = statistics.median(json.loads(r.stderr.strip().splitlines()[0])["rtt_ms"])
    assert rtt[None] > rtt["quiet"] + 3.0, rtt


def test_a_crashing_app_ends_the_emulation_and_leaves_no_namespace(tmp_path: Path) -> None:
    sc = _scenario(tmp_path)
    before = set(_our_namespaces())
    r = _emulate(sc, "--out", tmp_path / "run", "--", sys.executable, "-c",
                 "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", cwd=tmp_path)
    assert r.returncode == 1 and "exited with status 137" in r.stderr, r.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["emulation"]["command_status"] == 137
    assert set(_our_namespaces()) <= before


def test_a_daemon_left_in_a_namespace_is_killed_with_it(tmp_path: Path) -> None:
    """A process the command leaves behind in a real node's namespace, out of its process group (a
    daemon: `iperf3 -s -D`), would keep the namespace alive after the emulation: it is killed."""
    pidfile = tmp_path / "daemon.pid"
    r = _emulate(_scenario(tmp_path), "--duration", "3", "--", "sh", "-c",
                 f"ip netns exec $LASTHOP_NS_SERVER sh -c 'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}'; sleep 0.5",
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    pid = int(pidfile.read_text())
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the daemon outlived its emulation"


def test_ctrl_c_stops_the_emulation_and_removes_its_namespaces(tmp_path: Path) -> None:
    sc = _scenario(tmp_path)
    before = set(_our_namespaces())
    p = subprocess.Popen([sys.executable, "-m", "lasthop", "emulate", str(sc), "--out", str(tmp_path / "run"), "--",
                          "sleep", "60"], preexec_fn=ctrl_c_able, cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            if set(_our_namespaces()) - before:
                break
            time.sleep(0.1)
        assert set(_our_namespaces()) - before, "the emulation set up its namespaces"
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert set(_our_namespaces()) <= before
    assert not (tmp_path / "run" / "summary.json").exists()


def test_nothing_to_emulate_or_an_unknown_node_is_a_usage_error(tmp_path: Path, small: Path) -> None:
    r = _emulate(small, "--duration", "1", cwd=tmp_path)
    assert r.returncode == 2 and "no `external` flow" in r.stderr and "Traceback" not in r.stderr
    r = _emulate(_scenario(tmp_path), "--in", "fridge", "--duration", "1", cwd=tmp_path)
    assert r.returncode == 2 and "fridge" in r.stderr and "laptop" in r.stderr


def test_doctor_passes_here() -> None:
    r = subprocess.run([sys.executable, "-m", "lasthop", "doctor", "--json"], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stdout
    names = {c["check"]: c for c in json.loads(r.stdout)["checks"]}
    assert {"privileges", "tun", "iproute2", "netns", "clock"} <= set(names)
    assert all(names[k]["ok"] for k in ("privileges", "tun", "iproute2", "netns"))


def test_replay_reproduces_every_decision_of_an_emulation(tmp_path: Path) -> None:
    """Real TCP beside modelled Wi-Fi stations, then the recorded inputs through the same model in
    simulation: the same event digest and the same stage timestamps for every packet."""
    run = tmp_path / "run"
    r = _emulate(EXAMPLES / "emulate_home.toml", "--duration", "8", "--out", run, "--lag-budget-us", "100000",
                 "--", sys.executable, APPS / "http_fetch.py", cwd=tmp_path, env={"BYTES": "300000"})
    assert r.returncode == 0, r.stderr
    inputs = pd.read_parquet(run / "inputs.parquet")
    assert len(inputs) > 200 and set(inputs["flow"]) == {"real"} and inputs["reverse"].any()
    assert inputs["t_ns"].is_monotonic_increasing
    r = subprocess.run([sys.executable, "-m", "lasthop", "replay", str(run)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and "identical" in r.stdout, r.stdout + r.stderr
    a = pd.read_parquet(run / "packets.parquet")
    b = pd.read_parquet(run / "replay" / "packets.parquet")
    assert len(a) == len(b) > len(inputs)
    pd.testing.assert_frame_equal(a, b)
    assert json.loads((run / "summary.json").read_text())["event_digest"] == \
        json.loads((run / "replay" / "summary.json").read_text())["event_digest"]


def test_commands_on_the_control_socket_act_at_once_and_replay(tmp_path: Path) -> None:
    """LAST-PQ's home (examples/lastpq_vr.toml) with a real flow to a client: an app inside the emulation
    lowers the VR demand through the control socket ($LASTHOP_CONTROL) and gets a refusal for an unknown
    flow; the test process sends one more (`send_command`). The summary's scenario records the two
    applied commands at their model times, the policy ends at the last demand, and replaying the run
    with them gives the same event digest."""
    import tomllib

    sc = tomllib.loads((EXAMPLES / "lastpq_vr.toml").read_text())
    sc.pop("variants", None)
    sc["flows"].append({"name": "real", "type": "external", "from": "server", "to": "c1"})
    path = write_scenario(tmp_path / "lastpq_emu.toml", sc)
    run, sock = tmp_path / "run", tmp_path / "ctl.sock"
    proc = subprocess.Popen([sys.executable, "-m", "lasthop", "emulate", str(path), "--duration", "5", "--out", str(run),
                             "--lag-budget-us", "100000", "--control", str(sock), "--", sys.executable,
                             str(APPS / "control_demands.py")], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "AT_S": "1.5", "HOLD_S": "30"})
    try:
        for _ in range(200):  # until the emulation listens
            if sock.exists():
                break
            time.sleep(0.05)
        time.sleep(3.0)
        at_s = send_command(sock, "aps.ap.lastpq", demand_ms={"vr": 16})
        with pytest.raises(ValueError, match="'t9' is not a flow LAST-PQ prioritizes here"):
            send_command(sock, "aps.ap.lastpq", demand_ms={"t9": 16})
        # A burst written before reading any answer: every one is applied and answered, in order.
        import socket

        burst = [{"target": "aps.ap.lastpq", "set": {"percentile": {"vr": 90 + i % 5}}} for i in range(300)]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.settimeout(10)
            c.connect(str(sock))
            c.sendall("".join(json.dumps(b) + "\n" for b in burst).encode())
            got = b""
            while got.count(b"\n") < len(burst):
                chunk = c.recv(65536)
                assert chunk, got[-200:]
                got += chunk
        replies = [json.loads(line) for line in got.splitlines()]
        assert all(r["ok"] for r in replies) and [r["at_s"] for r in replies] == sorted(r["at_s"] for r in replies)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    answers = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert answers[0]["ok"] and 1.0 < answers[0]["at_s"] < 3.0, answers
    assert not answers[1]["ok"] and "'nope' is not a flow LAST-PQ prioritizes here" in answers[1]["error"], answers
    summary = json.loads((run / "summary.json").read_text())
    cmds = summary["scenario"]["commands"]
    assert [c["set"] for c in cmds[:2]] == [{"demand_ms": {"vr": 12}}, {"demand_ms": {"vr": 16}}], cmds[:3]
    assert cmds[0]["at_s"] == answers[0]["at_s"] and cmds[1]["at_s"] == at_s and answers[0]["at_s"] < at_s < 5.0
    assert [c["set"] for c in cmds[2:]] == [b["set"] for b in burst]
    assert summary["emulation"]["control_commands"] == 302
    policy = summary["components"]["wifi"]["nodes"][0]["path"]["driver_policy"]
    assert (policy["flows"][0]["demand_ms"], policy["flows"][0]["percentile"]) == (16.0, 94.0)
    assert not sock.exists(), "the socket is removed at the end"
    r = subprocess.run([sys.executable, "-m", "lasthop", "replay", str(run)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and "identical" in r.stdout, r.stdout + r.stderr


def test_a_control_path_that_is_not_a_socket_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x")
    r = _emulate(_scenario(tmp_path), "--duration", "1", "--control", tmp_path / "taken", cwd=tmp_path)
    assert r.returncode == 1 and "--control" in r.stderr and "exists and is not a socket" in r.stderr, r.stderr
    assert "Usage:" not in r.stderr and (tmp_path / "taken").read_text() == "x"
    r = _emulate(_scenario(tmp_path), "--duration", "1", "--control", tmp_path / "no" / "ctl.sock", cwd=tmp_path)
    assert r.returncode == 1 and "cannot listen there" in r.stderr, r.stderr


def test_replay_refuses_a_simulated_run(tmp_path: Path, small: Path) -> None:
    subprocess.run([sys.executable, "-m", "lasthop", "run", str(small), "--out", str(tmp_path / "sim")], check=True,
                   capture_output=True, cwd=tmp_path)
    r = subprocess.run([sys.executable, "-m", "lasthop", "replay", str(tmp_path / "sim")], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 2 and "not an emulation's run directory" in r.stderr
    for bad, expected in ((tmp_path / "none", "no such directory"), (tmp_path, "not a run directory")):
        r = subprocess.run([sys.executable, "-m", "lasthop", "replay", str(bad)], capture_output=True, text=True,
                           cwd=tmp_path)
        assert r.returncode == 2 and expected in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_replay_names_damaged_inputs(tmp_path: Path, small: Path) -> None:
    """An emulation's run directory whose inputs.parquet is not Parquet, or lacks the inputs' columns:
    an error naming the file, not a traceback (found by a new user's probe)."""
    subprocess.run([sys.executable, "-m", "lasthop", "run", str(small), "--out", str(tmp_path / "emu")], check=True,
                   capture_output=True, cwd=tmp_path)
    summary = json.loads((tmp_path / "emu" / "summary.json").read_text())
    summary["emulation"] = {"ended_at_ns": summary["sim_end_ns"]}
    (tmp_path / "emu" / "summary.json").write_text(json.dumps(summary))
    pd.DataFrame({"t_ns": [0], "flow": [0], "reverse": [False], "size_bytes": [100], "dscp": [0]}).to_parquet(
        tmp_path / "emu" / "inputs.parquet")
    for field in ("seed", "event_digest"):  # a summary.json without what the replay needs
        damaged = {k: v for k, v in summary.items() if k != field}
        (tmp_path / "emu" / "summary.json").write_text(json.dumps(damaged))
        r = subprocess.run([sys.executable, "-m", "lasthop", "replay", str(tmp_path / "emu")], capture_output=True,
                           text=True, cwd=tmp_path)
        assert r.returncode == 2 and "summary.json: not an emulation's summary (KeyError" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    (tmp_path / "emu" / "summary.json").write_text(json.dumps(summary))
    for content, expected in ((b"garbage", "inputs.parquet: cannot read"), (None, "inputs.parquet: not an emulation's inputs (no column t_ns")):
        if content is None:
            pd.DataFrame({"x": [1]}).to_parquet(tmp_path / "emu" / "inputs.parquet")
        else:
            (tmp_path / "emu" / "inputs.parquet").write_bytes(content)
        r = subprocess.run([sys.executable, "-m", "lasthop", "replay", str(tmp_path / "emu")], capture_output=True,
                           text=True, cwd=tmp_path)
        assert r.returncode == 2 and expected in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_zhuge_holds_real_tcp_acks_read_in_the_clear(tmp_path: Path) -> None:
    """Zhuge at the AP treats an external flow as TCP: the real ACKs (headers parsed, bytes untouched)
    are held like modelled ones once its warm-up (3 s) is over, and the replay still matches."""
    d = small_scenario(30.0)
    d["aps"][0]["last_hop"] = {"type": "wired", "rate_mbps": 20, "delay_ms": 5}
    d["aps"][0]["mechanisms"] = [{"type": "zhuge"}]
    d["links"][0]["delay_ms"] = 10
    d["flows"] = [{"name": "real", "type": "external", "from": "server", "to": "laptop"}]
    sc = write_scenario(tmp_path / "zhuge.toml", d)
    run = tmp_path / "run"
    r = _emulate(sc, "--out", run, "--json", "--lag-budget-us", "100000", "--", sys.executable,
                 APPS / "http_fetch.py", cwd=tmp_path, env={"BYTES": "3000000", "START_S": "3.5"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.strip().splitlines()[-1])["bytes"] == 3_000_000
    (zhuge,) = json.loads(r.stdout)["components"]["mechanisms"]
    acks = zhuge["flows"][0]["feedback"]["ack_delayer"]
    assert acks["acks"] > 500 and acks["acks_delayed"] > 100, acks
    inputs = pd.read_parquet(run / "inputs.parquet")
    data = inputs[~inputs["reverse"] & (inputs["tcp_len"] > 0)]
    assert len(data) > 1500 and inputs["tcp_seq"].notna().all()
    r = subprocess.run([sys.executable, "-m", "lasthop", "replay", str(run)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and "identical" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("zhuge", [True, False])
def test_zhuge_rewrites_the_twcc_of_a_real_plaintext_rtp_call(tmp_path: Path, zhuge: bool) -> None:
    """A real RTP call (media with a transport-wide sequence number, the receiver's RR + TWCC every
    50 ms) on a flow with `rtp`: under Zhuge the receiver's TWCC is taken out of its compound RTCP (the
    report goes on) and the sender gets the AP's own TWCC instead, with the receiver's SSRCs, covering
    what it sent; without Zhuge the sender gets the receiver's RTCP as sent. The replay matches."""
    d = small_scenario(12.0)
    d["aps"][0]["last_hop"] = {"type": "wired", "rate_mbps": 20, "delay_ms": 5}
    if zhuge:
        d["aps"][0]["mechanisms"] = [{"type": "zhuge"}]
    d["links"][0]["delay_ms"] = 10
    d["flows"] = [{"name": "call", "type": "external", "from": "server", "to": "laptop", "rtp": {"twcc_extension_id": 5}}]
    sc = write_scenario(tmp_path / "call.toml", d)
    run = tmp_path / "run"
    r = _emulate(sc, "--out", run, "--json", "--lag-budget-us", "100000", "--", sys.executable, APPS / "rtp_call.py",
                 cwd=tmp_path, env={"CALL_S": "3", "EXT_ID": "5"})
    assert r.returncode == 0, r.stderr
    call = json.loads(r.stderr.strip().splitlines()[-1])
    got, sender = call["received"], call["sender"]
    assert got == sender["sent"] == 600 and call["feedback_sent"] > 40
    assert sender["with_rr"] == call["feedback_sent"], "every receiver report arrives"
    rtp = json.loads(r.stdout)["emulation"]["rtp"]["call"]
    assert rtp["media_packets"] == 600 and rtp["rtcp_packets"] == call["feedback_sent"]
    if zhuge:
        assert sender["rr_with_twcc"] == 0 and rtp["rtcp_stripped"] == call["feedback_sent"]
        assert sender["twcc_alone"] == rtp["feedback_generated"] > 0
        assert sender["twcc_alone_ssrcs"] == [[0x2222, 0x1111]], "the receiver's SSRCs"
        assert sender["twcc_alone_covered"] >= 0.95 * sender["sent"]
    else:
        assert sender["rr_with_twcc"] == sender["with_rr"] and sender["twcc_alone"] == 0
        assert rtp["rtcp_stripped"] == rtp["feedback_generated"] == 0
    inputs = pd.read_parquet(run / "inputs.parquet")
    assert inputs["rtp_seq"].notna().sum() == 600 and inputs["rtcp_twcc"].notna().sum() == call["feedback_sent"]
    r = subprocess.run([sys.executable, "-m", "lasthop", "replay", str(run)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and "identical" in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("ping") is None, reason="ping (iputils-ping) is not installed; make test installs it")
@pytest.mark.parametrize("spin_us", [100, 9_000])
def test_ping_through_an_idle_modelled_ap_takes_the_models_round_trip(tmp_path: Path, spin_us: int) -> None:
    """The kernel's ICMP echo over the modelled 802.11n AP: each ping's RTT is the model's round trip for
    that request and its reply (from the packet log) plus the emulator's and the kernel's own time,
    which stays under 0.2 ms at p50. Never less (to ping's printed precision): with a spin window of 9 ms before each of the idle
    loop's 10 ms wakeups, nine requests in ten arrive while the loop spins, and each enters the model at
    its arrival time. (Not 10 ms or more: a SCHED_FIFO thread spinning over 95 % of a second is stopped
    for 50 ms by the kernel's real-time throttling.)"""
    import re

    run = tmp_path / "run"
    r = _emulate(EXAMPLES / "emulate_home.toml", "--variant", "quiet", "--duration", "8", "--out", run, "--json",
                 "--spin-us", spin_us, "--lag-budget-us", "100000",
                 "--", "ping", "-n", "-c", "40", "-i", "0.05", "10.77.0.1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    printed = re.findall(r"icmp_seq=\d+ ttl=\d+ time=([\d.]+) ms", r.stderr)
    rtt = [float(m) for m in printed]
    # ping rounds what it prints to 3 significant digits from 1 ms on ("time=10.1 ms" for 10.149): half
    # its coarsest step is the tolerance below the model (a fresh clone's run printed 10.1 against a
    # model round trip of 10.113 ms).
    step = max((10.0 ** -len(m.partition(".")[2]) for m in printed), default=0.001)
    # One of 40 echoes went missing once in a fresh clone's run (cause not found; never here in a row
    # of runs): the medians below do not need every pair.
    assert len(rtt) >= 38, r.stderr
    p = pd.read_parquet(run / "packets.parquet")
    p = p[p["flow"] == "real"].sort_values("t_sent_ns")
    requests, replies = p[p["reverse"]], p[~p["reverse"]]
    assert len(requests) >= 38 and len(replies) >= 38
    # The idle AP gives every request (and every reply) the same model latency to within microseconds.
    model = statistics.median(requests["latency_ms"].dropna()) + statistics.median(replies["latency_ms"].dropna())
    overhead = statistics.median(rtt) - model
    assert -step / 2 <= overhead < 0.2 + step / 2, (statistics.median(rtt), model, step)


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed; make test installs it")
@pytest.mark.parametrize("cc", ["cubic", "bbr"])
def test_iperf3_kernel_tcp_gets_the_goodput_of_lasthops_tcp(tmp_path: Path, cc: str) -> None:
    """The home scenario (a real laptop beside four modelled downloads on one 802.11n AP): the kernel's
    Cubic or BBR (iperf3, 8 s) gets within 10 % of the goodput lasthop's own Cubic or BBR gets in the
    same place."""
    import re
    import tomllib

    doc = tomllib.loads((EXAMPLES / "emulate_home.toml").read_text())
    doc.pop("variants")
    doc["duration_s"] = 10.0
    write_scenario(tmp_path / "emu.toml", doc)
    script = tmp_path / "iperf.sh"
    script.write_text("ip netns exec $LASTHOP_NS_SERVER iperf3 -s -1 -D >/dev/null 2>&1\nsleep 1\n"
                      f"iperf3 -c $LASTHOP_IP_SERVER -R -t 8 -C {cc}\n")
    r = _emulate(tmp_path / "emu.toml", "--out", tmp_path / "run", "--json", "--no-pcap", "--lag-budget-us", "100000",
                 "--", "sh", script, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    real = float(re.findall(r"([\d.]+) Mbits/sec\s+receiver", r.stderr)[-1])
    doc["flows"][0] = {"name": "real", "type": "tcp", "from": "server", "to": "laptop", "start_s": 1.0,
                       "tcp": {"cc": {"type": cc}}}
    modelled = lasthop.run(lasthop.Scenario.from_dict(doc)).flows.set_index("flow").loc["real", "goodput_mbps"]
    assert abs(real / modelled - 1) < 0.10, (real, modelled)


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed; make test installs it")
def test_the_emulation_benchmark_runs_both_modes() -> None:
    r = subprocess.run([sys.executable, "-m", "lasthop", "bench", "--emulation", "--seconds", "1", "--json"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {row["mode"]: row for row in json.loads(r.stdout)["rows"]}
    assert set(rows) == {"floor", "model", "bypass"}
    floor = rows.pop("floor")
    assert 0 <= floor["lag_p50_us"] <= floor["lag_p99_us"] <= floor["lag_p999_us"] <= floor["lag_max_us"]
    for row in rows.values():  # 1 s of 100 Mbit/s in 1400-byte datagrams, all carried
        assert row["packets"] > 5000 and row["iperf3_mbps"] > 50 and row["lag_p50_us"] >= 0


def test_the_floor_is_the_wait_of_an_instant_that_falls_in_a_gap() -> None:
    """One 100 µs gap in 1000 µs: an instant waits with probability 0.1, (100 − L) / 1000 beyond L."""
    from lasthop.commands.doctor import wait_percentile

    assert wait_percentile([100.0], 1000.0, 0.5) == 0.0
    assert wait_percentile([100.0], 1000.0, 0.99) == pytest.approx(90.0)
    assert wait_percentile([100.0], 1000.0, 0.999) == pytest.approx(99.0)
    assert wait_percentile([60.0, 40.0], 1000.0, 0.99) == pytest.approx(50.0)  # (60 − L) + (40 − L)⁺ = 10
    assert wait_percentile([60.0, 40.0], 1000.0, 0.95) == pytest.approx(25.0)  # (60 − L) + (40 − L) = 50

