"""LAST-PQ (seed 002) on the model: the spec's properties LP1–LP4 (LP5 is not reproduced: FIDELITY.md),
its demands changed at run time (scenario commands and ``Sim.command``), bad input named with its path,
and the quick experiments including the combinations with QAir and with Law + Zhuge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import lasthop_cli, write_scenario

import lasthop
from lasthop.experiments import lastpq as lpq
from lasthop.experiments import topology
from lasthop.experiments import run_experiment
from lasthop.experiments.plan import Done, PlannedRun
from lasthop.report.experiment import write_experiment_report
from lasthop.stats import percentile


def _home(**kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"phone_snr_db": lpq.SNR_DB["S2"], "k": 3, "f": 3, "duration_s": 8.0, "warmup_s": 2.0,
                            "mechanism": lpq.lastpq()}
    args.update(kw)
    return lpq.home("lastpq-test", **args)


def _run(sc: dict[str, Any]) -> Done:
    return Done(PlannedRun("x", sc, 1), lasthop.run(sc, seed=1))


def _policy(res: lasthop.RunResult) -> dict[str, Any]:
    return dict(res.summary["components"]["wifi"]["nodes"][0]["path"]["driver_policy"])


def test_lp1_one_flow_alone_is_untouched() -> None:
    """LP1: with the VR flow alone nothing competes, so precedence changes nothing: every packet's
    timestamps equal the stock Linux run's."""
    alone = {"k": 0, "f": 0, "phone_snr_db": 30.0}
    on, off = _run(_home(**alone)), _run(_home(mechanism=None, **alone))
    cols = [c for c in on.result.packets.columns if c.startswith("t_")]
    assert len(on.result.packets) > 10_000
    assert on.result.packets[cols].equals(off.result.packets[cols])
    assert _policy(on.result)["flows"][0]["priority_dequeues"] > 0, "the priority path did run"


def test_the_vr_flow_gets_its_rate_and_a_lower_tail_than_on_stock_linux() -> None:
    """The E2 cell k = f = 3 at S6: Linux leaves the VR flow a few Mbit/s; LAST-PQ gives it its 45 Mbit/s
    (≥ 0.95 × demand rate) and cuts its p95 latency (spec L10/L12, in direction)."""
    sc = _home(phone_snr_db=lpq.SNR_DB["S6"])
    on, off = _run(sc), _run({**sc, "aps": [{k: v for k, v in sc["aps"][0].items() if k != "mechanism"}]})
    vr_on = on.result.flows.set_index("flow").loc["vr"]
    vr_off = off.result.flows.set_index("flow").loc["vr"]
    assert vr_on["goodput_mbps"] >= 0.95 * 45 * 0.98  # TCP/IP headers: goodput is payload
    assert vr_off["goodput_mbps"] < 10
    p_on = percentile(lpq.vr_latency_ms(on)["latency_ms"], 95)
    p_off = percentile(lpq.vr_latency_ms(off)["latency_ms"], 95)
    assert p_on is not None and p_off is not None and p_on < 0.6 * p_off
    pol = _policy(on.result)
    assert pol["counters"]["priority_opportunities"] > 0.2 * pol["counters"]["opportunities"]


def test_lp3_a_looser_demand_takes_less_precedence() -> None:
    """LP3, first half: raising the demand from 20 to 40 ms lowers the share of VR dequeues on the
    priority path and raises l_pq. Measured where the VR flow's fair share comes near its rate (S2, two
    clients, no TCP at the phone, 22 s): 0.51 / 0.46 / 0.42 → 0.04 / 0.14 / 0.05 over seeds 1–3. Under
    E1's load (k = f = 3) the flow needs precedence for ≥ 99.5 % of its dequeues at any demand from 20
    to 60 ms, so the share cannot fall there. Its second half, more background goodput, does not hold:
    the VR flow's airtime is set by its 45 Mbit/s either way (FIDELITY.md, LAST-PQ)."""
    def run(ms: float) -> tuple[float, float]:
        res = lasthop.run(_home(mechanism=lpq.lastpq(ms), k=2, f=0, duration_s=22.0), seed=1)
        f = _policy(res)["flows"][0]
        share = f["priority_dequeues"] / (f["priority_dequeues"] + f["normal_dequeues"])
        return share, float(f["l_pq_us"])

    (s20, l20), (s40, l40) = run(20.0), run(40.0)
    assert s40 < 0.75 * s20, (s20, s40)
    assert l40 > l20


