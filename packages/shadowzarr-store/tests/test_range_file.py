"""`RangeFile` against nginx: the bytes of every read, and exactly the requests its read-ahead
policy asks for, counted from nginx's own access log."""

from __future__ import annotations

import io
import os
import zipfile
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
from shadowzarr_spec import SourceChangedError, SourceNotFoundError

from shadowzarr_store.transport import (
    CachedBlocks,
    GrowingRuns,
    NoReadAhead,
    RangeFile,
    RangeSource,
    TransportOptions,
)

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network

BLOCK = 1024
DATA = np.random.default_rng(5).integers(0, 256, 100 * BLOCK + 300, dtype=np.uint8).tobytes()


def _ranges(nginx: NginxServer) -> list[str]:
    """The Range header of each GET since the last reset, oldest first."""
    return [entry.range for entry in nginx.entries() if entry.method == "GET"]


@pytest.fixture
def url(nginx: NginxServer) -> str:
    nginx.write_file("blob.bin", DATA)
    nginx.reset()
    return nginx.url("blob.bin")


class Recording:
    """A policy that records what it is told and asks for what the test says."""

    def __init__(self, answer: list[tuple[int, int]] | None = None) -> None:
        self.calls: list[tuple[int, int, int | None]] = []
        self.answer = answer or []

    def plan(self, offset: int, size: int, cache: CachedBlocks) -> list[tuple[int, int]]:
        assert (cache.size, cache.block_size) == (len(DATA), BLOCK)
        self.calls.append((offset, size, cache.last_fetched))
        answer, self.answer = self.answer, []
        return answer


def test_reads_return_the_files_bytes_whatever_the_position(url: str) -> None:
    with RangeFile(url, block_size=BLOCK) as f:
        assert f.size == len(DATA)
        assert f.seekable()
        assert f.readable()
        for offset, size in [(0, 10), (1020, 10), (5000, 30_000), (len(DATA) - 5, 100)]:
            assert f.seek(offset) == offset
            assert f.read(size) == DATA[offset : offset + size]
            assert f.tell() == offset + min(size, len(DATA) - offset)
        assert f.read() == b""  # at the end
        f.seek(-7, io.SEEK_END)
        assert f.read() == DATA[-7:]
        f.seek(10)
        f.seek(20, io.SEEK_CUR)
        buffer = bytearray(50)
        assert f.readinto(buffer) == 50
        assert bytes(buffer) == DATA[30:80]
        assert f.read_at(2_000_000, 10) == b""  # past the end
        assert f.tell() == 80  # read_at does not move the position
        with pytest.raises(ValueError, match="negative seek"):
            f.seek(-1)
        with pytest.raises(ValueError, match="cannot read"):
            f.read_at(-1, 10)
        assert io.BufferedReader(f).read(100) == DATA[80:180]  # the io stack takes it too
    with pytest.raises(ValueError, match="closed"):
        f.read_at(0, 1)


def test_opening_reads_the_head_with_the_size_in_one_request(url: str, nginx: NginxServer) -> None:
    with RangeFile(url, block_size=BLOCK, head=3000, read_ahead=NoReadAhead()) as f:
        assert _ranges(nginx) == ["bytes=0-3071"]  # rounded up to whole blocks
        assert f.read_at(100, 2900) == DATA[100:3000]
        assert f.stats.requests == 1
        assert f.etag
    nginx.reset()
    with RangeFile(url, block_size=BLOCK, head=0) as f:
        assert f.size == len(DATA)
        assert _ranges(nginx) == ["bytes=0-0"]  # nothing read: only the size asked for


def test_without_read_ahead_a_read_fetches_only_its_missing_blocks(
    url: str, nginx: NginxServer
) -> None:
    with RangeFile(url, block_size=BLOCK, read_ahead=NoReadAhead()) as f:
        assert f.read_at(10 * BLOCK + 5, 2 * BLOCK) == DATA[10 * BLOCK + 5 : 12 * BLOCK + 5]
        assert f.read_at(11 * BLOCK, 3 * BLOCK) == DATA[11 * BLOCK : 14 * BLOCK]  # 13 missing
        assert f.read_at(100 * BLOCK, 1000) == DATA[100 * BLOCK :]  # the short last block
        assert f.read_at(10 * BLOCK, 4 * BLOCK) == DATA[10 * BLOCK : 14 * BLOCK]  # all held
    assert _ranges(nginx) == [
        "bytes=0-1023",
        "bytes=10240-13311",
        "bytes=13312-14335",
        f"bytes=102400-{len(DATA) - 1}",
    ]


