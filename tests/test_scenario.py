"""The Python scenario API: loading, defaults, conveniences and structured errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import EXAMPLES, small_scenario, write_scenario

import lasthop
from lasthop import Scenario, ScenarioError


def test_load_example_resolves_defaults() -> None:
    sc = Scenario.load(EXAMPLES / "quickstart.toml")
    assert sc.name == "quickstart"
    assert sc.duration_s == 20
    d = sc.to_dict()
    assert d["flows"][0]["packet_bytes"] == 1200
    assert d["flows"][1]["dscp"] == 0  # default filled in
    assert d["links"][0]["queue"] == {"type": "fifo", "packets": 1000, "bytes": None}
    assert "1 server, 1 AP, 2 stations" in sc.describe()


def test_from_dict_matches_load(tmp_path: Path) -> None:
    d = small_scenario()
    path = write_scenario(tmp_path / "s.toml", d)
    assert Scenario.from_dict(d) == Scenario.load(path)
    assert Scenario.from_dict(Scenario.load(path).to_dict()) == Scenario.load(path)


def test_to_dict_is_a_copy() -> None:
    sc = Scenario.from_dict(small_scenario())
    sc.to_dict()["duration_s"] = 99
    assert sc.duration_s == 3


def test_with_seed_and_replace() -> None:
    sc = Scenario.from_dict(small_scenario())
    assert sc.with_seed(42).seed == 42 and sc.seed == 1
    assert sc.replace(duration_s=5).duration_s == 5
    with pytest.raises(ScenarioError) as e:
        sc.with_seed(-1)
    assert e.value.errors()[0]["loc"] == ("seed",)
    with pytest.raises(ScenarioError):
        sc.replace(duration_s=0)


def test_name_falls_back_to_file_stem(tmp_path: Path) -> None:
    d = small_scenario()
    del d["name"]
    assert Scenario.load(write_scenario(tmp_path / "my-net.toml", d)).name == "my-net"
    assert Scenario.from_dict(d).name == "scenario"


def test_errors_are_structured() -> None:
    d = small_scenario()
    d["duration_s"] = -1
    d["flows"][1]["rate_mbps"] = 0
    with pytest.raises(ScenarioError) as exc:
        Scenario.from_dict(d)
    e = exc.value
    assert isinstance(e, lasthop.LasthopError) and isinstance(e, ValueError)
    by_loc = {i["loc"]: i for i in e.errors()}
    assert set(by_loc) == {("duration_s",), ("flows", 1, "rate_mbps")}
    assert by_loc[("flows", 1, "rate_mbps")]["type"] == "value_error"
    assert by_loc[("flows", 1, "rate_mbps")]["input"] == 0
    assert "flows[1].rate_mbps: must be a positive number, got 0" in str(e).splitlines()
    assert "duration_s: must be a positive number, got -1" in str(e).splitlines()


def test_unknown_key_is_located() -> None:
    d = small_scenario()
    d["links"][0]["queue"] = {"type": "fifo", "pakets": 5}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    [issue] = e.value.errors()
    assert issue["type"] == "unknown_field"
    assert issue["loc"] == ("links", 0, "queue", "pakets")


def test_an_rtp_extension_id_outside_one_byte_ids_is_located() -> None:
    d = small_scenario()
    d["flows"].append({"name": "call", "type": "external", "from": "server", "to": "laptop",
                       "rtp": {"twcc_extension_id": 15}})
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    [issue] = e.value.errors()
    assert issue["loc"] == ("flows", 2, "rtp", "twcc_extension_id")
    assert "flows[2].rtp.twcc_extension_id: must be a one-byte header extension ID, 1..=14, got 15" in str(e.value)
    d["flows"][2]["rtp"]["twcc_extension_id"] = 14
    assert Scenario.from_dict(d).to_dict()["flows"][2]["rtp"] == {"twcc_extension_id": 14}


def test_toml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.toml"
    p.write_text('duration_s = 3\nname = "x"\nseed = \n', encoding="utf-8")
    with pytest.raises(ScenarioError) as e:
        Scenario.load(p)
    [issue] = e.value.errors()
    assert issue["type"] == "toml_syntax"
    assert f"{p}:3:" in str(e.value)


def test_missing_file() -> None:
    with pytest.raises(ScenarioError) as e:
        Scenario.load("does/not/exist.toml")
    assert e.value.errors()[0]["type"] == "file_unreadable"
    assert "does/not/exist.toml" in str(e.value)


def test_json_scenario_file(tmp_path: Path) -> None:
    import json

    p = tmp_path / "s.json"
    p.write_text(json.dumps(small_scenario()), encoding="utf-8")
    assert Scenario.load(p).name == "small"


def test_duplicate_flow_names_are_rejected() -> None:
    d = small_scenario()
    d["flows"][1]["name"] = "video"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.errors()[0]["loc"] == ("flows", 1, "name")
    # An explicit name that collides with the default name of another flow is caught too.
    d = small_scenario()
    d["flows"][0]["name"] = "flow1"
    del d["flows"][1]["name"]
    with pytest.raises(ScenarioError):
        Scenario.from_dict(d)


def test_values_python_cannot_send_are_located() -> None:
    d = small_scenario()
    d["flows"][0]["rate_mbps"] = float("nan")
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.errors()[0]["loc"] == ("flows", 0, "rate_mbps")
    d["flows"][0]["rate_mbps"] = object()
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.errors()[0]["type"] == "invalid_type"


def test_numpy_scalars_and_paths_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    d = small_scenario()
    d["duration_s"] = np.float64(2.0)
    d["seed"] = np.uint64(5)
    sc = Scenario.from_dict(d, base_dir=Path("."))
    assert (sc.duration_s, sc.seed) == (2.0, 5)


def test_errors_survive_pickling() -> None:
    import pickle

    from lasthop import TraceFormatError

    d = small_scenario()
    d["duration_s"] = 0
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    back = pickle.loads(pickle.dumps(e.value))
    assert back.errors() == e.value.errors() and str(back) == str(e.value)
    t = pickle.loads(pickle.dumps(TraceFormatError("a.trace", 3, "not a number")))
    assert str(t) == "a.trace:3: not a number" and t.line == 3
