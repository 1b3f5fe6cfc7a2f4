"""Fixtures shared by the tests (helpers live in support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import small_scenario, write_scenario


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A short valid scenario file in a temporary directory (also the working directory for the CLI)."""
    return write_scenario(tmp_path / "small.toml", small_scenario())