def test_lp2_every_e2_cell_keeps_its_windows_in_band() -> None:
    """LP2 (spec §17.5): in each E2 cell (the phone at S6, k clients, f TCP flows at the phone, k, f ∈
    {3, 4, 5}), the p95 of ≥ 80 % of the 20-ms windows after 2 s lies in the band [th_L, th_H] =
    [10, 19] ms of the 20-ms demand (0.83–0.87 over the cells, seed 1, 12 s)."""
    for k in (3, 4, 5):
        for f in (3, 4, 5):
            sc = _home(phone_snr_db=lpq.SNR_DB["S6"], k=k, f=f, duration_s=12.0)
            lat = lpq.vr_latency_ms(_run(sc))
            win = lpq.window_p95(lat)
            share = lpq.in_band(win[win["end_ms"] > 2000.0], lpq.DEMAND_MS)
            assert share is not None and share >= 0.8, (k, f, share)


def test_lp4_each_runtime_change_reaches_its_band_within_a_second() -> None:
    """LP4 (spec §17.5) on E1 (`lastpq-runtime`: 25 → 20 → 15 ms at 20 and 40 s of 60 s, k = f = 3): after
    each change, ≥ 80 % of the following second's 20-ms windows have their p95 in the new band. It
    holds for 25 → 20 ms at S2, S4 and S6 (seeds 1–3). For 20 → 15 ms the share is 0.77 / 0.76 / 0.73 at
    S2 / S4 / S6 (seed 1; seeds 2–3: 0.81 / 0.72 / 0.78, 0.80 / 0.86 / 0.68): the band [7.5, 14] ms is
    within a few ms of what the phone's rate drains a 1080p frame in beside six TCP flows, so one
    second's share swings around 0.8, and the phase's own share is about the same (0.80 / 0.79 / 0.75):
    band-keeping, not slow settling. For those three the test holds only weaker bounds (FIDELITY.md,
    LAST-PQ, E1): more than 60 % of the second's windows in band, and that second's p95 and the phase's
    within 1 ms of the demand. Every change reaches its band within 150 ms."""
    doc = run_experiment("lastpq-runtime")
    changes = {(r["location"], r["demand_ms"]): r for r in doc["rows"] if r["demand_ms"] < 25.0}
    assert len(changes) == 6
    # Fig. 10's view for the report: the demand's steps and each location's p95 per 100 ms.
    assert [s["label"] for s in doc["series"]] == ["demand", "lastpq S2", "lastpq S4", "lastpq S6"]
    assert doc["series"][0]["p95_ms"][199:201] == [25.0, 20.0] and len(doc["series"][3]["p95_ms"]) == 600
    for key, r in changes.items():
        assert r["first_in_band_ms"] is not None and r["first_in_band_ms"] <= 150.0, r
        if key[1] == 20.0:
            assert r["lp4"], r
        else:
            # Fewer than 80 % of the first second's windows in band, but that second and the phase meet
            # the new demand (p95 ≤ demand + 1 ms, spec §17.4's criterion).
            assert r["windows_in_band_first_s"] > 0.6, r
            assert r["p95_first_s_ms"] <= key[1] + 1.0 and r["p95_ms"] <= key[1] + 1.0, r


