"""The merge policy: neighbouring chunks of any size share requests, up to ``max_merge_size``,
and a throttled wave gets a head start. Request counts come from nginx's own access log; values
are compared with what numpy and zlib wrote."""

from __future__ import annotations

import asyncio
import json
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from store_handmade import array_meta

from shadowzarr_store import open_rfs
from shadowzarr_store.merge import (
    HEAD_START_BYTES,
    RangeMerger,
    bounded_gaps,
    gathered_reads,
    head_start,
    plan_runs,
)
from shadowzarr_store.options import StoreOptions
from shadowzarr_store.transport.stats import StoreStats

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, NginxServer

ROWS, CHANNELS = 1600, 64
ZLIB = [
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "numcodecs.zlib", "configuration": {"level": 4}},
]


@dataclass(frozen=True, slots=True)
class _Read:
    start: int
    end: int


def _spans(runs: list[list[_Read]]) -> list[list[tuple[int, int]]]:
    return [[(read.start, read.end) for read in run] for run in runs]


# -- planning --------------------------------------------------------------------------------


def test_defaults_merge_reads_of_any_size_up_to_8_mib() -> None:
    options = StoreOptions()
    assert options.merge_below is None
    assert options.max_merge_size == 8 * 2**20
    with pytest.raises(ValueError, match="merge_below"):
        StoreOptions(merge_below=-1)


def test_large_neighbours_fill_runs_up_to_the_size_limit() -> None:
    size = 135_000
    reads = [_Read(i * size, (i + 1) * size) for i in range(82)]
    runs = plan_runs(reads, merge_gap=32 * 1024, max_merge_size=8 * 2**20)
    per_run = (8 * 2**20) // size
    assert [len(run) for run in runs] == [per_run, 82 - per_run]
    assert [read for run in runs for read in run] == reads


def test_a_read_larger_than_the_limit_is_a_run_of_its_own() -> None:
    reads = [_Read(0, 10), _Read(10, 5000), _Read(5000, 5010)]
    assert _spans(plan_runs(reads, merge_gap=0, max_merge_size=1000)) == [
        [(0, 10)],
        [(10, 5000)],
        [(5000, 5010)],
    ]


def test_head_start_sends_a_quarter_first() -> None:
    chunk = 256 * 1024
    run = [_Read(i * chunk, (i + 1) * chunk) for i in range(10)]
    head, rest = head_start(run)
    assert len(head) == 3  # the shortest prefix reaching a quarter of 2.5 MiB
    assert head + rest == run
    assert head[-1].end >= (10 * chunk) // 4 > head[-2].end


def test_head_start_leaves_short_runs_and_single_reads_whole() -> None:
    small = [_Read(i * 1000, (i + 1) * 1000) for i in range(100)]
    assert head_start(small) == [small]
    single = [_Read(0, 64 * HEAD_START_BYTES)]
    assert head_start(single) == [single]
    two = [_Read(0, 4 * HEAD_START_BYTES), _Read(4 * HEAD_START_BYTES, 5 * HEAD_START_BYTES)]
    assert head_start(two) == [two[:1], two[1:]]


# -- over HTTP -------------------------------------------------------------------------------


def _lfp(nginx_root: Path, url: str, count: int = 82) -> tuple[np.ndarray, dict, list[int]]:
    """``count`` zlib chunks of a slow random walk (about 135 kB each, like real LFP) back to
    back in one file, and references to them."""
    rng = np.random.default_rng(13)
    values = np.cumsum(rng.integers(-3, 4, size=(count * ROWS, CHANNELS)), axis=0).astype("<i2")
    refs: dict[str, object] = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
        "lfp/zarr.json": array_meta([count * ROWS, CHANNELS], [ROWS, CHANNELS], "int16", 0, ZLIB),
    }
    blob = bytearray(b"HEAD" * 64)
    sizes = []
    for i in range(count):
        payload = zlib.compress(values[i * ROWS : (i + 1) * ROWS].tobytes(), 4)
        refs[f"lfp/c/{i}/0"] = [url, len(blob), len(payload)]
        sizes.append(len(payload))
        blob += payload
    (nginx_root / "lfp.bin").write_bytes(bytes(blob))
    return values, {"version": 1, "refs": refs}, sizes


@pytest.mark.network
def test_82_compressed_chunks_of_135_kb_take_two_requests(
    nginx: NginxServer, nginx_root: Path
) -> None:
    values, document, sizes = _lfp(nginx_root, nginx.url("lfp.bin"))
    assert 8 * 2**20 < sum(sizes) < 16 * 2**20 - max(sizes)  # so 8 MiB runs make exactly two
    with zarr.config.set({"async.concurrency": 100}):
        nginx.reset()
        # the merger's own policy, on the chunks as stored (grouped: 3 requests, 1 round trip)
        np.testing.assert_array_equal(open_rfs(document, grouped_view=0)["lfp"][:], values)
        assert nginx.count() == 2
        assert nginx.bytes_sent("/lfp.bin") == sum(sizes)
        nginx.reset()
        # (the merger's knobs on the chunks as stored: the grouped view reads this array's
        # listed chunks as a chunk manifest's, contiguous runs joined from their entries)
        unmerged = open_rfs(document, merge_below=64 * 1024, grouped_view=0)["lfp"][:]
        np.testing.assert_array_equal(unmerged, values)
        assert nginx.count() == 82
        nginx.reset()
        unmerged = open_rfs(document, max_merge_size=0, grouped_view=0)["lfp"][:]
        np.testing.assert_array_equal(unmerged, values)
        assert nginx.count() == 82


