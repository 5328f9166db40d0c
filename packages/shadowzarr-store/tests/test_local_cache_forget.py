"""LocalCache.forget_source drops one source's bytes under every version, and nothing else."""

from __future__ import annotations

from pathlib import Path

from shadowzarr_store import LocalCache


def _identity(url: str, etag: str, size: int) -> str:
    return f"{url}\x00{etag}\x00{size}"


def test_forget_source_drops_every_version_of_one_url_only(tmp_path: Path) -> None:
    cache = LocalCache(tmp_path / "cache")
    doomed = "http://host/data/a_b%.h5"
    kept = [
        "http://host/data/aXbY.h5",  # would match if _ and % were wildcards
        "http://host/data/a_b%.h5.bak",  # a longer URL with the same beginning
    ]
    cache.put(_identity(doomed, '"v1"', 10), 0, 4, b"old!")
    cache.put(_identity(doomed, '"v2"', 12), 0, 4, b"new!")
    for url in kept:
        cache.put(_identity(url, '"v1"', 10), 0, 4, b"keep")
    cache.forget_source(doomed)
    assert cache.get(_identity(doomed, '"v1"', 10), 0, 4) is None
    assert cache.get(_identity(doomed, '"v2"', 12), 0, 4) is None
    for url in kept:
        assert cache.get(_identity(url, '"v1"', 10), 0, 4) == b"keep"
    assert len(cache) == len(kept)
