"""Fixtures of the Icechunk bridge tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def sample_folder(tmp_path: Path) -> Path:
    return tmp_path / "sources"