def test_l13_l15_the_walk_freezes_linux_and_lastpq_keeps_the_paper_frame_rate() -> None:
    """E3 (`lastpq-mobility`, both 60-s walks, seed 1): stock Linux leaves the VR stream nearly frozen
    (L13: 1.52 / 1.25 fps against the paper's 1.41 / 1.50, within its ±30 %; every 1-s p95 over 60 ms,
    the paper's 98 %); LAST-PQ keeps its mean frame rate within 15 % of the paper's 26.86 / 27.56 fps
    (L15; here 29.9 / 29.5). The walk's Rician K is calibrated on L13 (`WALK_FADING_K_DB`); under
    Rayleigh fading the Linux walk back gave 0.78–1.13 fps (seeds 1–2)."""
    rows = {(r["variant"], r["walk"]): r for r in run_experiment("lastpq-mobility")["rows"]}
    assert len(rows) == 4
    for (variant, walk), r in rows.items():
        if variant == "linux":
            paper = 1.41 if walk == "M1→M8" else 1.50
            assert abs(r["mean_fps"] / paper - 1.0) < 0.3 and r["share_of_p95_over_60ms"] > 0.9, r
        else:
            paper = 26.86 if walk == "M1→M8" else 27.56
            assert abs(r["mean_fps"] / paper - 1.0) < 0.15, r
            assert r["time_to_30fps_s"] is not None, r


def test_a_demand_changed_by_a_command_or_by_the_api_takes_effect_from_then_on() -> None:
    """LP4 in direction, S2: the p95 follows the demand down (25 → 12 ms at 6 s); the stepped run with
    ``Sim.command`` gives every packet the timestamps of the scripted one and the same event digest (no
    other event falls on 6 s to the nanosecond), and its summary records the command, so running the
    summary's scenario with its seed gives the stepped run again."""
    sc = _home(mechanism=lpq.lastpq(25.0), duration_s=12.0)
    cmd = {"at_s": 6.0, "target": "aps.ap.lastpq", "set": {"demand_ms": {"vr": 12}}}
    scripted = _run({**sc, "commands": [cmd]})
    sim = lasthop.Sim(sc, seed=1)
    sim.advance_to(6.0)
    sim.command("aps.ap.lastpq", demand_ms={"vr": 12})
    sim.advance_to(sim.end_s)
    stepped = sim.finish()
    cols = [c for c in stepped.packets.columns if c.startswith("t_")]
    assert stepped.packets[cols].equals(scripted.result.packets[cols])
    assert stepped.summary["scenario"]["commands"] == [cmd]
    assert (stepped.summary["event_digest"], stepped.summary["events"]) == \
        (scripted.result.summary["event_digest"], scripted.result.summary["events"])
    again = lasthop.run(stepped.scenario, seed=stepped.summary["seed"])
    assert again.summary["event_digest"] == stepped.summary["event_digest"]
    assert _policy(stepped)["flows"][0]["demand_ms"] == 12.0
    lat = lpq.vr_latency_ms(scripted)
    before = percentile(lat[(lat["t_ms"] > 3000) & (lat["t_ms"] <= 6000)]["latency_ms"], 95)
    after = percentile(lat[lat["t_ms"] > 7000]["latency_ms"], 95)
    assert before is not None and after is not None and after < before


@pytest.mark.parametrize(("set_", "msg"), [
    ({"demand_ms": {"voip": 10}}, "set.demand_ms.voip: 'voip' is not a flow LAST-PQ prioritizes here (it prioritizes vr; add it with add_flows)"),
    ({"demand_ms": {"vr": -5}}, "set.demand_ms.vr: must be a positive number"),
    ({"demand_ms": {"vr": float("nan")}}, "set.demand_ms.vr: must be a finite number, got nan"),
    ({"demand_ms": {"vr": 1.5}}, "set.demand_ms.vr: 1.5 ms leaves no band"),
    ({"percentile": {"vr": 120}}, "set.percentile.vr: must be in (0, 100]"),
    ({"demand_ms": 15}, "set.demand_ms: must be a non-empty table of flow name = value"),
    ({"limit_q_ms": 15}, "set.limit_q_ms: unknown key; this target takes add_flows, demand_ms, percentile"),
    ({"add_flows": [{"flow": "vr", "demand_ms": 30}]}, "set.add_flows[0].flow: 'vr' is prioritized already"),
    ({"add_flows": [{"flow": "nope", "demand_ms": 30}]}, "set.add_flows[0].flow: no flow named 'nope'"),
    ({"add_flows": [{"flow": "t1", "demand_ms": 30}, {"flow": "t1", "demand_ms": 40}]}, "set.add_flows[1].flow: 't1' is prioritized already"),
    ({"add_flows": [{"flow": "t1", "demand_ms": 1.5}]}, "set.add_flows[0].demand_ms: 1.5 ms leaves no band"),
    ({"add_flows": [{"flow": "t1"}]}, "set.add_flows[0]: missing field `demand_ms`"),
    ({"add_flows": {"flow": "t1", "demand_ms": 30}}, "set.add_flows: must be a non-empty list of { flow, demand_ms, percentile }"),
    ({"add_flows": [{"flow": "t1", "demand_ms": 30}], "demand_ms": {"t2": 30}}, "set.demand_ms.t2: 't2' is not a flow LAST-PQ prioritizes here (it prioritizes vr, t1;"),
])
def test_bad_demands_are_refused_with_their_path(set_: dict[str, Any], msg: str) -> None:
    sim = lasthop.Sim(_home(duration_s=3.0))
    with pytest.raises(ValueError) as e:
        sim.command("aps.ap.lastpq", set_)
    assert msg in str(e.value), str(e.value)