def test_the_policy_is_asked_at_every_read_and_its_ranges_come_in_the_same_round(
    url: str, nginx: NginxServer
) -> None:
    policy = Recording()
    with RangeFile(url, block_size=BLOCK, read_ahead=policy, merge_gap=0) as f:
        assert f.read_at(100, 10) == DATA[100:110]  # the head holds it
        policy.answer = [(50 * BLOCK + 10, 10)]
        assert f.read_at(20 * BLOCK, 10) == DATA[20 * BLOCK : 20 * BLOCK + 10]
        rounds = f.stats.rounds
        assert f.cached(50 * BLOCK, BLOCK)
        assert f.read_at(50 * BLOCK, BLOCK) == DATA[50 * BLOCK : 51 * BLOCK]
        assert f.stats.rounds == rounds  # fetched ahead: no request
    # cached or not, every read is shown to the policy, with where the last fetch ended
    assert policy.calls == [(100, 10, 0), (20 * BLOCK, 10, 0), (50 * BLOCK, BLOCK, 50)]
    # nginx answers multi-range requests: the read's block and the policy's in one request
    assert _ranges(nginx) == ["bytes=0-1023", "bytes=20480-21503,51200-52223"]


def test_blocks_closer_than_merge_gap_share_a_request_and_the_gap_is_kept(
    url: str, nginx: NginxServer
) -> None:
    policy = Recording([(13 * BLOCK, 1), (30 * BLOCK, 1)])
    with RangeFile(url, block_size=BLOCK, read_ahead=policy, merge_gap=2 * BLOCK) as f:
        f.read_at(10 * BLOCK, 1)
        assert f.cached(10 * BLOCK, 4 * BLOCK)  # 11 and 12 came with the merged request
        assert not f.cached(14 * BLOCK, 1)
    assert _ranges(nginx) == ["bytes=0-1023", "bytes=10240-14335,30720-31743"]


def test_max_request_bounds_a_merged_request(url: str, nginx: NginxServer) -> None:
    policy = Recording([(11 * BLOCK, 5 * BLOCK)])
    with RangeFile(url, block_size=BLOCK, read_ahead=policy, max_request=4 * BLOCK) as f:
        f.read_at(10 * BLOCK, 1)
    assert _ranges(nginx) == ["bytes=0-1023", "bytes=10240-14335,14336-16383"]  # one round


def test_a_policys_ranges_are_clipped_to_the_file(url: str, nginx: NginxServer) -> None:
    """A policy's arithmetic gone wrong (negative, past the end) never reaches a request."""
    policy = Recording([(-5000, 10_000), (len(DATA) - 10, 10**12), (2 * len(DATA), 10)])
    with RangeFile(url, block_size=BLOCK, read_ahead=policy, merge_gap=0) as f:
        f.read_at(50 * BLOCK, 1)
        assert f.cached(len(DATA) - 300, 300)
    tail = f"102400-{len(DATA) - 1}"
    assert _ranges(nginx) == ["bytes=0-1023", f"bytes=0-5119,51200-52223,{tail}"]


def test_growing_runs_lengthen_while_misses_follow_each_other(url: str, nginx: NginxServer) -> None:
    with RangeFile(url, block_size=BLOCK, read_ahead=GrowingRuns(max_run_blocks=8)) as f:
        for offset in range(0, len(DATA), 100):  # a sequential scan
            assert f.read_at(offset, 100) == DATA[offset : offset + 100]
        requests = f.stats.requests
    sizes = [int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1 for r in _ranges(nginx)]
    assert sizes[:5] == [BLOCK, 2 * BLOCK, 3 * BLOCK, 5 * BLOCK, 8 * BLOCK]  # ×1.7, rounded
    assert max(sizes) == 8 * BLOCK  # at most max_run_blocks
    assert requests == len(sizes) < 20  # 101 blocks


def test_a_run_stops_at_a_held_block_and_shrinks_after_a_jump(url: str, nginx: NginxServer) -> None:
    with RangeFile(url, block_size=BLOCK, read_ahead=GrowingRuns()) as f:
        f.read_at(5 * BLOCK, 1)  # does not follow the head: one block
        f.read_at(BLOCK, 1)  # nor the previous fetch: one block
        f.read_at(2 * BLOCK, 1)  # follows: ×1.7, two blocks
        f.read_at(4 * BLOCK, 1)  # follows: three blocks wanted, stopped by block 5 held
        f.read_at(60 * BLOCK, 1)  # a jump: 2.89 / 1.7, two blocks
    assert _ranges(nginx) == [
        "bytes=0-1023",
        "bytes=5120-6143",
        "bytes=1024-2047",
        "bytes=2048-4095",
        "bytes=4096-5119",
        "bytes=61440-63487",
    ]


