"""``generate_catalog(progress=True)`` in a log: plain lines of assets done, and each failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_archive import make_archive

from shadowzarr_catalog import generate_catalog


def test_progress_true_counts_assets_and_names_failures_in_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "archive"
    expected = make_archive(root, count=4)
    total = len(expected) + 3  # and the broken, fake and skipped assets
    summary = generate_catalog(root, tmp_path / "out", workers=1, progress=True)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0].startswith(f"catalog: 0/{total} assets (0%)"), lines
    assert lines[-1].startswith(f"catalog: {total}/{total} assets (100%), "), lines
    failed = [line for line in lines if line.startswith("failed ")]
    assert sorted(line.split(":")[0] for line in failed) == ["failed broken.h5", "failed fake.nwb"]
    assert len(summary.failures) == 2


def test_progress_false_is_silent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "archive"
    make_archive(root, count=2)
    generate_catalog(root, tmp_path / "out", workers=1)
    assert capsys.readouterr().err == ""