def test_a_flow_added_at_run_time_gets_its_demand_from_then_on() -> None:
    """Spec §16's `add_flow` as a command (`add_flows`): the E2 cell k = f = 3 at S6 with LAST-PQ and no
    flow prioritized yet; the VR flow, added at 6 s with a 20-ms demand, has its stock-Linux share before
    and its rate and demand after (seed 1: see the assertions' bounds). The stepped run with
    ``Sim.command`` is the scripted one to the event digest, and a later stepped demand change of the
    added flow resolves against it; a stepped add of a flow a scripted command adds later is refused."""
    sc = _home(phone_snr_db=lpq.SNR_DB["S6"], duration_s=12.0, mechanism={"type": "lastpq"})
    add = {"add_flows": [{"flow": "vr", "demand_ms": 20}]}
    scripted = _run({**sc, "commands": [{"at_s": 6.0, "target": "aps.ap.lastpq", "set": add}]})
    lat = lpq.vr_latency_ms(scripted)
    for (a, b), (p95_ok, rate_ok) in {(2, 6): (lambda p: p > 40.0, lambda r: r < 15.0), (7, 12): (lambda p: p <= 21.0, lambda r: r >= 0.95 * 45)}.items():
        part = lat[(lat["t_ms"] >= a * 1e3) & (lat["t_ms"] < b * 1e3)]
        p95, mbps = percentile(part["latency_ms"], 95), len(part) * 1448 * 8 / (b - a) / 1e6
        assert p95 is not None and p95_ok(p95) and rate_ok(mbps), (a, b, p95, mbps)
    flows = {f["flow"]: f for f in _policy(scripted.result)["flows"]}
    assert list(flows) == ["vr"] and flows["vr"]["priority_dequeues"] > 10 * flows["vr"]["normal_dequeues"]
    sim = lasthop.Sim(sc, seed=1)
    with pytest.raises(ValueError, match=r"'vr' is not a flow LAST-PQ prioritizes here \(it prioritizes none yet; add it with add_flows\)"):
        sim.command("aps.ap.lastpq", demand_ms={"vr": 15})
    sim.advance_to(6.0)
    sim.command("aps.ap.lastpq", add)
    sim.advance_to(9.0)
    sim.command("aps.ap.lastpq", demand_ms={"vr": 15})
    sim.advance_to(sim.end_s)
    stepped = sim.finish()
    assert _policy(stepped)["flows"][0]["demand_ms"] == 15.0
    replay = lasthop.run(stepped.scenario, seed=1)
    assert replay.summary["event_digest"] == stepped.summary["event_digest"]
    only_add = lasthop.Sim(sc, seed=1)
    only_add.advance_to(6.0)
    only_add.command("aps.ap.lastpq", add)
    only_add.advance_to(only_add.end_s)
    assert only_add.finish().summary["event_digest"] == scripted.result.summary["event_digest"]
    # Adding by hand what the scenario adds later would leave that command unusable: refused, named.
    ahead = lasthop.Sim({**sc, "commands": [{"at_s": 6.0, "target": "aps.ap.lastpq", "set": add}]}, seed=1)
    ahead.advance_to(3.0)
    with pytest.raises(ValueError, match=r"would leave the scenario's commands\[0\] \(at 6 s\) unusable: "
                                         r"commands\[0\]\.set\.add_flows\[0\]\.flow: 'vr' is prioritized already"):
        ahead.command("aps.ap.lastpq", add)
    ahead.advance_to(ahead.end_s)
    assert ahead.finish().summary["event_digest"] == scripted.result.summary["event_digest"]