def test_prefetch_peek_trim_and_whole(url: str, nginx: NginxServer) -> None:
    with RangeFile(url, block_size=BLOCK, read_ahead=NoReadAhead(), merge_gap=0) as f:
        assert f.peek_at(5 * BLOCK, 10) is None  # never fetches
        f.prefetch([(5 * BLOCK, 10), (40 * BLOCK, 3 * BLOCK), (len(DATA), 10)])
        assert f.peek_at(5 * BLOCK, 10) == DATA[5 * BLOCK : 5 * BLOCK + 10]
        assert f.whole() is None
        f.trim(40 * BLOCK, 3 * BLOCK, keep=[(41 * BLOCK + 5, 1)])
        assert not f.cached(40 * BLOCK, 1)
        assert f.cached(41 * BLOCK, BLOCK)
        assert not f.cached(42 * BLOCK, 1)
        f.prefetch([(0, len(DATA))])
        assert f.whole() == DATA
        assert f.stats.rounds == 3
    assert _ranges(nginx)[1] == "bytes=5120-6143,40960-44031"


def test_the_cache_keeps_at_most_cache_bytes(url: str, nginx: NginxServer) -> None:
    with RangeFile(url, block_size=BLOCK, read_ahead=NoReadAhead(), cache_bytes=16 * BLOCK) as f:
        f.read_at(0, 30 * BLOCK)  # larger than the cache: answered whole all the same
        assert f.cached(14 * BLOCK, 16 * BLOCK)  # the most recent 16 blocks
        assert not f.cached(0, BLOCK)
        requests = f.stats.requests
        assert f.read_at(0, 10) == DATA[:10]
        assert f.stats.requests == requests + 1


def test_a_range_source_given_stays_open_and_one_made_is_closed(
    url: str, nginx: NginxServer
) -> None:
    with RangeSource(url, TransportOptions()) as source:
        with RangeFile(source, block_size=BLOCK) as f:
            assert f.source is source
            assert f.read_at(0, 4) == DATA[:4]
        assert source.fetch_many([(10, 4)]) == [DATA[10:14]]  # still open
    f = RangeFile(url, block_size=BLOCK)
    f.close()
    with pytest.raises(Exception, match="closed"):
        f.source.fetch_many([(0, 1)])


def test_a_missing_file_fails_at_open(nginx: NginxServer) -> None:
    with pytest.raises(SourceNotFoundError, match="absent"):
        RangeFile(nginx.url("absent.bin"))


def test_a_file_replaced_while_read_raises(url: str, nginx: NginxServer) -> None:
    with RangeFile(url, block_size=BLOCK, read_ahead=NoReadAhead()) as f:
        f.read_at(0, 10)
        nginx.write_file("blob.bin", bytes(len(DATA)))  # same size, another ETag
        with pytest.raises(SourceChangedError):
            f.read_at(50 * BLOCK, 10)


def test_a_local_file_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(DATA)
    with RangeFile(path, block_size=BLOCK) as f:
        f.seek(33_333)
        assert f.read(20_000) == DATA[33_333:53_333]
        assert f.info.size == len(DATA)


def test_zipfile_reads_an_archive_through_it(nginx: NginxServer) -> None:
    buffer = io.BytesIO()
    members = {f"m{i}.bin": os.urandom(3000 + i) for i in range(40)}
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    nginx.write_file("a.zip", buffer.getvalue())
    with RangeFile(nginx.url("a.zip"), block_size=4096) as f, zipfile.ZipFile(f) as archive:
        assert {name: archive.read(name) for name in archive.namelist()} == members


def test_h5py_reads_through_it_as_from_the_local_file(nginx: NginxServer) -> None:
    path = nginx.root / "f.h5"
    values = np.arange(30_000, dtype="f8").reshape(300, 100)
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=values, chunks=(30, 20), compression="gzip")
        for i in range(30):
            f.create_group(f"g{i}").attrs["i"] = i
    with RangeFile(nginx.url("f.h5"), block_size=8192) as remote, h5py.File(remote, "r") as f:
        np.testing.assert_array_equal(f["a"][...], values)
        assert [f[f"g{i}"].attrs["i"] for i in range(30)] == list(range(30))
        assert remote.stats.requests < path.stat().st_size / 8192
