"""`LatencyProxy(root=...)` answers files itself as S3 would, byte for byte what nginx gives."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
import pytest

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer
    from shadowzarr_testing.plugin import MakeProxy

pytestmark = pytest.mark.network

PAYLOAD = bytes(range(256)) * 400  # 100 KiB


async def _answer(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], method: str = "GET"
) -> tuple[int, bytes, str | None, str | None]:
    async with session.request(method, url, headers=headers) as response:
        body = await response.read()
        return (
            response.status,
            body,
            response.headers.get("Content-Range"),
            response.headers.get("ETag"),
        )


async def test_answers_like_s3_in_front_of_nginx(make_proxy: MakeProxy, nginx: NginxServer) -> None:
    nginx.write_file("d/a b.bin", PAYLOAD)
    forwarding = make_proxy(nginx.url(""), ranges="s3")
    own = make_proxy(nginx.url(""), ranges="s3", root=nginx.root)
    cases = [
        {"Range": "bytes=1000-1999"},
        {"Range": "bytes=100000-"},
        {"Range": "bytes=-10"},
        {"Range": "bytes=102000-200000"},  # cut at the end of the file
        {"Range": "bytes=0-1,10-20"},  # multi-range: 200 and the whole object, as S3
        {},
    ]
    async with aiohttp.ClientSession() as session:
        for headers in cases:
            expected = await _answer(session, forwarding.url("d/a%20b.bin"), headers)
            assert await _answer(session, own.url("d/a%20b.bin"), headers) == expected, headers
        etag = expected[3]
        assert etag is not None
        assert (await _answer(session, own.url("d/a%20b.bin"), {"Range": "bytes=0-9"}))[0] == 206
        stale = {"Range": "bytes=0-9", "If-Match": '"stale"'}
        assert (await _answer(session, own.url("d/a%20b.bin"), stale))[0] == 412
        fresh = {"Range": "bytes=0-9", "If-Match": etag}
        assert (await _answer(session, own.url("d/a%20b.bin"), fresh))[:2] == (206, PAYLOAD[:10])
        past = await _answer(session, own.url("d/a%20b.bin"), {"Range": "bytes=200000-200010"})
        assert past[0] == 416
        assert past[2] == f"bytes */{len(PAYLOAD)}"
        head = await _answer(session, own.url("d/a%20b.bin"), {}, method="HEAD")
        assert head[:2] == (200, b"")
        for missing in ("d/none.bin", "d", "../etc/passwd", "d/%2e%2e/%2e%2e/x"):
            assert (await _answer(session, own.url(missing), {}))[0] == 404, missing
    # Counted and logged like forwarded requests; nginx never saw the proxy's own answers.
    assert own.requests == len(cases) + 9
    assert all(entry.uri != "/d/none.bin" for entry in nginx.entries())


def test_root_needs_single_range_answers(make_proxy: MakeProxy, nginx: NginxServer) -> None:
    with pytest.raises(ValueError, match="ranges='s3'"):
        make_proxy(nginx.url(""), root=nginx.root)
