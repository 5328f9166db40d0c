"""Source size and ETag: local files, HTTP (nginx), and DANDI asset URLs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shadowzarr_hdf5.sources import dandi_asset_url, source_state

ASSET = "6e7e9b91-0d66-45af-b646-dfb11e4d9967"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            f"https://api.dandiarchive.org/api/assets/{ASSET}/download/",
            f"https://api.dandiarchive.org/api/assets/{ASSET}/",
        ),
        (
            f"https://api.dandiarchive.org/api/dandisets/000003/versions/draft/assets/{ASSET}/download",
            f"https://api.dandiarchive.org/api/assets/{ASSET}/",
        ),
        (
            f"https://api.sandbox.dandiarchive.org/api/assets/{ASSET}/download/",
            f"https://api.sandbox.dandiarchive.org/api/assets/{ASSET}/",
        ),
        ("https://example.org/assets/x/download/", None),
    ],
)
def test_dandi_asset_metadata_url(url: str, expected: str | None) -> None:
    assert dandi_asset_url(url) == expected


def test_local_file_has_size_and_no_etag(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b"x" * 1234)
    state = source_state(str(path))
    assert (state.size, state.etag) == (1234, None)


@pytest.mark.network
def test_http_source_reports_nginx_size_and_etag(nginx: Any, nginx_root: Path) -> None:
    (nginx_root / "data.bin").write_bytes(b"y" * 4321)
    state = source_state(nginx.url("data.bin"))
    assert state.size == 4321
    assert state.etag is not None
    assert state.etag.startswith('"')
