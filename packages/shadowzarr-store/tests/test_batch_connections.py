"""Batches of ranges on a single-range server go over kept-alive HTTP/1.1 connections
(`shadowzarr_store.transport.http1`): the same headers, checks, retries and redirects as
aiohttp's requests, at a fraction of the CPU."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest
from shadowzarr_spec import SourceChangedError, SourceError
from shadowzarr_testing import FaultRule, QuietHandler, handler_server

from shadowzarr_store.transport import RangeSource, TransportOptions

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, NginxServer

pytestmark = pytest.mark.network

RANGES = [(i * 5_000, 100 + i) for i in range(40)]


def _blob(nginx_root: Path) -> bytes:
    data = os.urandom(200_000)
    (nginx_root / "f.bin").write_bytes(data)
    return data


def _single(url: str, **options: object) -> RangeSource:
    options.setdefault("multi_range", False)
    return RangeSource(url, TransportOptions(**options), max_gap=0)  # type: ignore[arg-type]


def test_a_batch_sends_the_headers_and_if_match_on_few_connections(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    data = _blob(nginx_root)
    proxy: LatencyProxy = make_proxy(nginx.url(""), ranges="s3", latency=0.01)
    headers = {proxy.url(""): {"Authorization": "Bearer abc"}}
    with _single(proxy.url("f.bin"), headers=headers, max_connections=4) as source:
        assert source.fetch_many([(0, 10)]) == [data[:10]]
        etag = source.etag
        for _ in range(2):
            assert source.fetch_many(RANGES) == [data[o : o + n] for o, n in RANGES]
        assert source.stats.requests == 81
    batch = proxy.log[1:]
    assert len(batch) == 80
    assert all(e["headers"]["authorization"] == "Bearer abc" for e in batch)
    assert all(e["headers"]["if-match"] == etag for e in batch)
    assert all(e["status"] == 206 for e in batch)
    assert proxy.max_concurrent <= 4


@pytest.mark.parametrize(
    "rule",
    [
        FaultRule("reset", times=3),
        FaultRule("503", times=3),
        FaultRule("429", times=3, retry_after=0),
        FaultRule("truncate", times=3),
        FaultRule("wrong_range", times=3, shift=7, honest=True),
        FaultRule("short_end", times=3),
        FaultRule("ignore_range", times=3),
    ],
    ids=lambda rule: rule.kind,
)
def test_faults_in_a_batch_are_retried(
    make_proxy, nginx: NginxServer, nginx_root: Path, rule: FaultRule
) -> None:
    data = _blob(nginx_root)
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    with _single(proxy.url("f.bin"), backoff=0) as source:
        source.fetch_many([(0, 10)])  # the size, against which a short answer is checked
        proxy.faults = [rule]
        assert source.fetch_many(RANGES) == [data[o : o + n] for o, n in RANGES]
        assert source.stats.retries == 3
    assert proxy.count() == 1 + len(RANGES) + 3


def test_a_server_ignoring_range_is_refused_before_its_bodies_are_read(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """200 with the whole object to every range: refused at the answer's head, so 40 ranges
    of a 16 MB file never hold 40 copies of it."""
    (nginx_root / "big.bin").write_bytes(os.urandom(16 << 20))
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    with _single(proxy.url("big.bin"), backoff=0, retries=1) as source:
        source.fetch_many([(0, 10)])
        proxy.faults = [FaultRule("ignore_range", times=1_000)]
        with pytest.raises(SourceError, match="to a request for at most"):
            source.fetch_many(RANGES)
        assert source.stats.bytes < 1 << 20


def test_a_stalled_range_of_a_batch_times_out_and_is_asked_again(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    data = _blob(nginx_root)
    rule = FaultRule("stall", times=1, stall_seconds=20, after_bytes=10)
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=[rule])
    started = time.monotonic()
    with _single(proxy.url("f.bin"), backoff=0, timeout=0.5) as source:
        assert source.fetch_many(RANGES) == [data[o : o + n] for o, n in RANGES]
        assert source.stats.retries == 1
    assert time.monotonic() - started < 5


def test_a_file_changed_under_a_batch_is_caught(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    _blob(nginx_root)
    proxy: LatencyProxy = make_proxy(nginx.url(""), ranges="s3")
    with _single(proxy.url("f.bin")) as source:
        source.fetch_many([(0, 10)])
        time.sleep(1.1)  # nginx's ETag holds the mtime in seconds
        nginx.write_file("f.bin", os.urandom(200_000))
        with pytest.raises(SourceChangedError):
            source.fetch_many(RANGES)


def test_a_stall_is_timed_from_its_own_request_on_a_kept_alive_connection(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """One connection carries every request; the stall timer an earlier request armed on it
    neither fails a later request early nor lets its stall go unseen."""
    data = _blob(nginx_root)
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    with _single(proxy.url("f.bin"), backoff=0, timeout=0.6, max_connections=1) as source:
        source.fetch_many([(0, 10)])  # arms the connection's timer
        time.sleep(0.3)
        proxy.faults = [FaultRule("stall", times=1, stall_seconds=20)]
        started = time.monotonic()
        assert source.fetch_many(RANGES) == [data[o : o + n] for o, n in RANGES]
        took = time.monotonic() - started
        assert source.stats.retries == 1
    assert 0.55 < took < 5
    assert proxy.count() == 1 + len(RANGES) + 1


def test_a_failed_batch_asks_for_no_range_after_the_failure(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """The first failure is the batch's: the requests under way finish, no other range is
    asked for (not forty requests sent on in the background for nobody)."""
    _blob(nginx_root)
    proxy: LatencyProxy = make_proxy(nginx.url(""), ranges="s3")
    with _single(proxy.url("f.bin"), max_connections=2) as source:
        source.fetch_many([(0, 10)])
        time.sleep(1.1)  # nginx's ETag holds the mtime in seconds
        nginx.write_file("f.bin", os.urandom(200_000))
        with pytest.raises(SourceChangedError):
            source.fetch_many(RANGES)
        time.sleep(0.5)  # what would still be sent, sent
    assert proxy.count() <= 1 + 2


def test_a_batch_leaves_none_of_its_objects_to_the_garbage_collector(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """Every object a request makes is freed when it is done with (no reference cycle): a
    batch of thousands of ranges otherwise fed the collector thousands of cycles, each holding
    its answer's body, and the collections cost a third of the batch's CPU. In a process of
    its own: the requests other tests left retrying in the background make garbage too."""
    data = _blob(nginx_root)
    proxy: LatencyProxy = make_proxy(nginx.url(""), ranges="s3")
    done = subprocess.run(
        [sys.executable, "-c", _GARBAGE_SCRIPT, proxy.url("f.bin"), repr(RANGES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    fetched, ours = done.stdout.split()
    assert fetched == hashlib.sha256(b"".join(data[o : o + n] for o, n in RANGES)).hexdigest()
    assert ours == "0"


_GARBAGE_SCRIPT = """
import ast, gc, hashlib, sys, types
from shadowzarr_store.transport import RangeSource, TransportOptions

