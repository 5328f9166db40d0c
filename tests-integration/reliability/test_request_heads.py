"""No value from a reference file or a server reaches a request head unchecked (issue 39).

A source's ETag goes into ``If-Match``; one carrying CR LF would write header lines, or a whole
second request, of the reference file's choosing. Each test runs a real loopback server that
keeps every byte it received and parses it as a server does: it must show no injected line and
no request but the ones asked for.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shadowzarr_spec import (
    ReferenceFormatError,
    SourceAccessError,
    SourceChangedError,
    SourceError,
    SourceInfo,
)
from shadowzarr_spec.gen_expr import expand_named_templates
from shadowzarr_store import open_rfs
from shadowzarr_store.transport import Transport, TransportOptions, UnsafeRequestError
from shadowzarr_store.transport.http import _address
from shadowzarr_store.transport.http1 import OriginPool
from shadowzarr_testing import RawServer, range_answer

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import RawRequest

DATA = np.arange(8, dtype="<i4").tobytes()
SMUGGLED = (
    '"e1"\r\nX-Injected: yes\r\n\r\nGET /ok/secret.bin HTTP/1.1\r\nHost: x\r\n\r\n'
    "DELETE /ok/data.bin HTTP/1.1\r\nHost: x\r\nX-Other: "
)


def _serve(request: RawRequest) -> bytes:
    return range_answer(DATA, request)


def _references(url: str, etag: str) -> dict[str, object]:
    array = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [8],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "dimension_names": ["x"],
    }
    return {
        "version": 1,
        "refs": {
            "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
            "a/zarr.json": json.dumps(array),
            "a/c/0": [url, 0, 16],
            "a/c/1": [url, 16, 16],
        },
        "sources": {url: {"size": len(DATA), "etag": etag}},
    }


def _assert_nothing_injected(server: RawServer, wanted: int) -> None:
    assert b"X-Injected" not in server.received
    assert b"X-Other" not in server.received
    assert [r.target for r in server.requests] == ["/ok/data.bin"] * wanted
    assert {r.method for r in server.requests} <= {"GET"}


def _read(path: Path, options: dict[str, list[str]], through: str) -> None:
    if through == "open_rfs":
        open_rfs(path, **options)["a"][:]
    else:
        xr.open_dataset(path, engine="shadowzarr", backend_kwargs={"store_options": options}).load()


@pytest.mark.parametrize("through", ["open_rfs", "xarray"])
def test_a_reference_etag_with_crlf_smuggles_nothing(tmp_path: Path, through: str) -> None:
    with RawServer(_serve) as server:
        path = tmp_path / "refs.json"
        path.write_text(json.dumps(_references(server.url("ok/data.bin"), SMUGGLED)))
        options = {"allowed_urls": [server.url("ok/data.bin")]}
        with pytest.raises(ReferenceFormatError) as refused:
            _read(path, options, through)
        _assert_nothing_injected(server, 0)
    message = str(refused.value)
    assert "\r" not in message
    assert "\n" not in message
    assert "\\r\\nX-Injected" in message


def test_a_remote_reference_file_with_such_an_etag_is_read_and_refused(tmp_path: Path) -> None:
    with RawServer(lambda request: _serve_refs(request, server)) as server:
        with pytest.raises(ReferenceFormatError):
            open_rfs(server.url("ok/refs.json"), allowed_urls=[server.url("ok/")])
        assert [r.target for r in server.requests] == ["/ok/refs.json"]
        assert b"X-Injected" not in server.received


def _serve_refs(request: RawRequest, server: RawServer) -> bytes:
    refs = json.dumps(_references(server.url("ok/data.bin"), SMUGGLED)).encode()
    return range_answer(refs, request)


READS = {
    "range (our HTTP/1.1 client)": lambda t, url, e: t.read(url, 0, 16, expect=e),
    "whole file (our client)": lambda t, url, e: t.read(url, 0, None, expect=e),
    "open-ended range (aiohttp)": lambda t, url, e: t.read(url, 4, None, expect=e),
    "multi-range (aiohttp)": lambda t, url, e: t.read_many(url, [(0, 4), (12, 16)], expect=e),
}


@pytest.mark.parametrize("read", list(READS))
def test_every_request_path_refuses_an_unsafe_etag_before_sending(read: str) -> None:
    """The parse-time check aside (a `SourceInfo` made in code): the one head check refuses."""
    with RawServer(_serve) as server:
        url = server.url("ok/data.bin")
        transport = Transport(TransportOptions(allowed_urls=[url], retries=0))
        expect = SourceInfo(size=len(DATA), etag=SMUGGLED)

        async def go() -> None:
            try:
                await READS[read](transport, url, expect)
            finally:
                await transport.aclose()

        with pytest.raises(UnsafeRequestError) as refused:
            asyncio.run(go())
        _assert_nothing_injected(server, 0)
    assert "\r" not in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_changed_etag_is_shown_escaped() -> None:
    """A server's new ETag (any bytes but CR LF) is named in `SourceChangedError` escaped."""

    def serve(request: RawRequest) -> bytes:
        return range_answer(DATA, request, etag='"e2\x1b[31m"')

    with RawServer(serve) as server:
        url = server.url("ok/data.bin")
        transport = Transport(TransportOptions(allowed_urls=[url], retries=0))

        async def go() -> None:
            try:
                await transport.read(url, 0, 16, expect=SourceInfo(len(DATA), '"e1"'))
            finally:
                await transport.aclose()

        with pytest.raises(SourceChangedError) as changed:
            asyncio.run(go())
    assert "\x1b" not in str(changed.value)
    assert "\\x1b[31m" in str(changed.value)


