"""docs/tutorial.md, step by step as a user follows it: its files written and appended as it says, its
commands run, its Python run; each step must succeed, and the comparison must end in a verdict."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support import REPO

TUTORIAL = REPO / "docs" / "tutorial.md"


def _steps() -> list[tuple[str, str, str]]:
    """(kind, the prose line before the block, the block) for every fenced block, in order."""
    text = TUTORIAL.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"([^\n]*)\n\n```(toml|sh|python)\n(.*?)```", text, re.S):
        out.append((m.group(2), m.group(1), m.group(3)))
    return out


def test_the_tutorial_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _steps()
    assert [k for k, _, _ in steps] == ["toml", "sh", "toml", "sh", "python"]
    outputs = []
    for kind, before, block in steps:
        if kind == "toml":
            name = re.findall(r"`([\w.-]+\.toml)`", before)[-1]
            with open(tmp_path / name, "a" if re.search(r"\bAppend them\b", before) else "w") as f:
                f.write(("\n" if (tmp_path / name).exists() else "") + block)
        elif kind == "sh":
            for line in block.strip().splitlines():
                argv = shlex.split(line)
                assert argv[0] == "lasthop", line
                r = subprocess.run([sys.executable, "-m", "lasthop", *argv[1:]], cwd=tmp_path, capture_output=True,
                                   text=True, timeout=300)
                assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
                outputs.append(r.stdout + r.stderr)
        else:
            monkeypatch.chdir(tmp_path)
            exec(compile(block, "tutorial.md", "exec"), {})  # noqa: S102 - our own tutorial
    assert "verdict" in outputs[-1]
    assert (tmp_path / "runs" / "mycall" / "summary.json").is_file()
    for v in ("linux", "zhuge", "one_queue"):
        assert (tmp_path / "runs" / "mycall-cmp" / v / "seed5" / "summary.json").is_file()
    assert (tmp_path / "runs" / "mycall-cmp" / "report" / "report.html").is_file()


def test_the_tutorials_example_error_is_the_one_check_gives(tmp_path: Path) -> None:
    text = TUTORIAL.read_text(encoding="utf-8")
    example = re.search(r"for example `(mycall\.toml: [^`]+)`", text)
    assert example
    toml = re.search(r"```toml\n(.*?)```", text, re.S)
    assert toml
    (tmp_path / "mycall.toml").write_text(toml.group(1).replace("deadline_ms = 100", "deadline_ms = 0"))
    r = subprocess.run([sys.executable, "-m", "lasthop", "check", "mycall.toml"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and " ".join(example.group(1).split()) in r.stderr, r.stderr
