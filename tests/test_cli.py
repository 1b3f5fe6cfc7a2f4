"""The CLI's happy paths: run (table and --json), check, schema, the run directory."""

from __future__ import annotations

import json
from pathlib import Path

from support import lasthop_cli

SUMMARY_KEYS = {"format", "lasthop_version", "git_revision", "seed", "scenario", "scenario_sha256", "sim_end_ns",
                "metrics", "components", "events", "event_digest"}


def test_run_json_is_exactly_the_summary(small: Path) -> None:
    r = lasthop_cli("run", "small.toml", "--seed", "7", "--json", cwd=small.parent)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)  # stdout is one JSON document and nothing else
    assert set(summary) == SUMMARY_KEYS
    assert summary["seed"] == 7 and summary["scenario"]["seed"] == 7
    assert set(summary["metrics"]["flows"]) == {"video", "bulk"}
    assert summary["metrics"]["flows"]["video"]["kind"] == "udp_cbr"
    assert summary["metrics"]["aggregate"]["sent_packets"] > 0
    assert len(summary["event_digest"]) == 16
    # The file on disk holds the same bytes as stdout, and the default directory is runs/<name>.
    assert (small.parent / "runs" / "small" / "summary.json").read_text(encoding="utf-8") == r.stdout


FILES = ["flows.parquet", "frames.parquet", "packets.parquet", "rtt.parquet", "summary.json", "tx.parquet"]


def test_run_directory_has_its_files_and_no_temp_files(small: Path) -> None:
    out = small.parent / "out" / "nested"
    r = lasthop_cli("run", "small.toml", "--out", out, cwd=small.parent)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == FILES
    # A second run into the same directory replaces the files, still without leftovers.
    r = lasthop_cli("run", "small.toml", "--out", out, "--seed", "2", cwd=small.parent)
    assert sorted(p.name for p in out.iterdir()) == FILES
    assert json.loads((out / "summary.json").read_text())["seed"] == 2


def test_run_prints_a_flow_table_and_the_run_directory(small: Path) -> None:
    r = lasthop_cli("run", "small.toml", "--out", "here", cwd=small.parent)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any("video" in line and "server → laptop" in line for line in lines)
    assert any("bulk" in line and "server → phone" in line for line in lines)
    assert lines[-1] == "run directory: here"
    assert "lasthop: running small" in r.stderr


def test_check_ok(small: Path) -> None:
    r = lasthop_cli("check", "small.toml", cwd=small.parent)
    assert r.returncode == 0
    assert r.stdout.startswith("ok: small: 1 server, 1 AP, 2 stations, 1 link, 2 flows")
    assert not (small.parent / "runs").exists()


def test_schema_is_json_schema(tmp_path: Path) -> None:
    r = lasthop_cli("schema", cwd=tmp_path)
    assert r.returncode == 0
    schema = json.loads(r.stdout)
    assert "duration_s" in schema["properties"]
    assert schema["additionalProperties"] is False


def test_schema_markdown_is_the_committed_reference(tmp_path: Path) -> None:
    """`lasthop schema --markdown` names tables by where they sit in a scenario file, and
    docs/scenario-reference.md is its output (regenerate it with that command when keys change)."""
    r = lasthop_cli("schema", "--markdown", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "### `aps[]`" in r.stdout and '`flows[]` with `type = "tcp"`' in r.stdout
    assert "| `duration_s` | number | required |" in r.stdout
    assert "AccessPoint" not in r.stdout and "$ref" not in r.stdout
    reference = Path(__file__).resolve().parent.parent / "docs" / "scenario-reference.md"
    assert reference.read_text(encoding="utf-8") == r.stdout, "regenerate: lasthop schema --markdown > docs/scenario-reference.md"


def test_version_and_help(tmp_path: Path) -> None:
    import lasthop

    r = lasthop_cli("--version", cwd=tmp_path)
    assert r.returncode == 0 and lasthop.__version__ in r.stdout
    r = lasthop_cli("--help", cwd=tmp_path)
    assert r.returncode == 0 and all(c in r.stdout for c in ("run", "check", "schema"))


def test_run_with_a_users_trace(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    trace = tmp_path / "mine.pitree-trace"
    trace.write_text("100.0 8\n100.5 2\n")
    r = lasthop_cli("run", root / "examples" / "trace_link.toml", "--trace", trace, "--out", tmp_path / "o", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["scenario"]["aps"][0]["last_hop"]["trace"] == str(trace)
    # Bad traces and scenarios without a trace link are errors naming what is wrong.
    trace.write_text("0 8\n1 x\n")
    r = lasthop_cli("run", root / "examples" / "trace_link.toml", "--trace", trace, "--out", tmp_path / "o", cwd=tmp_path)
    assert r.returncode == 2 and f"{trace}:2" in r.stderr, r.stderr
    r = lasthop_cli("run", root / "examples" / "quickstart.toml", "--trace", trace, "--out", tmp_path / "o", cwd=tmp_path)
    assert r.returncode == 2 and "capacity_trace" in r.stderr, r.stderr


def test_the_cli_starts_without_scipy_matplotlib_pandas_or_pyarrow() -> None:
    """Issue 17 (speed where users feel it): importing the CLI took 2.8 s when the verdict's scipy and
    the experiment report's matplotlib loaded with it; every command paid it, `lasthop run` of 30
    simulated seconds then spent more time importing than simulating. They load when used; so do
    pandas and pyarrow (one experiment module importing pandas made `lasthop --help` take 0.56 s
    instead of 0.19 s)."""
    import subprocess
    import sys

    code = "import sys, lasthop.cli; print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'matplotlib', 'pandas', 'pyarrow'}))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
