"""The typed surface: the native module matches its stub, and the package type-checks (mypy --strict)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import REPO

pytest.importorskip("mypy")


def test_stub_matches_the_native_module() -> None:
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "lasthop._lasthop"], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_package_type_checks() -> None:
    # Configuration (strict, files) lives in pyproject.toml's [tool.mypy].
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
