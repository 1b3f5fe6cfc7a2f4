"""``lasthop.Sim``: a run stepped from Python, changed by commands and fed injected packets, gives what
``lasthop.run`` gives for the same inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import lasthop_cli, small_scenario, write_scenario

import lasthop


def test_stepping_in_any_increments_gives_the_run() -> None:
    d = small_scenario()
    sim = lasthop.Sim(d, seed=4)
    t = 0.0
    while t < sim.end_s:
        t += 0.0137
        sim.advance_to(t)
    assert sim.now_s == sim.end_s
    assert sim.finish().summary_json() == lasthop.run(d, seed=4).summary_json()


def test_components_read_while_stepping_count_up_to_now_and_end_as_the_summary() -> None:
    d = small_scenario()
    sim = lasthop.Sim(d, seed=4)
    sim.advance_to(sim.end_s / 2)
    half = sim.components()
    sim.advance_to(sim.end_s)
    full = sim.components()
    assert set(half) == {"setup", "links", "wifi", "transports", "mechanisms"}

    def dequeued(c: dict[str, Any]) -> list[int]:
        return [link["queue"]["dequeued"] for link in c["links"]]
    # The last hop's queue has served some packets by half-time, and more by the end.
    assert 0 < dequeued(half)[2] < dequeued(full)[2]
    assert all(a <= b for a, b in zip(dequeued(half), dequeued(full)))
    assert sim.finish().summary["components"] == full


def test_a_command_changes_a_flow_from_now_on_as_a_scenario_command_does() -> None:
    d = small_scenario()
    sim = lasthop.Sim(d)
    sim.advance_to(1.5)
    sim.command("flows.video", rate_mbps=2)
    sim.advance_to(sim.end_s)
    stepped = sim.finish()
    scripted = lasthop.run({**d, "commands": [{"at_s": 1.5, "target": "flows.video", "set": {"rate_mbps": 2}}]})
    cols = [c for c in stepped.packets.columns if c.startswith("t_")]
    assert stepped.packets[cols].equals(scripted.packets[cols])
    video = stepped.packets[stepped.packets["flow"] == "video"]
    sent = video["t_sent_ns"].astype("int64")
    before, after = sent[sent < 1_500_000_000], sent[sent > 1_600_000_000]
    # 1200-byte packets: 10 Mbit/s is a gap of 0.96 ms, 2 Mbit/s of 4.8 ms.
    assert before.diff().dropna().eq(960_000).all()
    assert after.diff().dropna().eq(4_800_000).all()


@pytest.mark.parametrize("at_s", [0.0, 0.96, 1.5])
def test_a_stepped_command_is_the_scripted_one_to_the_event_digest(at_s: float) -> None:
    """A command given to a stepped run acts after every event due then, as a scenario's command acts
    after every other event of its instant, even where they coincide (at 0 s with the start events, at
    0.96 s with the video's 1000th packet, 0.96 ms apart); the summary records it, so its scenario
    reproduces the run."""
    d = small_scenario()
    sim = lasthop.Sim(d, seed=5)
    sim.advance_to(at_s)
    sim.command("flows.video", rate_mbps=2)
    sim.advance_to(sim.end_s)
    stepped = sim.finish()
    scripted = lasthop.run({**d, "commands": [{"at_s": at_s, "target": "flows.video", "set": {"rate_mbps": 2}}]}, seed=5)
    again = lasthop.run(stepped.scenario, seed=5)
    digests = {r.summary["event_digest"] for r in (stepped, scripted, again)}
    assert len(digests) == 1 and stepped.summary["events"] == scripted.summary["events"]


def test_bad_commands_name_what_is_wrong() -> None:
    sim = lasthop.Sim(small_scenario())
    with pytest.raises(ValueError, match="no flow named 'nope'"):
        sim.command("flows.nope", rate_mbps=1)
    with pytest.raises(ValueError, match=r"set\.rate_mbps: must be a positive number"):
        sim.command("flows.video", rate_mbps=0)
    with pytest.raises(ValueError, match="is `udp_cbr`|takes rate_mbps"):
        sim.command("flows.video", snr_db=3)
    # The scenario's bounds: a source above 1 Tbit/s had flooded the run's memory.
    with pytest.raises(ValueError, match=r"set\.rate_mbps: must be at most 1e6 Mbit/s \(1 Tbit/s\), got 1000000000"):
        sim.command("flows.video", rate_mbps=1e9)
    with pytest.raises(ValueError, match=r"set\.rate_mbps: must be at least 1 bit/s \(1e-6 Mbit/s\), got 1e-7"):
        sim.command("flows.video", rate_mbps=1e-7)
    with pytest.raises(ValueError, match=r"must be a positive number, got -1e300"):
        sim.command("flows.video", rate_mbps=-1e300)
    assert sim.advance_to(1e12) > 0 and sim.now_s == sim.end_s  # past the end: to the end
    sim.finish()
    with pytest.raises(RuntimeError, match="finished"):
        sim.advance_to(1)


def test_injected_packets_cross_the_model() -> None:
    d = small_scenario()
    d["flows"].append({"name": "real", "type": "external", "from": "server", "to": "phone", "dscp": 46})
    sim = lasthop.Sim(d)
    ids = []
    for k in range(10):  # before the Poisson flow overloads the last hop at 0.5 s
        sim.advance_to(0.05 + 0.04 * k)
        ids.append(sim.inject("real", 1000))
    sim.advance_to(2.0)
    back = sim.inject("real", 60, reverse=True)
    sim.advance_to(sim.end_s)
    out = sim.drain_egress()
    assert [e.id for e in out if not e.reverse] == ids and [e.id for e in out if e.reverse] == [back]
    forward = [e for e in out if not e.reverse]
    # 100 Mbit/s + 10 ms, then the 30 Mbit/s last hop + 2 ms (shared with the other flows' queue).
    assert all(e.delivered_ns - e.sent_ns >= 12_000_000 and e.dscp == 46 and e.flow == "real" for e in forward)
    res = sim.finish()
    real = res.flows.set_index("flow").loc["real"]
    assert (real["sent_packets"], real["delivered_packets"]) == (10, 10)
    with pytest.raises(ValueError, match="no `external` flow named 'video'"):
        lasthop.Sim(d).inject("video", 1000)


def test_commands_in_a_scenario_file_are_checked_with_their_path(tmp_path: Path) -> None:
    d = small_scenario()
    d["commands"] = [{"at_s": 1, "target": "stations.phone", "set": {"snr_db": 10}}]
    write_scenario(tmp_path / "bad.toml", d)
    r = lasthop_cli("check", "bad.toml", cwd=tmp_path)
    assert r.returncode == 2
    assert "commands[0].target: station 'phone' has no radio channel" in r.stderr, r.stderr
