"""load_rfs reads local files only; recorded sources keep every field they were given."""

from __future__ import annotations

import pytest

from shadowzarr_spec import ReferenceFormatError, SourceError, SourceInfo, load_rfs, rfs_to_json


@pytest.mark.parametrize("url", ["http://h/refs.json", "s3://b/refs.json", "https://h/dir/"])
def test_urls_are_for_the_store(url: str) -> None:
    with pytest.raises(SourceError, match=r"shadowzarr_store\.load_rfs"):
        load_rfs(url)


def test_local_identity_of_sources_round_trips() -> None:
    info = {"size": 10, "mtime_ns": 1_700_000_000_123_456_789, "sample_hash": "sha256:ab"}
    rfs = load_rfs({"version": 1, "refs": {}, "sources": {"/data/a.bin": info}})
    assert rfs.sources["/data/a.bin"] == SourceInfo(10, None, info["mtime_ns"], "sha256:ab")
    assert rfs_to_json(rfs)["sources"] == {"/data/a.bin": info}
    with pytest.raises(ReferenceFormatError, match="mtime_ns"):
        load_rfs({"version": 1, "refs": {}, "sources": {"a": {"mtime_ns": "x"}}})
