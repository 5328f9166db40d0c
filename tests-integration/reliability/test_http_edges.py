"""HTTP answers at the edges (issue 39): coded bodies, interim answers, loops, limits.

Each runs against a real loopback server (`RawServer`: it writes the answer's bytes as given
and counts the requests it received): the read equals the source's bytes or fails with a typed
error, never wrong bytes, and no answer is asked for twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import time
import zlib
from typing import TYPE_CHECKING

import numpy as np
import pytest
from shadowzarr_spec import SourceChangedError, SourceError, SourceInfo
from shadowzarr_store import open_rfs
from shadowzarr_store.transport import (
    AnswerTooLargeError,
    ContentCodingError,
    RedirectError,
    Transport,
    TransportOptions,
)
from shadowzarr_testing import InFlight, RawServer, range_answer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator
    from pathlib import Path

    from shadowzarr_testing import RawRequest

DATA = np.random.default_rng(39).integers(0, 2**31, 8192, dtype="<i4").tobytes()  # 32,768 B


def _read[T](
    server: RawServer, call: Callable[[Transport, str], Awaitable[T]], **options: object
) -> T:
    url = server.url("ok/data.bin")
    transport = Transport(TransportOptions(allowed_urls=[server.url("ok/")], retries=0, **options))  # type: ignore[arg-type]

    async def go() -> T:
        try:
            return await call(transport, url)
        finally:
            await transport.aclose()

    return asyncio.run(go())


def _answer(status: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode() + body


def _chunked(body: bytes, piece: int = 1000) -> bytes:
    parts = [
        b"%x\r\n%s\r\n" % (len(body[i : i + piece]), body[i : i + piece])
        for i in range(0, len(body), piece)
    ]
    return b"".join(parts) + b"0\r\n\r\n"


# -- content codings ------------------------------------------------------------------------


def _whole_file_references(url: str) -> dict[str, object]:
    array = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [8192],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8192]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    return {
        "version": 1,
        "refs": {
            "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
            "a/zarr.json": json.dumps(array),
            "a/c/0": [url],
        },
    }


CODED = {
    "gzip": lambda data: gzip.compress(data),
    "deflate": lambda data: zlib.compress(data),
}


@pytest.mark.parametrize("framing", ["length", "chunked"])
@pytest.mark.parametrize("coding", list(CODED))
def test_a_coded_whole_file_chunk_reads_as_the_source(
    tmp_path: Path, coding: str, framing: str
) -> None:
    """A server compressing anyway (we ask for identity): the chunk is decoded, not padded."""
    coded = CODED[coding](DATA)

    def serve(request: RawRequest) -> bytes:
        if framing == "chunked":
            headers = {"Transfer-Encoding": "chunked", "Content-Encoding": coding}
            return _answer("200 OK", headers, _chunked(coded))
        headers = {"Content-Length": str(len(coded)), "Content-Encoding": coding}
        return _answer("200 OK", headers, coded)

    with RawServer(serve) as server:
        path = tmp_path / "refs.json"
        path.write_text(json.dumps(_whole_file_references(server.url("ok/data.bin"))))
        read = open_rfs(path, allowed_urls=[server.url("ok/")])["a"][:]
        assert read.tobytes() == DATA
        assert len(server.requests) == 1


def test_a_whole_file_in_an_unknown_coding_is_refused(tmp_path: Path) -> None:
    def serve(request: RawRequest) -> bytes:
        headers = {"Content-Length": "100", "Content-Encoding": "br"}
        return _answer("200 OK", headers, bytes(100))

    with RawServer(serve) as server:
        path = tmp_path / "refs.json"
        path.write_text(json.dumps(_whole_file_references(server.url("ok/data.bin"))))
        with pytest.raises(ContentCodingError, match="br"):
            open_rfs(path, allowed_urls=[server.url("ok/")])["a"][:]


@pytest.mark.parametrize("client", ["ours", "aiohttp"])
def test_a_coded_range_answer_is_refused(client: str) -> None:
    def serve(request: RawRequest) -> bytes:
        body = gzip.compress(DATA[4:])
        headers = {
            "Content-Range": f"bytes 4-{4 + len(body) - 1}/{len(DATA)}",
            "Content-Length": str(len(body)),
            "Content-Encoding": "gzip",
        }
        return _answer("206 Partial Content", headers, body)

    end = 4 + len(gzip.compress(DATA[4:])) if client == "ours" else None  # None: aiohttp's
    with RawServer(serve) as server, pytest.raises(ContentCodingError):
        _read(server, lambda t, url: t.read(url, 4, end))


# -- interim answers, line ends, chunked ranges, lengths -------------------------------------


def test_interim_answers_are_skipped() -> None:
    def serve(request: RawRequest) -> bytes:
        interim = b"HTTP/1.1 100 Continue\r\nContent-Length: 0\r\n\r\n"
        hints = b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
        return interim + hints + range_answer(DATA, request)

    with RawServer(serve) as server:
        answer = _read(server, lambda t, url: t.read(url, 100, 200))
        assert answer.data == DATA[100:200]
        assert len(server.requests) == 1


def test_a_head_with_lf_line_ends_is_read_at_once() -> None:
    def serve(request: RawRequest) -> bytes:
        head, _, body = range_answer(DATA, request).partition(b"\r\n\r\n")
        return head.replace(b"\r\n", b"\n") + b"\n\n" + body

    with RawServer(serve) as server:
        began = time.monotonic()
        answer = _read(server, lambda t, url: t.read(url, 100, 200), timeout=5.0)
        assert answer.data == DATA[100:200]
        assert time.monotonic() - began < 2.0
        assert len(server.requests) == 1


def test_a_chunked_range_answer_is_asked_for_once() -> None:
    def serve(request: RawRequest) -> bytes:
        plain = range_answer(DATA, request)
        head, _, body = plain.partition(b"\r\n\r\n")
        lines = [line for line in head.split(b"\r\n") if not line.startswith(b"Content-Length")]
        return (
            b"\r\n".join([*lines, b"Transfer-Encoding: chunked"]) + b"\r\n\r\n" + _chunked(body, 7)
        )

    with RawServer(serve) as server:
        answer = _read(server, lambda t, url: t.read(url, 1000, 3000))
        assert answer.data == DATA[1000:3000]
        assert len(server.requests) == 1


@pytest.mark.parametrize(
    "framing",
    [b"Content-Length: \xc2\xb2", b"Content-Length: 5, 5", b"Transfer-Encoding: chunked"],
    ids=["superscript-two", "two-lengths", "bad-chunk-size"],
)
def test_unreadable_framing_is_a_clear_framing_error(framing: bytes) -> None:
    def serve(request: RawRequest) -> bytes:
        body = b"-5\r\nabcde\r\n0\r\n\r\n" if b"chunked" in framing else b"abcde"
        return b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n\r\n" + body

    with RawServer(serve) as server, pytest.raises(SourceError) as failed:
        _read(server, lambda t, url: t.read(url, 0, None))
    message = str(failed.value)
    assert "invalid literal" not in message
    assert "not a length" in message or "chunk size" in message


# -- redirects ------------------------------------------------------------------------------


@pytest.mark.parametrize("whole", [False, True])
def test_a_redirect_loop_is_found_at_its_first_repeat(whole: bool) -> None:
    def serve(request: RawRequest) -> bytes:
        there = "/ok/b.bin" if request.target == "/ok/data.bin" else "/ok/data.bin"
        return _answer("302 Found", {"Location": there, "Content-Length": "0"}, b"")

    with RawServer(serve) as server, pytest.raises(RedirectError, match="loop"):
        _read(server, lambda t, url: t.read(url, 0, None if whole else 10))
    assert [r.target for r in server.requests] == ["/ok/data.bin", "/ok/b.bin"]


@pytest.mark.parametrize("end", [10, None])
def test_an_endless_chain_of_redirects_costs_the_hop_limit_once(end: int | None) -> None:
    """Ten redirects followed, then a `RedirectError` (was 22 requests: ours, then aiohttp's)."""

    def serve(request: RawRequest) -> bytes:
        hop = int(request.target.rsplit("-", 1)[1]) if "-" in request.target else 0
        return _answer("302 Found", {"Location": f"/ok/r-{hop + 1}", "Content-Length": "0"}, b"")

    with RawServer(serve) as server, pytest.raises(RedirectError, match="more than 10"):
        _read(server, lambda t, url: t.read(url, 0, end))
    assert len(server.requests) == 11


# -- limits ---------------------------------------------------------------------------------


def test_a_whole_file_longer_than_the_recorded_size_is_refused_unread() -> None:
    def serve(request: RawRequest) -> bytes:
        return _answer("200 OK", {"Content-Length": str(10**12)}, b"")  # the body never comes

    with RawServer(serve) as server, pytest.raises(SourceChangedError):
        _read(server, lambda t, url: t.read(url, 0, None, expect=SourceInfo(size=1000)))


@pytest.mark.parametrize("recorded", [True, False])
def test_a_chunked_whole_file_growing_past_its_limit_is_refused(recorded: bool) -> None:
    def serve(request: RawRequest) -> bytes:
        return _answer("200 OK", {"Transfer-Encoding": "chunked"}, _chunked(DATA, 4096))

    expect = SourceInfo(size=1000) if recorded else None
    error = SourceChangedError if recorded else AnswerTooLargeError
    with RawServer(serve) as server, pytest.raises(error):
        _read(
            server,
            lambda t, url: t.read(url, 0, None, expect=expect),
            max_whole_file_bytes=20_000,
        )


def test_connections_across_origins_are_capped() -> None:
    """Many chunks over many origins: no more connections at once than the total cap."""
    in_flight = InFlight()
    with _range_servers(12, 0.2, in_flight) as servers:
        urls = [server.url("ok/data.bin") for server in servers]
        options = TransportOptions(max_total_connections=16, max_connections=8, retries=0)
        transport = Transport(options)

        async def go() -> list[bytes]:
            try:
                reads = [
                    transport.read(url, i * 16, i * 16 + 16) for url in urls for i in range(10)
                ]
                return [answer.data for answer in await asyncio.gather(*reads)]
            finally:
                await transport.aclose()

        datas = asyncio.run(go())
    assert datas == [DATA[i * 16 : i * 16 + 16] for _ in urls for i in range(10)]
    assert in_flight.peak == 16
    assert sum(len(server.requests) for server in servers) == 120


def test_a_smaller_total_holds_on_pools_a_bigger_one_made() -> None:
    """A process shares one pool per origin among its transports. A transport capped at 16
    connections in all, reading after one with a bigger budget made the pools, still has at
    most 16 requests out at once; the bigger transport then reads with its own budget again."""
    in_flight = InFlight()
    with _range_servers(6, 0.1, in_flight) as servers:
        urls = [server.url("ok/data.bin") for server in servers]
        wide = Transport(TransportOptions(max_total_connections=256, max_connections=32))
        narrow = Transport(TransportOptions(max_total_connections=16, max_connections=8))

        async def reads(transport: Transport, per_origin: int) -> list[bytes]:
            got = [transport.read(url, i, i + 16) for url in urls for i in range(per_origin)]
            return [answer.data for answer in await asyncio.gather(*got)]

        async def go() -> tuple[list[bytes], int, list[bytes], int]:
            try:
                await reads(wide, 1)  # the pools are made with the wide budget
                in_flight.peak = 0
                narrow_data = await reads(narrow, 12)
                narrow_peak = in_flight.peak
                in_flight.peak = 0
                wide_data = await reads(wide, 12)
                return narrow_data, narrow_peak, wide_data, in_flight.peak
            finally:
                await narrow.aclose()
                await wide.aclose()

        narrow_data, narrow_peak, wide_data, wide_peak = asyncio.run(go())
    expected = [DATA[i : i + 16] for _ in urls for i in range(12)]
    assert narrow_data == expected
    assert wide_data == expected
    assert narrow_peak == 16
    assert wide_peak == 6 * 12  # every range out at once: nothing held it to the narrow budget


@contextlib.contextmanager
def _range_servers(count: int, hold: float, in_flight: InFlight) -> Iterator[list[RawServer]]:
    """``count`` servers answering ranges of DATA after ``hold`` seconds, counted together."""
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                RawServer(lambda r: range_answer(DATA, r), hold=hold, in_flight=in_flight)
            )
            for _ in range(count)
        ]
