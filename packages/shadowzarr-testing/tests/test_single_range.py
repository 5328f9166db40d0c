"""`SingleRangeServer`: the answers `LatencyProxy(root=..., ranges="s3")` gives, byte for byte, each
after its latency, a thousand in flight at once, counted as the proxy counts them."""

from __future__ import annotations

import asyncio
import resource
import time
from typing import TYPE_CHECKING

import aiohttp
import pytest

from shadowzarr_testing.single_range import SingleRangeServer

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer
    from shadowzarr_testing.plugin import MakeProxy

pytestmark = pytest.mark.network

PAYLOAD = bytes(range(256)) * 400  # 100 KiB


async def _answer(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], method: str = "GET"
) -> tuple[int, bytes, str | None, str | None, str | None]:
    async with session.request(method, url, headers=headers) as response:
        body = await response.read()
        return (
            response.status,
            body,
            response.headers.get("Content-Range"),
            response.headers.get("ETag"),
            response.headers.get("Last-Modified"),
        )


async def test_answers_as_the_proxy_answers_from_files(
    make_proxy: MakeProxy, nginx: NginxServer
) -> None:
    nginx.write_file("d/a b.bin", PAYLOAD)
    proxy = make_proxy(nginx.url(""), ranges="s3", root=nginx.root)
    cases: list[tuple[str, dict[str, str], str]] = [
        ("d/a%20b.bin", {"Range": "bytes=1000-1999"}, "GET"),
        ("d/a%20b.bin", {"Range": "bytes=100000-"}, "GET"),
        ("d/a%20b.bin", {"Range": "bytes=-10"}, "GET"),
        ("d/a%20b.bin", {"Range": "bytes=102000-200000"}, "GET"),  # cut at the end
        ("d/a%20b.bin", {"Range": "bytes=0-1,10-20"}, "GET"),  # S3: 200, the whole object
        ("d/a%20b.bin", {"Range": "bytes=200000-200010"}, "GET"),  # 416
        ("d/a%20b.bin", {"Range": "bytes=0-9", "If-Match": '"stale"'}, "GET"),  # 412
        ("d/a%20b.bin", {}, "GET"),
        ("d/a%20b.bin", {}, "HEAD"),
        ("d/a%20b.bin", {}, "DELETE"),  # 405
        ("d/none.bin", {}, "GET"),
        ("d/%2e%2e/%2e%2e/x", {}, "GET"),
    ]
    with SingleRangeServer(nginx.root) as server:
        async with aiohttp.ClientSession() as session:
            for path, headers, method in cases:
                expected = await _answer(session, proxy.url(path), headers, method)
                found = await _answer(session, server.url(path), headers, method)
                assert found == expected, (path, headers, method)
        assert server.requests == len(cases)
        assert server.count(path_prefix="d/a b.bin") == len(cases) - 2
        assert server.bytes_sent() == proxy.bytes_sent()
        assert server.connections == 1  # one keep-alive connection for them all
        statuses = [entry["status"] for entry in server.log]
        assert statuses == [entry["status"] for entry in proxy.log]


def _enough_descriptors(wanted: int) -> int:
    """Connections this process may hold both ends of (up to ``wanted``), after raising the
    soft limit of open files to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = 8192 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return min(wanted, (soft - 200) // 2)


@pytest.mark.slow
async def test_a_thousand_requests_in_flight_each_after_its_latency(tmp_path: Path) -> None:
    (tmp_path / "f.bin").write_bytes(PAYLOAD)
    count = _enough_descriptors(1000)
    assert count >= 400
    latency, connect = 2.0, 1.0  # long enough for every request to arrive before any answer
    with SingleRangeServer(tmp_path, latency=latency, connect_latency=connect) as server:
        opened = await asyncio.gather(
            *(asyncio.open_connection("127.0.0.1", server.port) for _ in range(count))
        )

        async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, i: int) -> float:
            start = (i * 97) % (len(PAYLOAD) - 16)
            sent = time.monotonic()
            writer.write(
                f"GET /f.bin HTTP/1.1\r\nHost: x\r\nRange: bytes={start}-{start + 15}\r\n\r\n"
                .encode()
            )  # fmt: skip
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 206 ")
            assert await reader.readexactly(16) == PAYLOAD[start : start + 16]
            return time.monotonic() - sent

        try:
            for wave, least in ((0, latency + connect), (1, latency)):
                server.reset()
                seconds = await asyncio.gather(
                    *(one(r, w, i + wave) for i, (r, w) in enumerate(opened))
                )
                assert min(seconds) >= least - 0.005, wave  # never early
                assert server.requests == count
                assert server.max_concurrent == count  # all in flight at once
                assert server.connections == (count if wave == 0 else 0)
                assert server.bytes_sent() == 16 * count
                server.wait_idle()  # each duration is written just after its answer
                durations = [entry["duration"] for entry in server.log]
                assert min(durations) >= least - 0.005
        finally:
            for _, writer in opened:
                writer.close()


async def _exchange(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        return await asyncio.wait_for(reader.read(), timeout=10)  # until the server closes
    finally:
        writer.close()


async def test_pipelined_requests_are_answered_in_order_and_close_is_honoured(
    tmp_path: Path,
) -> None:
    (tmp_path / "f.bin").write_bytes(PAYLOAD)
    with SingleRangeServer(tmp_path, latency=0.05, connect_latency=0.2) as server:
        # The first request waits for the connection's set-up, the second not: yet the second
        # answer follows the first.
        request = "GET /f.bin HTTP/1.1\r\nHost: x\r\nRange: bytes={}-{}\r\n{}\r\n"
        data = (
            request.format(0, 2, "")
            + request.format(10, 12, "")
            + request.format(20, 22, "Connection: close\r\n")
            + request.format(30, 32, "")  # after the close: never read
        ).encode()
        answer = await _exchange(server.port, data)
        assert answer.count(b"HTTP/1.1 206 ") == 3
        bodies = [part.split(b"\r\n\r\n", 1)[1][:3] for part in answer.split(b"HTTP/1.1 ")[1:]]
        assert bodies == [PAYLOAD[0:3], PAYLOAD[10:13], PAYLOAD[20:23]]
        assert b"Connection: close" in answer
        assert server.requests == 3
        # HTTP/1.0 closes after its answer; a request with a body is refused and closed.
        assert (await _exchange(server.port, b"GET /f.bin HTTP/1.0\r\n\r\n")).endswith(PAYLOAD)
        refused = await _exchange(
            server.port, b"PUT /f.bin HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
        )
        assert refused.startswith(b"HTTP/1.1 400 ")
        assert [entry["status"] for entry in server.log][-2:] == [200, 400]


async def test_bandwidth_is_shared_and_bodies_are_streamed(tmp_path: Path) -> None:
    big = PAYLOAD * 10  # 1 MiB: streamed in pieces
    (tmp_path / "big.bin").write_bytes(big)
    rate = 4e6
    with SingleRangeServer(tmp_path, bandwidth=rate) as server:
        started = time.monotonic()
        async with aiohttp.ClientSession() as session:
            bodies = await asyncio.gather(
                *(_answer(session, server.url("big.bin"), {}) for _ in range(2))
            )
        seconds = time.monotonic() - started
        assert all(body[1] == big for body in bodies)
        assert seconds >= 2 * len(big) / rate - 0.05  # both share one link
        assert server.bytes_sent() == 2 * len(big)
