"""Many readers at once, several processes sharing one LocalCache, and SIGKILL mid-write.

Budgets: 64 threads x 8 reads and 64 asyncio tasks x 8 reads of random slices of one store
(256 chunks); 4 processes x 2 full reads through one LocalCache capped at 1/16 of the data (so
they evict all the time); a reader SIGKILLed ~1 s into filling a cache, 3 times; a
`materialize` SIGKILLed after its first regions are recorded, then resumed.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
import zarr.api.asynchronous as zarr_async
from shadowzarr_spec import rfs_to_json
from shadowzarr_store import LocalCache, RfsStore, materialize
from shadowzarr_testing import assert_array_equal_exact

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = [pytest.mark.network]
CHUNKS, ITEMS = 256, 1024


def _store(pattern, url: str, **options) -> RfsStore:
    return RfsStore(pattern.references(url, size=pattern.path.stat().st_size), **options)


def test_64_threads_on_one_store(nginx: NginxServer, nginx_root: Path, make_pattern) -> None:
    pattern = make_pattern(nginx_root / "p.bin", CHUNKS, ITEMS, stride=ITEMS * 4 + 100)
    store = _store(pattern, nginx.url("p.bin"))
    array = zarr.open_array(store, path="pattern", mode="r", zarr_format=3)
    expected = pattern.expected
    failures: list[str] = []
    reads = [0]
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(8):
            start = int(rng.integers(0, expected.size - 1))
            stop = int(rng.integers(start + 1, min(start + 40_000, expected.size) + 1))
            values = array[start:stop]
            with lock:
                reads[0] += 1
                if not np.array_equal(values, expected[start:stop]):
                    failures.append(f"{start}:{stop}")

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    assert reads[0] == 64 * 8


async def test_64_asyncio_tasks_on_one_store(
    nginx: NginxServer, nginx_root: Path, make_pattern
) -> None:
    pattern = make_pattern(nginx_root / "p.bin", CHUNKS, ITEMS, stride=ITEMS * 4 + 100)
    store = _store(pattern, nginx.url("p.bin"))
    array = await zarr_async.open_array(store=store, path="pattern", mode="r", zarr_format=3)
    expected = pattern.expected

    async def task(seed: int) -> int:
        rng = np.random.default_rng(seed)
        wrong = 0
        for _ in range(8):
            start = int(rng.integers(0, expected.size - 1))
            stop = int(rng.integers(start + 1, min(start + 40_000, expected.size) + 1))
            values = await array.getitem(slice(start, stop))
            wrong += int(np.count_nonzero(values != expected[start:stop]))
        return wrong

    try:
        results = await asyncio.wait_for(asyncio.gather(*(task(s) for s in range(64))), 120)
    finally:
        await store.aclose()
    assert results == [0] * 64


READER = """
import sys, json
import numpy as np
import zarr
from shadowzarr_spec import rfs_from_json
from shadowzarr_store import LocalCache, RfsStore
refs, cache_dir, limit, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(refs) as f:
    rfs = rfs_from_json(json.load(f))
expected = np.arange({n}, dtype="<u4")
for _ in range(rounds):
    cache = LocalCache(cache_dir, max_size_bytes=limit)
    store = RfsStore(rfs, local_cache=cache, merge_gap=0, max_merge_size=0, grouped_view=0)
    values = zarr.open_array(store, path="pattern", mode="r", zarr_format=3)[:]
    assert np.array_equal(values, expected), "wrong values"
    cache.close()
