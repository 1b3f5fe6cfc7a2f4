"""Every class of bad input exits 2 with one line per problem on stderr, naming the field; no traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import lasthop_cli, small_scenario, toml_dumps


def _edit(path: list[Any], value: Any) -> dict[str, Any]:
    d = small_scenario()
    target: Any = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return d


# (case id, scenario TOML text, text stderr must contain)
CASES = [
    ("unknown key", toml_dumps(_edit(["flows", 0, "rtae"], 3)), "flows[0].rtae: unknown field `rtae`"),
    ("unknown nested key", toml_dumps(_edit(["links", 0, "queue"], {"type": "fifo", "pakets": 5})),
     "links[0].queue.pakets: unknown field `pakets`"),
    ("unknown top-level key", "bogus = 1\n" + toml_dumps(small_scenario()), "bogus: unknown field `bogus`"),
    ("wrong type", toml_dumps(_edit(["links", 0, "rate_mbps"], "fast")),
     'links[0].rate_mbps: invalid type: string "fast", expected a number'),
    ("a byte out of range", toml_dumps(_edit(["flows", 0, "dscp"], 300)),
     "flows[0].dscp: invalid value: integer `300`, expected a whole number in 0..=255"),
    ("a flow as a string", toml_dumps(_edit(["flows", 0], "video")), "flows[0]: invalid type: string \"video\", expected a table with a `type` key"),
    ("negative duration", toml_dumps(_edit(["duration_s"], -5)), "duration_s: must be a positive number, got -5"),
    ("rate 0", toml_dumps(_edit(["flows", 1, "rate_mbps"], 0)), "flows[1].rate_mbps: must be a positive number, got 0"),
    ("unknown node", toml_dumps(_edit(["flows", 0, "to"], "nobody")), "flows[0].to: no node named 'nobody'"),
    ("unknown type tag", toml_dumps(_edit(["flows", 0, "type"], "udp_cbx")), "unknown variant `udp_cbx`"),
    ("missing key", toml_dumps({k: v for k, v in small_scenario().items() if k != "duration_s"}),
     "missing field `duration_s`"),
    ("TOML syntax", 'name = "x"\nduration_s = 3\nseed = \n', "bad.toml:3:"),
    # Issue 13: these passed validation and panicked in the core.
    ("duration past the clock", toml_dumps(_edit(["duration_s"], 1e300)), "duration_s: must be at most 1e9 s"),
    ("rate rounding to zero", toml_dumps(_edit(["links", 0, "rate_mbps"], 1e-300)),
     "links[0].rate_mbps: must be at least 1 bit/s"),
    ("station without its AP", toml_dumps(_edit(["aps"], [])), "aps: at least one access point is required"),
    # Found by a new user's probe: accepted silently, or named at the wrong place.
    ("a second link between two nodes", toml_dumps(_edit(["links"], [{"a": "server", "b": "ap", "rate_mbps": 10},
                                                                     {"a": "ap", "b": "server", "rate_mbps": 20}])),
     "links[1]: 'ap' and 'server' are joined already (links[0]): one link between two nodes"),
    ("CoDel's parameters in their table", toml_dumps(_edit(["links", 0, "queue"], {"type": "fq_codel", "codel": {"interval_us": 0}})),
     "links[0].queue.codel.interval_us: must be > 0"),
    ("a fixed rate with more streams than the BSS", toml_dumps(_edit(["aps", 0, "last_hop"], {
        "type": "wifi", "standard": "ht", "rate_control": {"type": "fixed", "mcs": 8}})),
     "aps[0].last_hop.rate_control: the fixed rate needs 2 spatial streams; the BSS has 1 (max_nss)"),
    ("a ramp's SNR", toml_dumps(_edit(["aps", 0, "last_hop"], {"type": "wifi"}) | {"stations": [
        {"name": "laptop", "channel": {"type": "ramp", "points": [[0.2, 500], [0.5, 3]]}}, {"name": "phone"}]}),
     "stations[0].channel.points: point 0: the SNR must be in -30..=100 dB, got 500"),
    ("a TXOP limit past its field", toml_dumps(_edit(["aps", 0, "last_hop"], {"type": "wifi", "edca_ap": {"be": {"txop_limit_us": 1000000000}}})),
     "aps[0].last_hop.edca_ap.be.txop_limit_us: must be at most 8160 µs (255 units of 32 µs), got 1000000000"),
    ("a flow logged twice", toml_dumps(_edit(["output"], {"flows": ["video", "video"]})), "output.flows[1]: 'video' is listed already (flows[0])"),
    # Found by a review: a whole-valued or huge float where a whole number belongs was named at the
    # tagged table around it (serde_json writes 20.0 and 1e+300 where Rust's {} writes 20 and 301 digits).
    ("a whole-valued float for a count", toml_dumps(_edit(["links", 0, "queue"], {"type": "fifo", "packets": 20.0})),
     "links[0].queue.packets: invalid type: floating point `20.0`, expected a whole number"),
    ("a huge float for a count", toml_dumps(_edit(["links", 0, "queue"], {"type": "fifo", "packets": 1e300})),
     "links[0].queue.packets: invalid type: floating point `1e+300`, expected a whole number"),
    ("a QAir target given twice, tiny", toml_dumps(_edit(["aps", 0, "mechanisms"], [{"type": "qair", "n_star": 1e-300, "t_target_ms": 5}])),
     "aps[0].mechanisms[0].n_star: T_target is either given (t_target_ms = 5) or derived (n_star = 1e-300), not both"),
    ("flows to log with nothing logged", toml_dumps(_edit(["output"], {"flows": ["video"], "packets": "none"})),
     'output.flows: selects the flows whose packets are logged; with packets = "none" none are'),
    ("nested too deeply", "x = " + "[" * 5000 + "]" * 5000 + "\n", "bad.toml: nested too deeply to read"),
    # Issue 18: accepted before, meaningless.
    ("NaN names the file", toml_dumps(_edit(["flows", 0, "rate_mbps"], 1.0)).replace("rate_mbps = 1.0", "rate_mbps = nan", 1),
     "error: bad.toml: flows[0].rate_mbps: must be a finite number, got nan"),
    ("flow after the end", toml_dumps(_edit(["flows", 0, "start_s"], 99)),
     "flows[0].start_s: starts after the run ends (duration_s = 3"),
    ("pacing rate 0", toml_dumps(_edit(["flows", 0], {"name": "video", "type": "tcp", "from": "server", "to": "laptop",
                                                      "tcp": {"max_pacing_rate_mbps": 0}})),
     "flows[0].tcp.max_pacing_rate_mbps: must be between 0.01 and 100000 Mbit/s, got 0"),
]


@pytest.mark.parametrize("command", ["run", "check"])
@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_scenario_exits_2_naming_the_field(tmp_path: Path, command: str, text: str, expected: str) -> None:
    (tmp_path / "bad.toml").write_text(text, encoding="utf-8")
    r = lasthop_cli(command, "bad.toml", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert expected in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""
    assert all(line.startswith("error: bad.toml") for line in r.stderr.splitlines() if line.startswith("error"))
    assert not (tmp_path / "runs").exists()


def test_every_problem_is_reported_one_per_line(tmp_path: Path) -> None:
    d = _edit(["duration_s"], -1)
    d["flows"][0]["rate_mbps"] = 0
    d["flows"][1]["to"] = "nobody"
    (tmp_path / "bad.toml").write_text(toml_dumps(d), encoding="utf-8")
    r = lasthop_cli("check", "bad.toml", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "error: bad.toml: duration_s: must be a positive number, got -1",
        "error: bad.toml: flows[0].rate_mbps: must be a positive number, got 0",
        "error: bad.toml: flows[1].to: no node named 'nobody'",
    ]


def test_wrong_type_inside_a_tagged_table_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(toml_dumps(_edit(["flows", 0, "rate_mbps"], "fast")), encoding="utf-8")
    r = lasthop_cli("check", "bad.toml", cwd=tmp_path)
    assert r.returncode == 2
    assert "flows[0].rate_mbps: invalid type" in r.stderr


def test_missing_scenario_file(tmp_path: Path) -> None:
    r = lasthop_cli("run", "nope.toml", cwd=tmp_path)
    assert r.returncode == 2
    assert "nope.toml: no such file" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("command", ["run", "compare", "sweep", "reproduce", "emulate", "replay", "report"])
def test_an_empty_out_is_refused_before_anything_is_written(small: Path, command: str) -> None:
    """``--out ''`` named the current directory without a word: ``run`` wrote its tables there."""
    before = sorted(p.name for p in small.parent.iterdir())
    first = {"reproduce": "zhuge-rtp", "replay": "runs", "report": "runs"}.get(command, small.name)
    r = lasthop_cli(command, first, "--out", "", cwd=small.parent)
    assert r.returncode == 2, r.stderr
    assert "Invalid value for '--out': an empty path: give a directory" in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in small.parent.iterdir()) == before


@pytest.mark.parametrize(("args", "expected"), [
    (["run", "small.toml", "--sed", "3"], "No such option '--sed'"),
    (["run", "small.toml", "--seed", "-1"], "Invalid value for '--seed'"),
    (["run", "small.toml", "--seed", "many"], "Invalid value for '--seed'"),
    (["run"], "Missing argument 'SCENARIO'"),
    (["frobnicate"], "No such command 'frobnicate'"),
    # Found by a new user's probe: a traceback, and a flag of another bench silently ignored.
    (["bench", "--seconds", "0"], "Invalid value for '--seconds'"),
    (["bench", "--seconds", "nan"], "--seconds: must be a finite number of seconds, got nan"),
    (["bench", "--busy-seconds", "5"], "--busy-seconds sizes the --realistic bench: add --realistic"),
    (["bench", "--realistic", "--n", "5"], "--n picks a saturated scenario of the default bench, not of --realistic"),
    (["bench", "--realistic", "--seconds", "5"], "--seconds sizes the saturated bench and --emulation; --realistic takes"),
    (["bench", "--emulation", "--repeat", "2"], "--repeat does not apply to --emulation"),
    (["bench", "--emulation", "--seconds", "31"], "with --emulation, iperf3's run time: at most 30 s (default 5), got 31"),
])
def test_bad_flags_exit_2(small: Path, args: list[str], expected: str) -> None:
    r = lasthop_cli(*args, cwd=small.parent)
    assert r.returncode == 2
    assert expected in r.stderr and "Traceback" not in r.stderr


def test_a_scenario_without_stations_or_flows_runs_and_reports(tmp_path: Path) -> None:
    """Issue 13: an empty stations or flows list ended in a pandas KeyError; it is a valid, empty run
    whose flows table still has its columns, and `report` and `compare` accept it."""
    d = {k: v for k, v in small_scenario().items() if k not in ("stations", "flows")}
    d |= {"stations": [], "flows": []}
    (tmp_path / "empty.toml").write_text(toml_dumps(d), encoding="utf-8")
    p = lasthop_cli("run", "empty.toml", "--out", "run", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    import pandas as pd

    flows = pd.read_parquet(tmp_path / "run" / "flows.parquet")
    assert len(flows) == 0 and "flow" in flows.columns and "latency_p99_ms" in flows.columns
    for args in (["report", "run"], ["compare", "empty.toml", "--out", "cmp"]):
        p = lasthop_cli(*args, cwd=tmp_path)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


def test_snr_outside_what_any_radio_sees_is_refused(tmp_path: Path) -> None:
    d = small_scenario()
    d["aps"][0]["last_hop"] = {"type": "wifi", "profile": "linux"}
    d["stations"][0]["channel"] = {"type": "fixed_snr", "snr_db": -500}
    (tmp_path / "snr.toml").write_text(toml_dumps(d), encoding="utf-8")
    r = lasthop_cli("check", "snr.toml", cwd=tmp_path)
    assert r.returncode == 2 and "stations[0].channel.snr_db: must be in -30..=100 dB, got -500" in r.stderr, r.stderr


def test_unwritable_out_fails_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(toml_dumps(small_scenario()), encoding="utf-8")
    (tmp_path / "file").write_text("not a directory")
    r = lasthop_cli("run", "s.toml", "--out", "file/run", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("error: cannot write the run directory file/run"), r.stderr
    assert "running" not in r.stderr.splitlines()[-1]


def test_captures_that_cannot_be_put_in_place_fail_before_the_run(tmp_path: Path) -> None:
    """``--pcap`` with OUT/pcap a file: refused before the run, naming it (the run was written, with its
    summary, and then the command failed, naming OUT)."""
    (tmp_path / "s.toml").write_text(toml_dumps(small_scenario()), encoding="utf-8")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "pcap").write_text("a file")
    r = lasthop_cli("run", "s.toml", "--out", "out", "--pcap", cwd=tmp_path)
    assert r.returncode == 2 and "out/pcap exists and is not a directory" in r.stderr, r.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_byte_order_mark_is_not_content(tmp_path: Path) -> None:
    """A scenario saved with a UTF-8 byte-order mark (as some Windows editors save) reads as without
    one; it was a TOML error at 1:1."""
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + toml_dumps(small_scenario()).encode())
    r = lasthop_cli("check", "bom.toml", cwd=tmp_path)
    assert r.returncode == 0 and "ok: small" in r.stdout, r.stdout + r.stderr


def test_a_hidden_pair_listed_twice(tmp_path: Path) -> None:
    d = small_scenario()
    d["aps"] = [{"name": "ap", "last_hop": {"type": "wifi"}}, {"name": "ap2", "last_hop": {"type": "wifi"}}]
    d["stations"][1]["ap"] = "ap2"
    d["links"].append({"a": "server", "b": "ap2", "rate_mbps": 100})
    d["hidden_nodes"] = [["ap", "ap2"], ["ap2", "ap"]]
    (tmp_path / "h.toml").write_text(toml_dumps(d), encoding="utf-8")
    r = lasthop_cli("check", "h.toml", cwd=tmp_path)
    assert r.returncode == 2 and "hidden_nodes[1]: the pair 'ap2', 'ap' is listed already (hidden_nodes[0])" in r.stderr, r.stderr
