"""The latency proxy: forwarding, latency, the shared bandwidth cap and the counters."""

from __future__ import annotations

import asyncio
import socket
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import aiohttp
import pytest

from shadowzarr_testing import LatencyProxy

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer
    from shadowzarr_testing.plugin import MakeProxy

pytestmark = pytest.mark.network

PAYLOAD = bytes(range(256)) * 1024  # 256 KiB


async def test_forwards_ranges_etag_and_if_match(nginx: NginxServer, proxy: LatencyProxy) -> None:
    nginx.write_file("d/a.bin", PAYLOAD)
    async with aiohttp.ClientSession() as session:
        headers = {"Range": "bytes=1000-1999"}
        async with session.get(proxy.url("d/a.bin"), headers=headers) as response:
            assert response.status == 206
            assert response.headers["Content-Range"] == f"bytes 1000-1999/{len(PAYLOAD)}"
            assert await response.read() == PAYLOAD[1000:2000]
            etag = response.headers["ETag"]
        stale = {"Range": "bytes=0-9", "If-Match": '"stale"'}
        async with session.get(proxy.url("d/a.bin"), headers=stale) as response:
            assert response.status == 412
        fresh = {"Range": "bytes=0-9", "If-Match": etag}
        async with session.get(proxy.url("d/a.bin"), headers=fresh) as response:
            assert response.status == 206
        async with session.head(proxy.url("d/a.bin")) as response:
            assert response.status == 200
            assert response.headers["Content-Length"] == str(len(PAYLOAD))
            assert await response.read() == b""
    assert [entry.if_match for entry in nginx.entries()] == ["", '"stale"', etag, ""]


async def test_latency_is_added_to_every_request(make_proxy: MakeProxy, nginx: NginxServer) -> None:
    nginx.write_file("a.bin", b"x")
    slow = make_proxy(latency=0.1)
    assert slow.upstream == nginx.base_url  # the factory's default upstream
    async with aiohttp.ClientSession() as session:
        for _ in range(3):
            started = time.perf_counter()
            async with session.get(slow.url("a.bin")) as response:
                await response.read()
            assert time.perf_counter() - started >= 0.1
    slow.latency = 0.25  # takes effect at once, for sync clients too
    started = time.perf_counter()
    with urllib.request.urlopen(slow.url("a.bin")) as response:
        response.read()
    assert time.perf_counter() - started >= 0.25
    slow.wait_idle()
    assert [entry["duration"] >= 0.1 for entry in slow.log] == [True] * 4


async def test_connect_latency_is_paid_once_per_connection(
    make_proxy: MakeProxy, nginx: NginxServer
) -> None:
    """The handshakes of a real network: the first request of a connection waits
    ``connect_latency`` more, the next ones on it do not; ``connections`` counts them."""
    nginx.write_file("a.bin", b"x")
    proxy = make_proxy(latency=0.01, connect_latency=0.2)
    took = []
    async with aiohttp.ClientSession() as session:  # one kept-alive connection
        for _ in range(3):
            started = time.perf_counter()
            async with session.get(proxy.url("a.bin")) as response:
                await response.read()
            took.append(time.perf_counter() - started)
    async with (
        aiohttp.ClientSession() as session,  # a second connection
        session.get(proxy.url("a.bin")) as response,
    ):
        await response.read()
    assert took[0] >= 0.21
    assert all(t < 0.2 for t in took[1:])
    proxy.wait_idle()
    assert proxy.connections == 2
    assert [entry["new_connection"] for entry in proxy.log] == [True, False, False, True]
    proxy.reset()
    assert proxy.connections == 0


async def test_bandwidth_cap_is_shared_by_concurrent_downloads(
    make_proxy: MakeProxy, nginx: NginxServer
) -> None:
    nginx.write_file("big.bin", PAYLOAD * 2)  # 512 KiB
    capped = make_proxy(bandwidth=2e6)

    async def fetch(session: aiohttp.ClientSession) -> int:
        async with session.get(capped.url("big.bin")) as response:
            return len(await response.read())

    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        sizes = await asyncio.gather(*(fetch(session) for _ in range(4)))
    elapsed = time.perf_counter() - started
    total = sum(sizes)
    assert total == 4 * 2 * len(PAYLOAD)
    # 2 MiB at 2 MB/s is ~1.05 s; the cap allows a burst of 20 ms of bandwidth.
    assert elapsed >= total / 2e6 - 0.1
    assert elapsed < total / 2e6 * 2.5
    assert capped.max_concurrent == 4
    assert capped.bytes_sent("big.bin") == total


