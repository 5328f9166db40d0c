"""LocalCache and MemoryCache: repeated reads cost nothing, damage never returns wrong bytes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import read_local_rfs
from store_handmade import array_meta

from shadowzarr_store import (
    CacheDamagedWarning,
    CacheUnavailableWarning,
    LocalCache,
    MemoryCache,
    RfsStore,
    open_rfs,
)

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer


def _document(url: str, count: int, chunk_items: int = 1024) -> dict:
    refs = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
        "x/zarr.json": array_meta([count * chunk_items], [chunk_items], "int16"),
    }
    for i in range(count):
        refs[f"x/c/{i}"] = [url, i * chunk_items * 2, chunk_items * 2]
    return {"version": 1, "refs": refs}


def _values(path: Path, count: int, chunk_items: int = 1024, seed: int = 0) -> np.ndarray:
    values = np.random.default_rng(seed).integers(-999, 999, count * chunk_items, dtype="<i2")
    path.write_bytes(values.tobytes())
    return values


def test_entries_round_trip_and_evict_least_recently_used(tmp_path: Path) -> None:
    cache = LocalCache(tmp_path / "cache", max_size_bytes=300)
    for i in range(3):
        cache.put("src", i * 100, (i + 1) * 100, bytes([i]) * 100)
    assert cache.get("src", 0, 100) == b"\0" * 100  # now the most recently used
    cache.put("src", 300, 400, b"\3" * 100)
    assert cache.get("src", 100, 200) is None  # the least recently used went first
    assert cache.get("src", 0, 100) == b"\0" * 100
    assert cache.get("src", 300, 400) == b"\3" * 100
    assert cache.size_bytes == 300
    assert cache.get("other", 0, 100) is None


def test_entry_with_a_bad_checksum_is_a_miss(tmp_path: Path) -> None:
    cache = LocalCache(tmp_path / "cache")
    cache.put("src", 0, 4, b"good")
    with sqlite3.connect(cache.path) as connection:
        connection.execute("UPDATE chunks SET data = ?", (b"evil",))
    assert cache.get("src", 0, 4) is None
    assert len(cache) == 0


def test_a_locked_cache_never_fails_a_read(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    values = _values(nginx_root / "a.bin", 4)
    cache = LocalCache(tmp_path / "cache", busy_timeout=0.05)
    cache.put("warm", 0, 1, b"x")
    other = sqlite3.connect(cache.path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    try:
        with pytest.warns(CacheUnavailableWarning, match="unavailable"):
            got = open_rfs(_document(nginx.url("a.bin"), 4), local_cache=cache)["x"][:]
        np.testing.assert_array_equal(got, values)
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_second_read_costs_no_request(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    values = _values(nginx_root / "a.bin", 20)
    document = _document(nginx.url("a.bin"), 20)
    cache = LocalCache(tmp_path / "cache")
    np.testing.assert_array_equal(open_rfs(document, local_cache=cache)["x"][:], values)
    assert nginx.count() > 0
    nginx.reset()
    store = RfsStore(read_local_rfs(document), local_cache=LocalCache(tmp_path / "cache"))
    np.testing.assert_array_equal(zarr.open_array(store, path="x")[:], values)
    assert nginx.count() == 0
    assert store.stats.cache_hits == 20
    assert store.stats.requests == 0


def test_memory_cache_second_read_costs_no_request(nginx: NginxServer, nginx_root: Path) -> None:
    values = _values(nginx_root / "a.bin", 10)
    store = RfsStore(
        read_local_rfs(_document(nginx.url("a.bin"), 10)), memory_cache=MemoryCache(10**6)
    )
    array = zarr.open_array(store, path="x")
    np.testing.assert_array_equal(array[:], values)
    nginx.reset()
    np.testing.assert_array_equal(array[:], values)
    assert nginx.count() == 0
    assert store.stats.cache_hits == 10


def test_truncated_cache_file_is_reported_and_rebuilt(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    values = _values(nginx_root / "a.bin", 30)
    document = _document(nginx.url("a.bin"), 30)
    cache = LocalCache(tmp_path / "cache")
    np.testing.assert_array_equal(open_rfs(document, local_cache=cache)["x"][:], values)
    cache.close()
    with sqlite3.connect(cache.path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = cache.path.stat().st_size
    with cache.path.open("r+b") as stream:
        stream.truncate(size // 2)
    nginx.reset()
    with pytest.warns(CacheDamagedWarning, match="damaged"):
        again = open_rfs(document, local_cache=LocalCache(tmp_path / "cache"))["x"][:]
    np.testing.assert_array_equal(again, values)
    assert nginx.count() > 0  # read from the source, not from the damaged file
    nginx.reset()
    np.testing.assert_array_equal(
        open_rfs(document, local_cache=LocalCache(tmp_path / "cache"))["x"][:], values
    )
    assert nginx.count() == 0


_WORKER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import zarr
    from shadowzarr_store import LocalCache, open_rfs

    cache_dir, refs_path, raw_path, rounds, seed = sys.argv[1:6]
    expected = np.fromfile(raw_path, dtype="<i2")
    cache = LocalCache(cache_dir, max_size_bytes=64 * 1024)
    root = open_rfs(refs_path, local_cache=cache)
    rng = np.random.default_rng(int(seed))
    with zarr.config.set({"async.concurrency": 8}):
        for _ in range(int(rounds)):
            start = int(rng.integers(0, expected.size - 8192))
            got = root["x"][start : start + 8192]
            if not np.array_equal(got, expected[start : start + 8192]):
                sys.exit(f"wrong bytes at {start}")
    print(cache.size_bytes)
    """
)


@pytest.mark.slow
def test_two_processes_reading_and_evicting_stay_consistent(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    _values(nginx_root / "a.bin", 100)
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(_document(nginx.url("a.bin"), 100)))
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    cache_dir = tmp_path / "shared-cache"
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                str(cache_dir),
                str(refs),
                str(nginx_root / "a.bin"),
                "40",
                str(seed),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        assert int(out.strip()) <= 64 * 1024
    assert LocalCache(cache_dir).size_bytes <= 64 * 1024


_SIGNING_NAMES = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
)


def _presigned(url: str, secret: str) -> str:
    return (
        f"{url}?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential=AKIA{secret}%2F20260101%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
        f"&X-Amz-Signature={secret}0123456789abcdef"
    )


def test_no_signature_or_user_info_reaches_the_cache_file(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    """A presigned URL is read through, but its signing parameters and any user info are no
    part of the cache's keys: two signatures of one object share its entries (ETag and size
    still guard them), and nothing secret is written to disk."""
    values = _values(nginx_root / "a.bin", 8)
    signed = _presigned(nginx.url("a.bin"), "SECRETONE")
    store = RfsStore(
        read_local_rfs(_document(signed, 8)), local_cache=LocalCache(tmp_path / "cache")
    )
    np.testing.assert_array_equal(zarr.open_array(store, path="x")[:], values)
    assert nginx.count() > 0
    nginx.reset()
    resigned = _presigned(nginx.url("a.bin"), "SECRETTWO").replace("://", "://reader:SECRETPW@", 1)
    again = RfsStore(
        read_local_rfs(_document(resigned, 8)), local_cache=LocalCache(tmp_path / "cache")
    )
    np.testing.assert_array_equal(zarr.open_array(again, path="x")[:], values)
    assert nginx.count() == 0
    assert again.stats.cache_hits == 8
    written = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir()).lower()
    assert written  # the entries are there
    for needle in ("SECRET", "reader", *_SIGNING_NAMES):
        assert needle.lower().encode() not in written, needle
