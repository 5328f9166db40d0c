"""read_local_rfs and write_rfs work on local files only; recorded sources keep every field they
were given."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from shadowzarr_spec import (
    ReferenceFormatError,
    SourceError,
    SourceInfo,
    read_local_rfs,
    rfs_to_json,
    write_rfs,
)

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize("url", ["http://h/refs.json", "s3://b/refs.json", "https://h/dir/"])
def test_urls_are_for_the_store(url: str) -> None:
    with pytest.raises(SourceError, match=r"shadowzarr_store\.load_rfs"):
        read_local_rfs(url)


def test_local_identity_of_sources_round_trips() -> None:
    info = {"size": 10, "mtime_ns": 1_700_000_000_123_456_789, "sample_hash": "sha256:ab"}
    rfs = read_local_rfs({"version": 1, "refs": {}, "sources": {"/data/a.bin": info}})
    assert rfs.sources["/data/a.bin"] == SourceInfo(10, None, info["mtime_ns"], "sha256:ab")
    assert rfs_to_json(rfs)["sources"] == {"/data/a.bin": info}
    with pytest.raises(ReferenceFormatError, match="mtime_ns"):
        read_local_rfs({"version": 1, "refs": {}, "sources": {"a": {"mtime_ns": "x"}}})


GROUP = {"version": 1, "refs": {"zarr.json": '{"zarr_format": 3, "node_type": "group"}'}}


@pytest.mark.parametrize("url", ["s3://bucket/refs/x.json", "gs://b/refs.shadowzarr", "http://h/x"])
def test_write_to_a_url_is_refused_not_made_a_local_folder(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rfs = read_local_rfs(GROUP)
    with pytest.raises(SourceError, match=r"shadowzarr_store\.write_rfs"):
        write_rfs(rfs, url)
    assert os.listdir(tmp_path) == []


def test_write_to_a_file_url_writes_the_local_path(tmp_path: Path) -> None:
    rfs = read_local_rfs(GROUP)
    written = write_rfs(rfs, (tmp_path / "x.json").as_uri())
    assert written == tmp_path / "x.json"
    assert read_local_rfs(written).refs.keys() == rfs.refs.keys()
