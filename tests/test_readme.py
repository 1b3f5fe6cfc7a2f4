"""The README's Python API example runs as written, and its latency p99 is the flows table's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support import REPO


def test_the_readme_python_example_runs_and_its_p99_is_the_flows_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Python API\n\n```python\n(.*?)```", text, re.S)
    assert block, "the README has a Python API example"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    env: dict[str, Any] = {}
    exec(compile(block.group(1), "README.md", "exec"), env)  # noqa: S102 - our own README
    table = env["res"].flows.set_index("flow")["latency_p99_ms"]
    assert env["p99"].to_dict() == pytest.approx(table.to_dict(), rel=1e-12)
    assert (tmp_path / "runs" / "mine" / "summary.json").is_file()
