"""The nginx fixture: ranges, ETag, If-Match, CORS and the access-log counters."""

from __future__ import annotations

import os
import socket
import urllib.request
from typing import TYPE_CHECKING

import aiohttp
import pytest

from shadowzarr_testing import NginxNotFoundError, NginxServer, free_port
from shadowzarr_testing import nginx as nginx_module

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing.plugin import MakeNginx

pytestmark = pytest.mark.network

PAYLOAD = bytes(range(256)) * 64  # 16 KiB


async def test_range_request_returns_exact_bytes_and_content_range(nginx: NginxServer) -> None:
    nginx.write_file("data/a.bin", PAYLOAD)
    async with (
        aiohttp.ClientSession() as session,
        session.get(nginx.url("data/a.bin"), headers={"Range": "bytes=100-199"}) as response,
    ):
        body = await response.read()
        assert response.status == 206
        assert response.headers["Content-Range"] == f"bytes 100-199/{len(PAYLOAD)}"
        assert body == PAYLOAD[100:200]


async def test_full_get_advertises_ranges_and_etag(nginx: NginxServer) -> None:
    nginx.write_file("a.bin", PAYLOAD)
    async with aiohttp.ClientSession() as session, session.get(nginx.url("/a.bin")) as response:
        assert response.status == 200
        assert await response.read() == PAYLOAD
        assert response.headers["Accept-Ranges"] == "bytes"
        assert response.headers["ETag"].startswith('"')


async def test_if_match_mismatch_is_412_and_match_is_206(nginx: NginxServer) -> None:
    nginx.write_file("a.bin", PAYLOAD)
    async with aiohttp.ClientSession() as session:
        async with session.head(nginx.url("a.bin")) as head:
            etag = head.headers["ETag"]
        wrong = {"Range": "bytes=0-9", "If-Match": '"0-0"'}
        async with session.get(nginx.url("a.bin"), headers=wrong) as response:
            assert response.status == 412
        right = {"Range": "bytes=0-9", "If-Match": etag}
        async with session.get(nginx.url("a.bin"), headers=right) as response:
            assert response.status == 206
            assert await response.read() == PAYLOAD[:10]
    logged = [(entry.status, entry.if_match) for entry in nginx.entries() if entry.method == "GET"]
    assert logged == [(412, '"0-0"'), (206, etag)]


async def test_replacing_a_file_changes_its_etag_even_within_a_second(
    nginx: NginxServer,
) -> None:
    nginx.write_file("a.bin", PAYLOAD)
    async with aiohttp.ClientSession() as session:
        async with session.head(nginx.url("a.bin")) as head:
            before = head.headers["ETag"]
        nginx.write_file("a.bin", PAYLOAD[::-1])  # same size, same second
        async with session.head(nginx.url("a.bin")) as head:
            after = head.headers["ETag"]
        assert after != before
        async with session.get(nginx.url("a.bin"), headers={"If-Match": before}) as response:
            assert response.status == 412


async def test_cors_full_preflight_and_exposed_headers(nginx: NginxServer) -> None:
    nginx.write_file("a.bin", PAYLOAD)
    preflight = {
        "Origin": "http://example.test",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "range, if-match",
    }
    async with aiohttp.ClientSession() as session:
        async with session.options(nginx.url("a.bin"), headers=preflight) as response:
            assert response.status == 204
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            allowed = response.headers["Access-Control-Allow-Headers"].lower()
            assert "range" in allowed
            assert "if-match" in allowed
        headers = {"Origin": "http://example.test", "Range": "bytes=0-0"}
        async with session.get(nginx.url("a.bin"), headers=headers) as response:
            exposed = {
                name.strip().lower()
                for name in response.headers["Access-Control-Expose-Headers"].split(",")
            }
            assert {"content-range", "etag", "content-length"} <= exposed


@pytest.mark.parametrize(
    ("cors", "allow_origin", "expose"), [("no-expose", "*", None), (None, None, None)]
)
async def test_other_cors_modes(
    make_nginx: MakeNginx,
    nginx_root: Path,
    cors: str | None,
    allow_origin: str | None,
    expose: str | None,
) -> None:
    server = make_nginx(nginx_root, cors=cors)  # type: ignore[arg-type]
    server.write_file("a.bin", PAYLOAD)
    headers = {"Origin": "http://example.test", "Range": "bytes=0-0"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(server.url("a.bin"), headers=headers) as response,
    ):
        assert response.status == 206
        assert response.headers.get("Access-Control-Allow-Origin") == allow_origin
        assert response.headers.get("Access-Control-Expose-Headers") == expose


async def test_log_counters_and_reset(nginx: NginxServer) -> None:
    nginx.write_file("x/a.bin", PAYLOAD)
    nginx.write_file("y/b.bin", PAYLOAD)
    async with aiohttp.ClientSession() as session:
        for start in (0, 1000, 2000):
            headers = {"Range": f"bytes={start}-{start + 99}"}
            async with session.get(nginx.url("x/a.bin"), headers=headers) as response:
                await response.read()
        async with session.head(nginx.url("y/b.bin")) as response:
            await response.read()
        async with session.get(nginx.url("y/missing.bin")) as response:
            assert response.status == 404
    assert nginx.count() == 5
    assert nginx.count(method="GET") == 4
    assert nginx.count(path_prefix="x/") == 3
    assert nginx.count(method="head", path_prefix="/y") == 1
    assert nginx.bytes_sent("x/") == 300
    assert nginx.bytes_sent("x/", headers=True) > 300
    ranges = [entry.range for entry in nginx.entries() if entry.uri == "/x/a.bin"]
    assert ranges == ["bytes=0-99", "bytes=1000-1099", "bytes=2000-2099"]
    nginx.reset()
    assert nginx.count() == 0
    async with aiohttp.ClientSession() as session, session.get(nginx.url("y/b.bin")) as response:
        await response.read()
    assert nginx.count() == 1
    assert nginx.bytes_sent() == len(PAYLOAD)


def test_context_manager_stops_the_process(tmp_path: Path) -> None:
    with NginxServer(tmp_path, cors=None) as server:
        assert server.running
        port = server.port
        assert server.url("a/b") == f"http://127.0.0.1:{port}/a/b"
    assert not server.running
    server.stop()  # idempotent


def test_rejects_unknown_cors_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cors"):
        NginxServer(tmp_path, cors="partial")  # type: ignore[arg-type]


def test_missing_nginx_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(NginxNotFoundError, match="apt-get install nginx"):
        NginxServer(tmp_path)


def test_start_retries_when_the_port_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        ports = iter([taken, free_port()])
        monkeypatch.setattr(nginx_module, "free_port", lambda: next(ports))
        with NginxServer(tmp_path) as server:
            assert server.port != taken
            server.write_file("a.txt", b"a")
            with urllib.request.urlopen(server.url("a.txt")) as response:
                assert response.read() == b"a"
