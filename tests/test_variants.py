"""Scenario variants: path setting, the Scenario API, errors located under ``variants[i]``, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES, lasthop_cli, small_scenario, write_scenario

from lasthop import Scenario, ScenarioError
from lasthop.errors import format_loc
from lasthop.variants import apply_set, parse_path


def with_variants(*variants: dict[str, Any]) -> dict[str, Any]:
    d = small_scenario(duration_s=1.5)
    d["variants"] = list(variants)
    return d


def locs(e: pytest.ExceptionInfo[ScenarioError]) -> list[str]:
    return [format_loc(i["loc"]) for i in e.value.errors()]


# -- paths --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "path"), [
    ("duration_s", ("duration_s",)),
    ("aps[0].last_hop.ap_path", ("aps", 0, "last_hop", "ap_path")),
    ("flows[12].rate_mbps", ("flows", 12, "rate_mbps")),
    ('aps[0]."odd.key"', ("aps", 0, "odd.key")),
    ("m[1][2].x-y", ("m", 1, 2, "x-y")),
])
def test_parse_path(text: str, path: tuple[str | int, ...]) -> None:
    assert parse_path(text) == path


@pytest.mark.parametrize(("text", "message"), [
    ("", "expected a key, found the end"),
    ("a..b", "expected a key, found '.' at column 3"),
    ("a.", "expected a key, found the end"),
    ("flows[x]", "unexpected '[' at column 6"),
    ("flows[-1]", "unexpected '[' at column 6"),
    ("a b", "unexpected ' ' at column 2"),
    ("variants[0].name", "cannot set `variants`"),
])
def test_parse_path_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_path(text)
    assert message in str(e.value)


def test_apply_set_replaces_the_node_and_creates_tables() -> None:
    doc: dict[str, Any] = {"aps": [{"last_hop": {"type": "wifi", "ap_path": {"type": "linux", "aql": True}}}]}
    apply_set(doc, ("aps", 0, "last_hop", "ap_path"), {"type": "fifo"})
    assert doc["aps"][0]["last_hop"]["ap_path"] == {"type": "fifo"}  # replaced, not merged
    apply_set(doc, ("aps", 0, "last_hop", "qdisc", "codel", "target_ms"), 5)
    assert doc["aps"][0]["last_hop"]["qdisc"] == {"codel": {"target_ms": 5}}
    value = {"type": "x"}
    apply_set(doc, ("aps", 0), value)
    value["type"] = "changed"
    assert doc["aps"][0] == {"type": "x"}  # a copy of the value


@pytest.mark.parametrize(("path", "message"), [
    (("aps", 3, "name"), "index 3 out of range: aps has 1 item"),
    (("aps", "name"), "aps is an array, not a table: it has no key `name`"),
    (("aps", 0, "name", "x"), "aps[0].name is a string, not a table"),
    (("aps", 0, "name", 0), "aps[0].name is a string, not an array"),
    (("stations", 0), "stations does not exist, so [0] cannot index it"),
])
def test_apply_set_errors(path: tuple[str | int, ...], message: str) -> None:
    with pytest.raises(ValueError) as e:
        apply_set({"aps": [{"name": "ap"}]}, path, 1)
    assert message in str(e.value)


# -- the Scenario API ---------------------------------------------------------------------------------

def test_variants_apply_in_file_order(tmp_path: Path) -> None:
    d = with_variants(
        {"name": "slow", "description": "half rate", "set": {"flows[0].rate_mbps": 5}},
        {"name": "fq", "set": {"aps[0].last_hop.queue": {"type": "fq_codel"}, "flows[1].packet_bytes": 1000}},
    )
    path = write_scenario(tmp_path / "v.toml", d)
    base = Scenario.load(path)  # the base ignores its variants
    assert base.variant is None and base.to_dict()["flows"][0]["rate_mbps"] == 10
    slow, fq = Scenario.variants(path)
    assert (slow.variant, fq.variant) == ("slow", "fq")
    assert slow.to_dict()["flows"][0]["rate_mbps"] == 5 and slow.name == "small"
    assert fq.to_dict()["aps"][0]["last_hop"]["queue"]["type"] == "fq_codel"
    assert fq.to_dict()["flows"][1]["packet_bytes"] == 1000
    assert slow.variant_info() == {"name": "slow", "description": "half rate", "set": {"flows[0].rate_mbps": 5}}
    # The same from a dict, by name, and a subset in the order asked.
    assert Scenario.variants(d) == [slow, fq]
    assert Scenario.load(path, variant="fq") == fq
    assert [s.variant for s in Scenario.variants(path, names=["fq", "slow"])] == ["fq", "slow"]
    # A variant keeps its name through with_seed/replace; no variants → [].
    assert slow.with_seed(3).variant == "slow"
    assert Scenario.variants(small_scenario()) == []


def test_variant_without_set_is_the_base() -> None:
    [same] = Scenario.variants(with_variants({"name": "baseline"}))
    assert same == Scenario.from_dict(small_scenario(duration_s=1.5)) and same.variant == "baseline"


def test_unknown_variant_lists_the_names(tmp_path: Path) -> None:
    path = write_scenario(tmp_path / "v.toml", with_variants({"name": "a"}, {"name": "b"}))
    with pytest.raises(ScenarioError) as e:
        Scenario.load(path, variant="c")
    assert e.value.errors()[0]["type"] == "unknown_variant"
    assert "no variant named 'c'; the variants are: a, b" in str(e.value)
    with pytest.raises(ScenarioError, match="the scenario has no variants"):
        Scenario.variants(small_scenario(), names=["a"])


@pytest.mark.parametrize(("variants", "expected"), [
    ([{"set": {}}], ["variants[0]: missing field `name`"]),
    ([{"name": "a"}, {"name": "a"}], ["variants[1].name: duplicate variant name 'a' (also variants[0])"]),
    ([{"name": "a b"}], ["variants[0].name: 'a b' is not a valid variant name"]),
    ([{"name": "report"}], ["variants[0].name: 'report' is reserved"]),
    ([{"name": 3}], ["variants[0].name: must be a string, got an integer"]),
    ([{"name": "a", "sets": {}}], ["variants[0].sets: unknown field `sets`"]),
    ([{"name": "a", "set": 5}], ["variants[0].set: must be a table of path = value"]),
    ([{"name": "a", "set": {"flows..x": 1}}], ['variants[0].set."flows..x": invalid path']),
    ([{"name": "a", "set": {"aps[0].foo": 1}}], ['variants[0].set."aps[0].foo": unknown field `foo`']),
    ([{"name": "a"}, {"name": "b", "set": {"flows[5].rate_mbps": 1}}],
     ['variants[1].set."flows[5].rate_mbps": index 5 out of range: flows has 2 items']),
    ([{"name": "a", "set": {"flows[1].rate_mbps": 0}}],
     ['variants[0].set."flows[1].rate_mbps": must be a positive number, got 0']),
    # An error inside a replaced table points at the set entry, then at the field within it.
    ([{"name": "a", "set": {"flows[0]": {"type": "udp_cbr", "from": "server", "to": "nobody", "rate_mbps": 1}}}],
     ['variants[0].set."flows[0]".to: no node named \'nobody\'']),
    # An error the edit causes elsewhere is located in the variant's scenario.
    ([{"name": "a", "set": {"stations[1].name": "tablet"}}], ["variants[0].flows[1].to: no node named 'phone'"]),
    ([{"name": "a", "set": {"flows[1].name": "video"}}],
     ['variants[0].set."flows[1].name": duplicate flow name \'video\'']),
])
def test_variant_errors_are_located(variants: list[dict[str, Any]], expected: list[str]) -> None:
    with pytest.raises(ScenarioError) as e:
        Scenario.variants(with_variants(*variants))
    lines = str(e.value).splitlines()
    assert len(lines) == len(expected), lines
    for line, want in zip(lines, expected):
        assert line.startswith(want), line


def test_every_variant_problem_is_reported_at_once() -> None:
    with pytest.raises(ScenarioError) as e:
        Scenario.variants(with_variants(
            {"name": "a", "set": {"flows[0].rate_mbps": 0}},
            {"name": "b", "set": {"flows[9].rate_mbps": 1, "duration_s": -1}},
        ))
    assert locs(e) == ['variants[0].set."flows[0].rate_mbps"', 'variants[1].set."flows[9].rate_mbps"']


def test_variants_must_be_an_array_of_tables() -> None:
    d = small_scenario()
    d["variants"] = {"name": "a"}
    with pytest.raises(ScenarioError) as e:
        Scenario.variants(d)
    assert locs(e) == ["variants"]
    assert Scenario.from_dict(d).variant is None  # the base still loads


def test_example_variants_are_valid() -> None:
    names = [v.variant for v in Scenario.variants(EXAMPLES / "compare_queues.toml")]
    assert len(names) >= 2 and len(set(names)) == len(names)


# -- the CLI ------------------------------------------------------------------------------------------

def test_check_lists_every_variant(tmp_path: Path) -> None:
    write_scenario(tmp_path / "v.toml", with_variants({"name": "slow", "set": {"flows[0].rate_mbps": 5}},
                                                      {"name": "short", "set": {"duration_s": 1.2}}))
    r = lasthop_cli("check", "v.toml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("ok: small: ")
    assert lines[1].startswith("ok: small (variant slow): ")
    assert lines[2].startswith("ok: small (variant short): ") and "1.2 s simulated" in lines[2]


def test_check_fails_on_a_bad_variant(tmp_path: Path) -> None:
    write_scenario(tmp_path / "v.toml", with_variants({"name": "ok"}, {"name": "bad", "set": {"aps[0].foo": 1}}))
    r = lasthop_cli("check", "v.toml", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines() == ['error: v.toml: variants[1].set."aps[0].foo": unknown field `foo`, expected '
                                     'one of `name`, `last_hop`, `mechanism`, `mechanisms`, `node_mechanisms`']
    assert r.stdout == ""


def test_run_variant(tmp_path: Path) -> None:
    write_scenario(tmp_path / "v.toml", with_variants({"name": "slow", "set": {"flows[0].rate_mbps": 5}}))
    r = lasthop_cli("run", "v.toml", "--variant", "slow", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["variant"] == {"name": "slow", "description": "", "set": {"flows[0].rate_mbps": 5}}
    assert summary["scenario"]["flows"][0]["rate_mbps"] == 5
    assert (tmp_path / "runs" / "small" / "slow" / "summary.json").read_text() == r.stdout
    assert "running small (variant slow)" in r.stderr
    # The base run records no variant.
    r = lasthop_cli("run", "v.toml", "--json", "--out", "base", cwd=tmp_path)
    assert "variant" not in json.loads(r.stdout)


def test_run_unknown_variant_exits_2(tmp_path: Path) -> None:
    write_scenario(tmp_path / "v.toml", with_variants({"name": "a"}, {"name": "b"}))
    r = lasthop_cli("run", "v.toml", "--variant", "c", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: v.toml: no variant named 'c'; the variants are: a, b"
    assert not (tmp_path / "runs").exists()


# -- unset ----------------------------------------------------------------------------------------------

def test_a_variant_unsets_a_key_so_its_default_applies_then_sets() -> None:
    d = with_variants({"name": "no_queue", "unset": ["aps[0].last_hop.queue"], "set": {"flows[0].rate_mbps": 3}},
                      {"name": "no_bulk", "unset": ["flows[1]"]})
    no_queue, no_bulk = Scenario.variants(d)
    base = Scenario.from_dict(d).to_dict()
    default = Scenario.from_dict({**d, "aps": [{**d["aps"][0], "last_hop": {
        k: v for k, v in d["aps"][0]["last_hop"].items() if k != "queue"}}]}).to_dict()
    assert no_queue.to_dict()["aps"][0]["last_hop"]["queue"] == default["aps"][0]["last_hop"]["queue"]
    assert no_queue.to_dict()["aps"][0]["last_hop"]["queue"] != base["aps"][0]["last_hop"]["queue"]
    assert no_queue.to_dict()["flows"][0]["rate_mbps"] == 3
    assert [f["name"] for f in no_bulk.to_dict()["flows"]] == ["video"]
    assert no_queue.variant_info()["unset"] == ["aps[0].last_hop.queue"]


@pytest.mark.parametrize(("unset", "where", "message"), [
    (["aps[0].last_hop.nope"], "variants[0].unset[0]", "has no key `nope`"),
    (["stations[5]"], "variants[0].unset[0]", "stations[5] does not exist"),
    (["duration_s", "x..y"], "variants[0].unset[1]", "invalid path"),
    ("duration_s", "variants[0].unset", "array of paths"),
])
def test_unset_errors_name_the_entry(unset: Any, where: str, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        Scenario.variants(with_variants({"name": "v", "unset": unset}))
    assert where in locs(e)
    assert message in str(e.value)


def test_an_error_asking_to_remove_a_base_key_says_how_in_a_variant(tmp_path: Path) -> None:
    d = small_scenario(1.5)
    d["aps"][0]["last_hop"] = {"type": "wifi", "standard": "ht", "profile": "linux",
                               "rate_control": {"type": "minstrel_ht"}}
    d["variants"] = [{"name": "law", "set": {"aps[0].mechanisms": [{"type": "law"}]}},
                     {"name": "law_ok", "unset": ["aps[0].last_hop.rate_control"],
                      "set": {"aps[0].mechanisms": [{"type": "law"}]}}]
    with pytest.raises(ScenarioError) as e:
        Scenario.variants(d)
    assert locs(e) == ["variants[0].aps[0].last_hop.rate_control"]
    assert 'unset = ["aps[0].last_hop.rate_control"]' in str(e.value)
    assert Scenario.variants(d, names=["law_ok"])[0].variant == "law_ok"