def test_a_stepped_run_refuses_a_time_it_cannot_reach() -> None:
    sim = lasthop.Sim(_home(duration_s=3.0))
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="advance_to: t_s must be a finite time ≥ 0 s"):
            sim.advance_to(bad)
    with pytest.raises(ValueError, match="advance_to_ns: t_ns must be ≥ 0"):
        sim.advance_to_ns(-5)
    assert sim.advance_to(1.0) > 0 and sim.advance_to(0.5) == 0 and sim.now_s == 1.0


def test_bad_scenarios_name_the_key(tmp_path: Path) -> None:
    sc = _home(duration_s=3.0)
    sc["aps"][0]["mechanism"] = {"type": "lastpq", "flows": [{"flow": "vr", "demand_ms": 20}, {"flow": "nope", "demand_ms": 20},
                                                           {"flow": "t1", "demand_ms": 0}]}
    sc["commands"] = [{"at_s": 0.5, "target": "aps.ap.lastpq", "set": {"demand_ms": {"t2": 10}}}]
    write_scenario(tmp_path / "bad.toml", sc)
    r = lasthop_cli("check", "bad.toml", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "aps[0].mechanism.flows[1].flow: no flow named 'nope'" in r.stderr, r.stderr
    assert "aps[0].mechanism.flows[2].demand_ms: must be a positive number" in r.stderr, r.stderr


def test_commands_resolve_against_the_commands_before_them(tmp_path: Path) -> None:
    """A demand change of a flow that `add_flows` prioritizes later (or at the same instant, listed
    after it) is an error at its path; after the add it is fine; adding a flow twice is refused."""
    cmd = lambda at_s, set_: {"at_s": at_s, "target": "aps.ap.lastpq", "set": set_}  # noqa: E731
    add = lambda flow: {"add_flows": [{"flow": flow, "demand_ms": 40}]}  # noqa: E731
    sc = _home(duration_s=3.0)
    sc["commands"] = [cmd(1, {"demand_ms": {"t1": 30}}), cmd(2, add("t1")), cmd(2, {"demand_ms": {"t1": 25}}),
                      cmd(2, {"demand_ms": {"t2": 25}}), cmd(2.5, add("t2")), cmd(1, add("b1")), cmd(2, add("b1"))]
    write_scenario(tmp_path / "bad.toml", sc)
    r = lasthop_cli("check", "bad.toml", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    errors = [line for line in r.stderr.splitlines() if "commands[" in line]
    assert len(errors) == 3, r.stderr
    assert "commands[0].set.demand_ms.t1: 't1' is not a flow LAST-PQ prioritizes here (it prioritizes vr; commands[1] adds it " \
           "at 2 s, after this command)" in errors[0], errors
    assert "commands[3].set.demand_ms.t2: 't2' is not a flow LAST-PQ prioritizes here (it prioritizes vr, t1, b1; commands[4] adds it " \
           "at 2.5 s, after this command)" in errors[1], errors
    assert "commands[6].set.add_flows[0].flow: 'b1' is prioritized already" in errors[2], errors
    # A command whose time is no time is refused at its at_s, and the others still resolve.
    sc["commands"] = [cmd(-1, add("t1")), cmd(1e30, add("t2")), cmd(1, {"demand_ms": {"t1": 30}})]
    write_scenario(tmp_path / "bad_time.toml", sc)
    r = lasthop_cli("check", "bad_time.toml", cwd=tmp_path)
    assert r.returncode == 2 and "commands[0].at_s: must be within the run" in r.stderr, r.stderr
    assert "commands[1].at_s: must be within the run" in r.stderr and "Panic" not in r.stderr, r.stderr


def test_lastpq_needs_the_linux_path(tmp_path: Path) -> None:
    sc = _home(duration_s=3.0)
    sc["aps"][0]["last_hop"]["profile"] = "ns3"
    del sc["aps"][0]["last_hop"]["ap_path"]  # an explicit Linux path would stand beside the ns-3 profile
    write_scenario(tmp_path / "bad.toml", sc)
    r = lasthop_cli("check", "bad.toml", cwd=tmp_path)
    assert r.returncode == 2 and "`lastpq` needs the `linux` transmit path" in r.stderr, r.stderr


def test_the_quick_experiments_show_each_mechanism_acting(tmp_path: Path) -> None:
    static = run_experiment("lastpq-static", quick=True)
    by = {r["variant"]: r for r in static["rows"]}
    # Spec §17.4's rows against ours, each with its criterion and verdict, in the JSON and on the page.
    checks = {(c["row"], c["metric"]): c for c in static["checks"]}
    assert {r for r, _ in checks} == {"L10", "L11", "L12"}
    assert checks[("L10", "LAST-PQ max VR p95 (ms)")]["met"] is (by["lastpq"]["vr_p95_ms"] <= 21.0)
    assert checks[("L12", "LAST-PQ lowest VR rate (Mbit/s)")]["lasthop"] == by["lastpq"]["vr_mbps"]
    page = write_experiment_report(static, tmp_path / "static").read_text()
    assert "Against the paper" in page and "L11" in page and ("✓ met" in page or "✗ not met" in page)
    assert by["lastpq"]["vr_mbps"] > 4 * by["linux"]["vr_mbps"]
    assert by["lastpq"]["vr_p95_ms"] < by["linux"]["vr_p95_ms"]
    edca_doc = run_experiment("lastpq-edca", quick=True)
    edca = {(r["case"], r["flow"]): r for r in edca_doc["rows"]}
    assert edca[("E4b", "vr1")]["priority_share"] > 0.5 and edca[("C4", "vr1")]["priority_share"] is None
    # C5 (L8's shape): three TCP flows at the phone beside three clients, all in AC_VI, worsen the VR p95.
    assert edca_doc["C5_shape"]["worse_with_flows"]
    assert edca[("C5/3F3C", "vr")]["p95_ms"] > edca[("C5/0F3C", "vr")]["p95_ms"]
    mobility = run_experiment("lastpq-mobility", quick=True)
    walk = {r["variant"]: r for r in mobility["rows"]}
    assert walk["lastpq"]["mean_fps"] > 5 * walk["linux"]["mean_fps"]
    # Fig. 12's view: per second of the walk, each run's FPS (their mean is the row's) and VR p95.
    for s in mobility["series"]:
        variant = s["label"].split()[0]
        assert len(s["fps"]) == len(s["p95_ms"]) == len(s["t_s"]) == 20
        assert abs(sum(s["fps"]) / 20 - walk[variant]["mean_fps"]) < 1e-9
    page = write_experiment_report(mobility, tmp_path / "mobility").read_text()
    assert "<h2>Over time</h2>" in page and page.count("<img") == 2
    combo = run_experiment("lastpq-qair", quick=True)
    rows = {r["variant"]: r for r in combo["rows"]}
    assert set(rows) == {"linux", "lastpq", "qair", "qair_lastpq"}
    # LAST-PQ acts beside QAir: more VR rate and a shorter VR tail than under QAir alone. In these 6-s
    # runs of a dense network the VR flow is still starting (2.2-5.7x the rate, 0.45-0.85x the p95 over
    # seeds 1-4), so the bounds leave room; the full experiment's three 22-s seeds carry the magnitudes.
    both, qair = rows["qair_lastpq"], rows["qair"]
    assert both["vr_mbps"] > 1.5 * qair["vr_mbps"] and both["vr_p95_ms"] < qair["vr_p95_ms"], "LAST-PQ acts beside QAir"
    r = lasthop_cli("reproduce", "law-zhuge", "--quick", "--out", str(tmp_path / "lz"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # The terminal says what --quick left out (seeds 2 and 3, 21 s of each run).
    assert "quick: 1 of 3 cases (seed=1), runs of up to 9 s instead of 30 s" in " ".join(r.stdout.split()), r.stdout
    doc = json.loads((tmp_path / "lz" / "experiment.json").read_text())
    lz = {row["variant"]: row for row in doc["rows"]}
    # Zhuge acts on the feedback with and without Law; Law's stages of the path show in the call's rate.
    assert lz["law_zhuge"]["twcc_rewritten"] > 0 and lz["law_zhuge"]["acks_held"] > 0
    assert lz["law"]["twcc_rewritten"] == 0
    assert lz["law_zhuge"]["call_mbps"] != lz["zhuge"]["call_mbps"]
    page = (tmp_path / "lz" / "report.html").read_text()
    assert "law_zhuge" in page and page.count("<img") == len(doc["figures"])


def test_the_controller_options_run_and_act() -> None:
    """`count_drops_as_inf` and `lpq_source = "head_packet"` (spec §13.1, §13.4) are scenario keys; what
    the controller makes of a drop, and of a mark, is in the Rust unit vectors. Here, the plumbing: the
    policy hears of every packet of its flows the AP drops — here a 150-Mbit/s prioritized UDP flow over a 60-Mbit/s link, CoDel and FQ cutting half of
    it; head-packet marks change the congested home's run; a bad value is an error at its path."""
    def overloaded(extra: dict[str, Any]) -> dict[str, Any]:
        return topology.single_ap("drops", duration_s=4.0, warmup_s=1.0, server="server", last_hop=topology.wifi(width_mhz=20),
                                  stations=[topology.station("sta", topology.fixed_snr(30.0))],
                                  flows=[topology.udp_cbr("vr", "server", "sta", 150.0, 1500)], link_delay_ms=1.0,
                                  mechanism={"type": "lastpq", "flows": [{"flow": "vr", "demand_ms": 20.0}], **extra})
    for count in (False, True):
        res = lasthop.run(overloaded({"count_drops_as_inf": count}), seed=1)
        dropped = int((res.packets["flow"].eq("vr") & res.packets["drop_reason"].notna()).sum())
        assert dropped > 1000
        assert _policy(res)["flows"][0]["drops"] == dropped, count
    base = _run(_home(duration_s=4.0, warmup_s=1.0))
    marks = _run(_home(duration_s=4.0, warmup_s=1.0, mechanism={**lpq.lastpq(), "lpq_source": "head_packet"}))
    assert marks.result.summary["event_digest"] != base.result.summary["event_digest"]
    with pytest.raises(lasthop.ScenarioError, match=r"aps\[0\]\.mechanism\.lpq_source"):
        lasthop.Scenario.from_dict(_home(mechanism={**lpq.lastpq(), "lpq_source": "tail"}))


def test_lp4_settling_reads_the_second_after_a_change() -> None:
    """LP4's measure on hand-made windows: a change to 20 ms at 1 s (band [10, 19] ms); the first five
    20-ms windows after it still at 25 ms, the rest at 15 ms: the first in band ends 120 ms after the
    change, 45 of the second's 50 windows are in band (LP4 holds); with fifteen slow windows 35 of 50
    (it does not). Windows before the change or after the second do not count."""
    import pandas as pd

    def windows(slow: int) -> pd.DataFrame:
        ends = np.arange(1, 151) * 20.0  # 0–3 s
        p = np.where((ends > 1000.0) & (ends <= 1000.0 + 20.0 * slow), 25.0, 15.0)
        p[(ends <= 1000.0) | (ends > 2000.0)] = 30.0
        return pd.DataFrame({"end_ms": ends, "p_ms": p})

    lat = pd.DataFrame({"t_ms": np.arange(500.5, 2500.0, 1.0),
                        "latency_ms": np.r_[np.full(500, 40.0), np.full(100, 25.0), np.full(900, 15.0), np.full(500, 40.0)]})
    s = lpq.settling(lat, windows(5), 1000.0, 20.0)
    assert s == {"first_in_band_ms": 120.0, "p95_first_s_ms": 25.0, "windows_in_band_first_s": 0.9, "lp4": True}
    s = lpq.settling(lat, windows(15), 1000.0, 20.0)
    assert (s["first_in_band_ms"], s["windows_in_band_first_s"], s["lp4"]) == (320.0, 0.7, False)