def test_a_redirect_location_with_a_control_byte_is_refused() -> None:
    def serve(request: RawRequest) -> bytes:
        if request.target == "/ok/data.bin":
            return b"HTTP/1.1 302 Found\r\nLocation: /ok/x\x01y\r\nContent-Length: 0\r\n\r\n"
        return range_answer(DATA, request)

    with RawServer(serve) as server:
        url = server.url("ok/data.bin")
        transport = Transport(TransportOptions(allowed_urls=[server.url("ok/")], retries=0))

        async def go() -> None:
            try:
                await transport.read(url, 0, 16)
            finally:
                await transport.aclose()

        with pytest.raises(UnsafeRequestError):
            asyncio.run(go())
        assert [r.target for r in server.requests] == ["/ok/data.bin"]


# -- property: whatever the inputs, the head builder writes no control byte into a line ---------

_ANY_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x20),
        st.sampled_from("\x7f\r\n\t\x00 :\"'/?#%W"),
        st.characters(min_codepoint=0x21, max_codepoint=0x7E),
        st.characters(min_codepoint=0x80, max_codepoint=0x10FFFF, exclude_categories=("Cs",)),
    ),
    max_size=40,
)
HEADS = settings(
    max_examples=500,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _head_or_refusal(url: str, headers: dict[str, str]) -> bytes | None:
    """The head `OriginPool.head` writes for ``url`` (as the client turns it into an address),
    or None when a check refused it with a typed error."""
    try:
        address = _address(url)
    except SourceAccessError:  # not a URL yarl can send
        return None
    if not address.raw_host:
        return None
    pool = OriginPool(address, 1, 1.0)
    try:
        return pool.head(address, headers, "shown")
    except UnsafeRequestError:
        return None


def _assert_clean(head: bytes) -> None:
    assert head.endswith(b"\r\n\r\n")
    lines = head[:-4].split(b"\r\n")
    assert lines[0].startswith(b"GET /")
    assert lines[0].endswith(b" HTTP/1.1")
    assert lines[0].count(b" ") == 2
    for line in lines:
        assert line
        assert not any(byte < 0x20 or byte == 0x7F for byte in line), line
    for line in lines[1:]:
        name, colon, _ = line.partition(b":")
        assert colon
        assert b" " not in name


@HEADS
@given(etag=_ANY_TEXT, value=_ANY_TEXT, name=_ANY_TEXT, path=_ANY_TEXT, query=_ANY_TEXT)
def test_no_control_byte_reaches_a_head(
    etag: str, value: str, name: str, path: str, query: str
) -> None:
    url = f"http://127.0.0.1:9/{path}?{query}"
    headers = {"If-Match": etag, "X-User": value, name or "X": "v"}
    head = _head_or_refusal(url, headers)
    if head is not None:
        _assert_clean(head)


@HEADS
@given(expansion=_ANY_TEXT, etag=_ANY_TEXT)
def test_no_control_byte_reaches_a_head_through_a_template(expansion: str, etag: str) -> None:
    try:
        url = expand_named_templates(
            "http://127.0.0.1:9/{{d}}/x.bin", {"d": expansion}, strict=True
        )
    except ReferenceFormatError:
        return
    head = _head_or_refusal(url, {"If-Match": etag})
    if head is not None:
        _assert_clean(head)


# -- a DANDI answer and a DANDI token are head values too ------------------------------------

DOWNLOAD = "api/assets/a1/download/"


@pytest.mark.parametrize(
    "location", ["/ok/x\x01y", "/ok/x\x7fy", "http://127.0.0.1:9/ok\x00/data.bin"]
)
def test_a_dandi_answer_with_a_control_byte_is_refused(location: str) -> None:
    def serve(request: RawRequest) -> bytes:
        head = b"HTTP/1.1 302 Found\r\nLocation: " + location.encode("latin-1")
        return head + b"\r\nContent-Length: 0\r\n\r\n"

    with RawServer(serve) as server:
        url = server.url(DOWNLOAD)
        transport = Transport(
            TransportOptions(
                allowed_urls=[server.url("")],
                retries=0,
                dandi_api_hosts={f"127.0.0.1:{server.port}": "SHADOWZARR_TEST_NO_KEY"},
            )
        )

        async def go() -> None:
            try:
                await transport.read(url, 0, 16)
            finally:
                await transport.aclose()

        # a NUL in a head line is refused by aiohttp's parser already (a SourceError too)
        error = SourceError if "\x00" in location else UnsafeRequestError
        with pytest.raises(error) as refused:
            asyncio.run(go())
        assert [r.target for r in server.requests] == [f"/{DOWNLOAD}"]
    assert not any(ord(c) < 0x20 or c == "\x7f" for c in str(refused.value))


def test_a_dandi_token_with_crlf_is_refused_unsent_and_unshown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = "secret-token\r\nX-Injected: yes"
    monkeypatch.setenv("SHADOWZARR_TEST_DANDI_KEY", token)
    with RawServer(_serve) as server:
        transport = Transport(
            TransportOptions(
                allowed_urls=[server.url("")],
                retries=0,
                dandi_api_hosts={f"127.0.0.1:{server.port}": "SHADOWZARR_TEST_DANDI_KEY"},
            )
        )

        async def go() -> None:
            try:
                await transport.read(server.url(DOWNLOAD), 0, 16)
            finally:
                await transport.aclose()

        with pytest.raises(UnsafeRequestError) as refused:
            asyncio.run(go())
        assert server.requests == []
        assert b"X-Injected" not in server.received
    assert "secret-token" not in str(refused.value)