def ours(thing):
    if isinstance(thing, types.FunctionType):
        return thing.__module__.startswith("shadowzarr_store")
    return type(thing).__module__.startswith("shadowzarr_store")

ranges = ast.literal_eval(sys.argv[2])
options = TransportOptions(multi_range=False, max_connections=4)
with RangeSource(sys.argv[1], options, max_gap=0) as source:
    source.fetch_many(ranges)  # the connections opened before
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    fetched = source.fetch_many(ranges)
    gc.collect()
    print(hashlib.sha256(b"".join(fetched)).hexdigest(), sum(map(ours, gc.garbage)))
"""

# -- one large range: its body received straight into one buffer ---------------------------


@pytest.mark.parametrize(
    "rule",
    [
        FaultRule("reset", times=2),
        FaultRule("503", times=2),
        FaultRule("truncate", times=2),
        FaultRule("wrong_range", times=2, shift=7, honest=True),
        FaultRule("stall", times=1, stall_seconds=20, after_bytes=300_000),
    ],
    ids=lambda rule: rule.kind,
)
def test_one_large_range_is_received_whole_or_retried(
    make_proxy, nginx: NginxServer, nginx_root: Path, rule: FaultRule
) -> None:
    """A range of megabytes arrives in hundreds of pieces into one buffer: a fault part-way
    through (a reset, a cut-short body, a shifted range, a stall) is retried, never served."""
    import asyncio

    data = os.urandom(6 << 20)
    (nginx_root / "large.bin").write_bytes(data)
    proxy: LatencyProxy = make_proxy(nginx.url(""), ranges="s3")
    with _single(proxy.url("large.bin"), backoff=0, timeout=0.5) as source:
        source.fetch_many([(0, 10)])
        proxy.faults = [rule]
        transport = source.transport

        async def both() -> tuple[object, object]:
            view = await transport.read(proxy.url("large.bin"), 1000, 5_001_000, view=True)
            copy = await transport.read(proxy.url("large.bin"), 7, 3_000_007)
            return view.data, copy.data

        view, copy = asyncio.run(both())
        assert isinstance(view, memoryview)
        assert view == data[1000:5_001_000]
        assert type(copy) is bytes
        assert copy == data[7:3_000_007]
        assert source.stats.retries >= 1
    assert all(e["headers"].get("range") for e in proxy.log)


def test_one_range_answered_with_more_than_asked_is_refused(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """A 200 with the whole 16 MB object to a 1 MB range fails at the answer's head."""
    import asyncio

    (nginx_root / "big.bin").write_bytes(os.urandom(16 << 20))
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    with _single(proxy.url("big.bin"), backoff=0, retries=1) as source:
        source.fetch_many([(0, 10)])
        proxy.faults = [FaultRule("ignore_range", times=1_000)]
        with pytest.raises(SourceError, match="to a request for at most"):
            asyncio.run(source.transport.read(proxy.url("big.bin"), 0, 1 << 20, view=True))
        assert source.stats.bytes < 1 << 20


@pytest.mark.parametrize("padding", [0, 15_000, 40_000, 70_000])
def test_answer_heads_of_any_size_up_to_64_kib_are_read_and_longer_ones_refused(
    padding: int,
) -> None:
    """The head is received into a buffer that grows past its first 16 KiB (a proxy or a CDN
    may add long headers); the bytes after it begin the body wherever the split falls; a head
    past 64 KiB is refused with our error (retried, then reported), never read without end."""
    data = os.urandom(300_000)
    asked: list[str] = []

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            asked.append(self.headers.get("Range", ""))
            first, _, last = self.headers["Range"].removeprefix("bytes=").partition("-")
            start, end = int(first), int(last)
            body = data[start : end + 1]
            self.send_response(206)
            if padding:
                self.send_header("X-Padding", "p" * padding)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    ranges = [(0, 10), (1_000, 150_000), (299_990, 10)]
    with handler_server(Handler) as port:
        url = f"http://127.0.0.1:{port}/f.bin"
        with _single(url, retries=1, backoff=0.01) as source:
            if padding < 64 * 1024:
                for _ in range(2):  # the second time on the kept-alive connections
                    assert source.fetch_many(ranges) == [data[o : o + n] for o, n in ranges]
                assert len(asked) == 2 * len(ranges)
            else:
                with pytest.raises(SourceError, match="head longer than 64 KiB"):
                    source.fetch_many(ranges)