@pytest.mark.network
def test_a_smaller_limit_makes_more_requests(nginx: NginxServer, nginx_root: Path) -> None:
    values, document, sizes = _lfp(nginx_root, nginx.url("lfp.bin"), count=20)
    limit = 4 * max(sizes)
    expected = len(plan_runs(_reads(sizes), 32 * 1024, limit))
    assert expected > 4
    with zarr.config.set({"async.concurrency": 100}):
        nginx.reset()
        np.testing.assert_array_equal(open_rfs(document, max_merge_size=limit)["lfp"][:], values)
        assert nginx.count() == expected


def _reads(sizes: list[int]) -> list[_Read]:
    reads, offset = [], 256
    for size in sizes:
        reads.append(_Read(offset, offset + size))
        offset += size
    return reads


@pytest.mark.network
def test_a_throttled_wave_gets_a_head_start(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """zarr (async.concurrency 10) asks for 10 of 16 chunks of 256 KiB, then waits: the first
    wave goes out as a head of 3 chunks and a rest of 7, so slots free up early."""
    chunk = 256 * 1024
    values = np.arange(16 * chunk // 2, dtype="<i2")
    (nginx_root / "big.bin").write_bytes(values.tobytes())
    proxy: LatencyProxy = make_proxy(nginx.url(""), latency=0.02)
    url = proxy.url("big.bin")
    refs: dict[str, object] = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
        "x/zarr.json": array_meta([values.size], [chunk // 2], "int16"),
    }
    for i in range(16):
        refs[f"x/c/{i}"] = [url, i * chunk, chunk]
    with zarr.config.set({"async.concurrency": 10}):
        nginx.reset()
        np.testing.assert_array_equal(open_rfs({"version": 1, "refs": refs})["x"][:], values)
    ranges = {entry.range for entry in nginx.entries()}
    assert f"bytes=0-{3 * chunk - 1}" in ranges
    assert f"bytes={3 * chunk}-{10 * chunk - 1}" in ranges
    assert nginx.bytes_sent("/big.bin") == values.nbytes
    assert 3 <= nginx.count() < 16


# -- parking many reads at once ---------------------------------------------------------------


def _served(
    data: bytes,
) -> tuple[Callable[[str, int, int], Awaitable[bytes]], list[tuple[int, int]]]:
    """A fetch of ``data``'s bytes, and the list of the ranges it was asked for."""
    asked: list[tuple[int, int]] = []

    async def fetch(url: str, start: int, end: int) -> bytes:
        asked.append((start, end))
        return data[start:end]

    return fetch, asked


async def test_read_many_parks_ranges_together_and_slices_one_answer() -> None:
    data = bytes(range(256)) * 64
    fetch, asked = _served(data)
    merger = RangeMerger(fetch, StoreOptions(), StoreStats())
    spans = [(4096, 8192), (0, 4096), (8192, 9000), (12000, 12100)]
    found = await merger.read_many("file.h5", spans)
    assert [bytes(part) for part in found] == [data[a:b] for a, b in spans]
    assert asked == [(0, 12100)]  # one request: neighbours and a gap under merge_gap


async def test_read_many_with_a_range_too_large_to_merge_reads_each() -> None:
    data = bytes(range(256)) * 64
    fetch, asked = _served(data)
    merger = RangeMerger(fetch, StoreOptions(max_merge_size=4096), StoreStats())
    spans = [(0, 1000), (1000, 9000)]  # the second is over max_merge_size
    found = await merger.read_many("file.h5", spans)
    assert [bytes(part) for part in found] == [data[a:b] for a, b in spans]
    assert sorted(asked) == [(0, 1000), (1000, 9000)]


async def test_the_stores_gathered_reads_get_no_head_start_and_zarrs_do() -> None:
    data = bytes(range(256)) * (4 * HEAD_START_BYTES // 256)
    fetch, asked = _served(data)
    piece = len(data) // 16
    spans = [(i * piece, (i + 1) * piece) for i in range(16)]  # more than async.concurrency
    merger = RangeMerger(fetch, StoreOptions(), StoreStats())
    with gathered_reads():  # a shard's stored chunks: done only when all are
        found = await merger.read_many("file.h5", spans)
    assert b"".join(bytes(part) for part in found) == data
    assert asked == [(0, len(data))]
    asked.clear()
    # the same reads as zarr's own gets: the first ten flush at once, throttled, and each wave
    # sends a head start (a quarter of its run) ahead of the rest
    found = await asyncio.gather(*(merger.read("file.h5", a, b) for a, b in spans))
    assert b"".join(bytes(part) for part in found) == data
    first_wave = 10 * piece
    assert sorted(asked)[:2] == [(0, 3 * piece), (3 * piece, first_wave)]


async def test_bounded_reads_join_only_the_gaps_their_budget_pays_for() -> None:
    """A sparse selection's reads (`bounded_gaps`) join the smallest gaps first while all the
    joined gaps stay within 3 x their bytes + the allowance each; unbounded reads join any gap
    up to merge_gap."""
    data = bytes(range(256)) * 256
    fetch, asked = _served(data)
    merger = RangeMerger(fetch, StoreOptions(), StoreStats())
    # four reads of 16 B, gaps of 100, 5000 and 300 B: the budget is 4 x (48 + 100) = 592
    spans = [(0, 16), (116, 132), (5132, 5148), (5448, 5464)]
    with bounded_gaps(100):
        found = await merger.read_many("file.h5", spans)
    assert [bytes(part) for part in found] == [data[a:b] for a, b in spans]
    assert sorted(asked) == [(0, 132), (5132, 5464)]  # 100 + 300 joined; 5000 left
    fetched = sum(b - a for a, b in asked)
    assert fetched <= 4 * 64 + 4 * 100
    asked.clear()
    await merger.read_many("file.h5", spans)  # not bounded: every gap under merge_gap
    assert asked == [(0, 5464)]
