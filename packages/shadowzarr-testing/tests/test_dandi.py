"""The DANDI-like API of the proxy: redirects to presigned URLs, expiry, embargo tokens."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp
import pytest

if TYPE_CHECKING:
    from shadowzarr_testing import LatencyProxy, NginxServer

pytestmark = pytest.mark.network

PAYLOAD = bytes(range(256)) * 64
TOKEN = "0123456789abcdef"


@pytest.fixture
def dandi(nginx: NginxServer, proxy: LatencyProxy) -> LatencyProxy:
    nginx.write_file("blobs/ab/cd/abcd.nwb", PAYLOAD)
    proxy.api_key = TOKEN
    proxy.add_asset("open-asset", "blobs/ab/cd/abcd.nwb")
    proxy.add_asset("closed-asset", "blobs/ab/cd/abcd.nwb", embargoed=True)
    return proxy


async def _location(session: aiohttp.ClientSession, url: str, **headers: str) -> str:
    async with session.get(url, headers=headers, allow_redirects=False) as response:
        assert response.status == 302
        return response.headers["Location"]


async def test_download_redirects_to_a_presigned_url_serving_ranges(
    dandi: LatencyProxy, nginx: NginxServer
) -> None:
    async with aiohttp.ClientSession() as session:
        location = await _location(session, dandi.asset_download_url("open-asset"))
        assert location.startswith(f"{dandi.presigned_base_url}/presigned/blobs/ab/cd/abcd.nwb?")
        assert "X-Amz-Expires=600" in location  # the default presign_ttl
        assert "sig=" in location
        async with session.get(location, headers={"Range": "bytes=10-19"}) as response:
            assert response.status == 206
            assert await response.read() == PAYLOAD[10:20]
            etag = response.headers["ETag"]
        stale = {"Range": "bytes=0-0", "If-Match": '"stale"'}
        async with session.get(location, headers=stale) as response:
            assert response.status == 412
        async with session.get(location, headers={"If-Match": etag}) as response:
            assert response.status == 200
        # aiohttp follows the redirect by itself too.
        async with session.get(dandi.asset_download_url("open-asset")) as response:
            assert await response.read() == PAYLOAD
    assert nginx.count(path_prefix="blobs/") == 4
    assert dandi.count(path_prefix="presigned/") == 4
    assert dandi.count(path_prefix="api/") == 2


async def test_every_download_gets_a_fresh_signature(dandi: LatencyProxy) -> None:
    async with aiohttp.ClientSession() as session:
        first = await _location(session, dandi.asset_download_url("open-asset"))
        second = await _location(session, dandi.asset_download_url("open-asset"))
    assert first != second


async def test_metadata_reports_size_and_etag(dandi: LatencyProxy, nginx: NginxServer) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.head(nginx.url("blobs/ab/cd/abcd.nwb")) as head:
            etag = head.headers["ETag"].strip('"')
        async with session.get(dandi.asset_metadata_url("open-asset")) as response:
            assert response.status == 200
            metadata = await response.json()
    assert metadata["contentSize"] == len(PAYLOAD)
    assert metadata["digest"] == {"dandi:dandi-etag": etag}
    assert metadata["contentUrl"] == [dandi.asset_download_url("open-asset")]


async def test_presigned_url_expires(dandi: LatencyProxy) -> None:
    dandi.presign_ttl = 1.0
    async with aiohttp.ClientSession() as session:
        location = await _location(session, dandi.asset_download_url("open-asset"))
        async with session.get(location) as response:
            assert response.status == 200
        await asyncio.sleep(1.05)
        async with session.get(location) as response:
            assert response.status == 403
            assert "Request has expired" in await response.text()
        location = await _location(session, dandi.asset_download_url("open-asset"))
        async with session.get(location) as response:
            assert response.status == 200


async def test_forged_or_moved_signature_is_refused(dandi: LatencyProxy) -> None:
    async with aiohttp.ClientSession() as session:
        location = await _location(session, dandi.asset_download_url("open-asset"))
        forged = location.rsplit("sig=", 1)[0] + "sig=00"
        async with session.get(forged) as response:
            assert response.status == 403
            assert "SignatureDoesNotMatch" in await response.text()
        moved = location.replace("abcd.nwb", "other.nwb")
        async with session.get(moved) as response:
            assert response.status == 403


async def test_embargoed_asset_needs_the_token_which_stays_on_the_api(
    dandi: LatencyProxy,
) -> None:
    url = dandi.asset_download_url("closed-asset")
    async with aiohttp.ClientSession() as session:
        async with session.get(url, allow_redirects=False) as response:
            assert response.status == 401
        bad = {"Authorization": "token wrong"}
        async with session.get(url, headers=bad, allow_redirects=False) as response:
            assert response.status == 401
        async with session.get(dandi.asset_metadata_url("closed-asset")) as response:
            assert response.status == 401
        # A careful client: token to the API only, the presigned URL without it.
        location = await _location(session, url, Authorization=f"token {TOKEN}")
        async with session.get(location) as response:
            assert await response.read() == PAYLOAD
        # aiohttp drops Authorization on its own when the redirect changes origin.
        good = {"Authorization": f"token {TOKEN}"}
        async with session.get(url, headers=good) as response:
            assert await response.read() == PAYLOAD
    api = [entry for entry in dandi.log if entry["route"] == "api"]
    presigned = [entry for entry in dandi.log if entry["route"] == "presigned"]
    assert [entry["status"] for entry in api] == [401, 401, 401, 302, 302]
    assert [entry["status"] for entry in presigned] == [200, 200]
    assert api[-1]["headers"]["authorization"] == f"token {TOKEN}"
    assert all("authorization" not in entry["headers"] for entry in presigned)


async def test_a_leaking_client_is_caught_by_the_log(dandi: LatencyProxy) -> None:
    """The assertion above can fail: sending the token to the presigned URL shows in the log."""
    async with aiohttp.ClientSession() as session:
        location = await _location(
            session, dandi.asset_download_url("closed-asset"), Authorization=f"token {TOKEN}"
        )
        leak = {"Authorization": f"token {TOKEN}"}
        async with session.get(location, headers=leak) as response:
            await response.read()
    presigned = [entry for entry in dandi.log if entry["route"] == "presigned"]
    assert presigned[0]["headers"]["authorization"] == f"token {TOKEN}"


async def test_unknown_asset_is_404(dandi: LatencyProxy) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(dandi.asset_download_url("nope"), allow_redirects=False) as r:
            assert r.status == 404
        async with session.get(dandi.asset_metadata_url("nope")) as response:
            assert response.status == 404


async def test_faults_can_target_the_presigned_route(dandi: LatencyProxy) -> None:
    dandi.fail_next(1, "503", path=r"^/presigned/")
    dandi.fail_next(1, "429", path=r"^/api/", retry_after=2)
    async with aiohttp.ClientSession() as session:
        url = dandi.asset_download_url("open-asset")
        async with session.get(url, allow_redirects=False) as response:
            assert response.status == 429
            assert response.headers["Retry-After"] == "2"
        location = await _location(session, url)
        async with session.get(location) as response:
            assert response.status == 503
        async with session.get(location) as response:
            assert response.status == 200
    faults = [(entry["route"], entry["fault"]) for entry in dandi.log]
    assert faults == [("api", "429"), ("api", None), ("presigned", "503"), ("presigned", None)]


async def test_api_answers_cors_preflight_for_browsers(dandi: LatencyProxy) -> None:
    preflight = {
        "Origin": "http://page.test",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization",
    }
    url = dandi.asset_download_url("closed-asset")
    async with aiohttp.ClientSession() as session:
        async with session.options(url, headers=preflight) as response:
            assert response.status == 204
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert "authorization" in response.headers["Access-Control-Allow-Headers"].lower()
        async with session.get(url, allow_redirects=False) as response:
            assert response.headers["Access-Control-Allow-Origin"] == "*"