print("ok", flush=True)
"""


def _reader_script(tmp_path: Path, refs, n: int) -> tuple[Path, Path]:
    refs_path = tmp_path / "refs.json"
    refs_path.write_text(json.dumps(rfs_to_json(refs, expand=True)))
    script = tmp_path / "reader.py"
    script.write_text(textwrap.dedent(READER).replace("{n}", str(n)))
    return script, refs_path


def _check_cache_entries(cache_dir: Path, data: bytes) -> int:
    """Every entry left in the SQLite file holds exactly the source bytes of its range."""
    connection = sqlite3.connect(cache_dir / "chunks.sqlite3")
    try:
        rows = connection.execute("SELECT start, stop, data FROM chunks").fetchall()
    finally:
        connection.close()
    for start, stop, blob in rows:
        assert bytes(blob) == data[start:stop], f"cache entry {start}-{stop} is wrong"
    return len(rows)


@pytest.mark.slow
def test_processes_sharing_an_evicting_cache(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path, make_pattern
) -> None:
    pattern = make_pattern(nginx_root / "p.bin", CHUNKS, ITEMS)
    refs = pattern.references(nginx.url("p.bin"), size=pattern.path.stat().st_size)
    script, refs_path = _reader_script(tmp_path, refs, CHUNKS * ITEMS)
    cache_dir = tmp_path / "cache"
    limit = CHUNKS * ITEMS * 4 // 16
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), str(refs_path), str(cache_dir), str(limit), "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for process in processes:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err[-2000:]
        assert out.strip() == "ok"
    entries = _check_cache_entries(cache_dir, pattern.path.read_bytes())
    cache = LocalCache(cache_dir, max_size_bytes=limit)
    assert 0 < cache.size_bytes <= limit
    assert entries == len(cache)


@pytest.mark.slow
def test_sigkill_while_filling_the_cache_leaves_a_usable_cache(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path, make_pattern
) -> None:
    pattern = make_pattern(nginx_root / "p.bin", CHUNKS * 4, ITEMS)
    refs = pattern.references(nginx.url("p.bin"), size=pattern.path.stat().st_size)
    script, refs_path = _reader_script(tmp_path, refs, CHUNKS * 4 * ITEMS)
    cache_dir = tmp_path / "cache"
    data = pattern.path.read_bytes()
    for delay in (0.8, 1.2, 1.6):
        process = subprocess.Popen(
            [sys.executable, str(script), str(refs_path), str(cache_dir), str(len(data)), "50"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not (cache_dir / "chunks.sqlite3").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(delay)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        assert process.returncode == -signal.SIGKILL
        _check_cache_entries(cache_dir, data)
        store = RfsStore(refs, local_cache=LocalCache(cache_dir))
        values = zarr.open_array(store, path="pattern", mode="r", zarr_format=3)[:]
        assert_array_equal_exact(values, pattern.expected, f"after SIGKILL at {delay} s")


MATERIALIZE = """
import sys, json
from shadowzarr_spec import rfs_from_json
from shadowzarr_store import materialize
with open(sys.argv[1]) as f:
    rfs = rfs_from_json(json.load(f))
materialize(rfs, sys.argv[2], target_chunk_bytes=65536, concurrency=2, progress=False)
"""


@pytest.mark.slow
def test_sigkill_mid_materialize_is_resumed(tmp_path: Path, make_pattern) -> None:
    pattern = make_pattern(tmp_path / "p.bin", 1024, 16384)
    refs = pattern.references(str(pattern.path), size=pattern.path.stat().st_size)
    refs_path = tmp_path / "refs.json"
    refs_path.write_text(json.dumps(rfs_to_json(refs, expand=True)))
    script = tmp_path / "materialize.py"
    script.write_text(textwrap.dedent(MATERIALIZE))
    destination = tmp_path / "out.zarr"
    progress = tmp_path / ".out.zarr.materialize-progress"
    process = subprocess.Popen(
        [sys.executable, str(script), str(refs_path), str(destination)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and process.poll() is None:
        written = list(destination.rglob("c/*")) if destination.exists() else []
        if progress.exists() and len(written) > 50:
            break
        time.sleep(0.02)
    assert process.poll() is None, "materialize finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert progress.exists()
    report = materialize(refs, destination, target_chunk_bytes=65536, progress=False)
    assert report.resumed_regions > 0
    values = zarr.open_array(destination, path="pattern", mode="r")[:]
    assert_array_equal_exact(values, pattern.expected, "materialized after SIGKILL")
    assert not progress.exists()
