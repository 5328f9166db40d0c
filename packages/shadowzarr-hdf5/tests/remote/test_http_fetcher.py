"""HttpRangeFetcher against a loopback range server: bytes, coalescing, retries, checks."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

import pytest

from shadowzarr_hdf5.remote import HttpRangeFetcher, LocalRangeFetcher
from shadowzarr_hdf5.remote.errors import (
    RangeRequestError,
    SourceChangedError,
    SourceNotFoundError,
)

if TYPE_CHECKING:
    from pathlib import Path

RANGES = [(0, 10), (5, 100), (70_000, 3), (200_000, 50_000), (299_990, 10), (150, 0)]


@pytest.fixture
def blob(tmp_path: Path) -> bytes:
    data = os.urandom(300_000)
    (tmp_path / "blob.bin").write_bytes(data)
    return data


def test_fetch_many_returns_each_range(range_server, blob: bytes) -> None:
    with HttpRangeFetcher(range_server.url("blob.bin")) as fetcher:
        got = fetcher.fetch_many(RANGES)
        assert got == [blob[o : o + n] for o, n in RANGES]
        # (0,10)+(5,100) share a run; the 70 kB gap and the others are separate requests.
        assert fetcher.stats.requests == range_server.requests == 4
        assert fetcher.stats.rounds == 1
        assert fetcher.stats.bytes == 105 + 3 + 50_000 + 10
        assert fetcher.size == len(blob)
        assert fetcher.etag == '"v1"'
        # Past the end: clipped like a file read.
        assert fetcher.fetch_many([(299_995, 100)]) == [blob[299_995:]]


def test_local_fetcher_agrees(tmp_path: Path, blob: bytes) -> None:
    with LocalRangeFetcher(tmp_path / "blob.bin") as fetcher:
        assert fetcher.fetch_many(RANGES) == [blob[o : o + n] for o, n in RANGES]
        assert fetcher.stats.requests == 4
        assert fetcher.size == len(blob)


def test_no_coalescing_with_zero_gap(range_server, blob: bytes) -> None:
    with HttpRangeFetcher(range_server.url("blob.bin"), max_gap=0) as fetcher:
        fetcher.fetch_many([(0, 10), (11, 10), (30, 5)])
        assert fetcher.stats.requests == 3


async def test_async_api(range_server, blob: bytes) -> None:
    with HttpRangeFetcher(range_server.url("blob.bin")) as fetcher:
        got = await asyncio.gather(
            fetcher.fetch_many_async([(1, 2)]), fetcher.fetch_many_async([(100_000, 7)])
        )
        assert got == [[blob[1:3]], [blob[100_000:100_007]]]


def test_transient_failures_are_retried(range_server, blob: bytes) -> None:
    range_server.fail_next = [503, "drop", 429]
    with HttpRangeFetcher(range_server.url("blob.bin"), backoff=0.01) as fetcher:
        assert fetcher.fetch_many([(10, 20)]) == [blob[10:30]]
        # aiohttp itself may retry a dropped keep-alive connection once, so >= 2, not 3.
        assert fetcher.stats.retries >= 2
        assert fetcher.stats.requests == 1
    assert range_server.requests == 4


def test_gives_up_after_bounded_retries(range_server, blob: bytes) -> None:
    range_server.fail_next = [500] * 10
    fetcher = HttpRangeFetcher(range_server.url("blob.bin"), retries=2, backoff=0.01)
    with fetcher, pytest.raises(RangeRequestError, match="3 attempts"):
        fetcher.fetch_many([(10, 20)])
    assert range_server.requests == 3


def test_full_body_for_a_range_request_is_an_error(range_server, blob: bytes) -> None:
    range_server.ignore_ranges = True
    fetcher = HttpRangeFetcher(range_server.url("blob.bin"))
    with fetcher, pytest.raises(RangeRequestError, match="HTTP 200"):
        fetcher.fetch_many([(10, 20)])


def test_missing_file(range_server, blob: bytes) -> None:
    with HttpRangeFetcher(range_server.url("nope.bin")) as fetcher:
        with pytest.raises(SourceNotFoundError):
            fetcher.fetch_many([(0, 8)])
        with pytest.raises(FileNotFoundError):
            _ = fetcher.size


def test_changed_etag_is_detected(range_server, blob: bytes) -> None:
    with HttpRangeFetcher(range_server.url("blob.bin")) as fetcher:
        fetcher.fetch_many([(0, 8)])
        range_server.etag = '"v2"'
        with pytest.raises(SourceChangedError):
            fetcher.fetch_many([(0, 8)])


def test_multi_range_requests_against_nginx(nginx, nginx_root: Path) -> None:
    data = os.urandom(2_000_000)
    (nginx_root / "blob.bin").write_bytes(data)
    ranges = [(i * 9_973, 100 + i) for i in range(200)]
    fetcher = HttpRangeFetcher(
        nginx.url("blob.bin"), max_concurrency=4, max_gap=0, multi_range=True
    )
    with fetcher:
        assert fetcher.fetch_many(ranges) == [data[o : o + n] for o, n in ranges]
        # 200 runs spread over 4 connections: 4 requests of 50 ranges.
        assert fetcher.multi_range
        assert fetcher.stats.requests == nginx.count("GET") == 4
        assert fetcher.size == len(data)
        # Past the end of the file, in a multi-range request too.
        tail = [(1_000, 10), (500_000, 10), (1_999_990, 100)]
        assert fetcher.fetch_many(tail) == [data[o : o + n] for o, n in tail]


@pytest.mark.parametrize("answer", ["200", "416"])
def test_multi_range_falls_back_when_the_server_refuses(
    range_server, blob: bytes, answer: str
) -> None:
    range_server.reject_multi_range = answer == "416"
    ranges = [(0, 10), (100_000, 10), (200_000, 10)]
    url = range_server.url("blob.bin")
    with HttpRangeFetcher(url, max_concurrency=1, multi_range=True) as fetcher:
        assert fetcher.fetch_many(ranges) == [blob[o : o + n] for o, n in ranges]
        assert not fetcher.multi_range
        # The refusal (a 200 dropped unread, or a 416), then one request per range.
        assert fetcher.stats.requests == 3
        assert range_server.requests == 4
