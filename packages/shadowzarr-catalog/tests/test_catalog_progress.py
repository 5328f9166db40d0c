"""``generate_catalog(progress=True)`` in a log: plain lines of assets done, failures, bytes,
rate and time left, and each failure named."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from catalog_archive import make_archive, write_hdf5
from shadowzarr_spec.units import format_bytes

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
    # the last line: failures so far, the assets' bytes, the bytes read (none: local files
    # are read by h5py, not counted), the rate
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and p.name[0] != ".")
    end = lines[-1]
    assert ", 2 failed, " in end, end
    assert f" {format_bytes(size)} of assets, 0 B read, " in end, end
    assert re.search(r", [\d,]+ assets/min, last (ok|failed|skipped) ", end), end
    assert any(re.search(r", ~\d+ s left$", line) for line in lines[1:-1]), lines


@pytest.mark.network
def test_progress_counts_the_bytes_read_of_remote_assets(  # type: ignore[no-untyped-def]
    nginx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(3):
        write_hdf5(Path(nginx.path(f"r{i}.h5")), i)
    urls = [nginx.url(f"r{i}.h5") for i in range(3)]
    generate_catalog(urls, tmp_path / "out", progress=True)
    end = capsys.readouterr().err.splitlines()[-1]
    table = pd.read_parquet(tmp_path / "out/catalog.parquet")
    assert table.bytes_read.sum() > 0
    assert f", {format_bytes(int(table.bytes_read.sum()))} read, " in end, end
    assert ", 0 failed, " in end, end


def test_progress_false_is_silent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "archive"
    make_archive(root, count=2)
    generate_catalog(root, tmp_path / "out", workers=1)
    assert capsys.readouterr().err == ""