async def test_counters_log_and_reset(nginx: NginxServer, proxy: LatencyProxy) -> None:
    nginx.write_file("x/a.bin", PAYLOAD)
    nginx.write_file("y/b.bin", PAYLOAD)
    async with aiohttp.ClientSession() as session:
        for path in ("x/a.bin", "x/a.bin", "y/b.bin"):
            headers = {"Range": "bytes=0-99", "Authorization": "token secret"}
            async with session.get(proxy.url(path) + "?v=1", headers=headers) as response:
                await response.read()
    assert proxy.requests == 3
    assert proxy.count(path_prefix="x") == 2
    assert proxy.count(method="HEAD") == 0
    assert proxy.bytes_sent() == 300
    assert proxy.bytes_sent("/y/") == 100
    first = proxy.log[0]
    assert first["method"] == "GET"
    assert first["path"] == "/x/a.bin"
    assert first["query"] == "v=1"
    assert first["status"] == 206
    assert first["range"] == "bytes=0-99"
    assert first["bytes"] == 100
    assert first["headers"]["authorization"] == "token secret"
    assert first["route"] == "proxy"
    assert first["fault"] is None
    proxy.reset()
    assert proxy.requests == 0
    assert proxy.bytes_sent() == 0


async def test_upstream_down_answers_502(nginx: NginxServer, make_proxy: MakeProxy) -> None:
    orphan = make_proxy(upstream=nginx.url(""))
    nginx.stop()
    async with aiohttp.ClientSession() as session, session.get(orphan.url("a.bin")) as response:
        assert response.status == 502
    assert orphan.log[0]["status"] == 502


def test_wait_idle_waits_for_in_flight_requests(nginx: NginxServer, proxy: LatencyProxy) -> None:
    proxy.fail_next(1, "stall")
    with socket.create_connection(("127.0.0.1", proxy.port)) as client:
        client.sendall(b"GET /a.bin HTTP/1.1\r\nHost: test\r\n\r\n")
        deadline = time.monotonic() + 5
        while not proxy.log and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(TimeoutError):
            proxy.wait_idle(timeout=0.2)
        in_flight = proxy.log[0]
        assert in_flight["duration"] is None
    # The client hung up: the stalled handler is cancelled.
    proxy.wait_idle(timeout=5)
    assert proxy.log[0]["fault"] == "stall"
    assert proxy.log[0]["duration"] < 5


def test_stop_joins_the_thread(nginx: NginxServer) -> None:
    with LatencyProxy(nginx.url("")) as running:
        thread = running._thread
        assert thread is not None
        assert thread.is_alive()
    assert not thread.is_alive()
    assert not running.running
    running.stop()  # idempotent


def test_rejects_a_non_http_upstream() -> None:
    with pytest.raises(ValueError, match="http"):
        LatencyProxy("ftp://example.test/")


def test_sync_threads_and_an_upstream_prefix(nginx: NginxServer, make_proxy: MakeProxy) -> None:
    nginx.write_file("sub/dir/a.bin", PAYLOAD)
    prefixed = make_proxy(upstream=nginx.url("sub/"), latency=0.2)

    def fetch(start: int) -> bytes:
        request = urllib.request.Request(
            prefixed.url("dir/a.bin"), headers={"Range": f"bytes={start}-{start + 9}"}
        )
        with urllib.request.urlopen(request) as response:
            return bytes(response.read())

    with ThreadPoolExecutor(4) as pool:
        bodies = list(pool.map(fetch, [0, 10, 20, 30]))
    assert bodies == [PAYLOAD[start : start + 10] for start in (0, 10, 20, 30)]
    assert prefixed.max_concurrent >= 2
    assert nginx.count(path_prefix="sub/dir/") == 4
