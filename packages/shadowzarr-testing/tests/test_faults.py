"""Every fault kind of the proxy, as an aiohttp client experiences it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
import pytest

from shadowzarr_testing import FaultRule
from shadowzarr_testing.faults import parse_single_range

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from shadowzarr_testing import LatencyProxy, NginxServer
    from shadowzarr_testing.plugin import MakeProxy

pytestmark = pytest.mark.network

PAYLOAD = bytes(range(256)) * 256  # 64 KiB
RANGE = {"Range": "bytes=1000-1099"}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    # A fresh connection per request: aiohttp silently retries a request whose reused
    # keep-alive connection was reset, which would hide the injected reset.
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as client:
        yield client


@pytest.fixture
def served(nginx: NginxServer) -> NginxServer:
    nginx.write_file("f/a.bin", PAYLOAD)
    nginx.write_file("g/b.bin", PAYLOAD)
    return nginx


async def _status(session: aiohttp.ClientSession, url: str) -> int:
    async with session.get(url) as response:
        await response.read()
        return response.status


async def test_reset_drops_the_connection(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    # aiohttp retries an idempotent request once after a dropped connection (RFC 9112 9.3.1),
    # so one reset is invisible to it and two make it fail.
    proxy.fail_next(1, "reset")
    assert await _status(session, proxy.url("f/a.bin")) == 200
    proxy.fail_next(2, "reset")
    with pytest.raises(aiohttp.ClientConnectionError):
        await _status(session, proxy.url("f/a.bin"))
    assert [(entry["fault"], entry["status"]) for entry in proxy.log] == [
        ("reset", None),
        (None, 200),
        ("reset", None),
        ("reset", None),
    ]
    assert served.count() == 1  # reset requests never reached nginx


@pytest.mark.parametrize("kind", ["500", "503"])
async def test_server_errors(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession, kind: str
) -> None:
    proxy.fail_next(1, kind)  # type: ignore[arg-type]
    assert await _status(session, proxy.url("f/a.bin")) == int(kind)
    assert await _status(session, proxy.url("f/a.bin")) == 200


async def test_429_carries_retry_after(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail_next(1, "429", retry_after=7)
    async with session.get(proxy.url("f/a.bin")) as response:
        assert response.status == 429
        assert response.headers["Retry-After"] == "7"


async def test_truncate_sends_less_than_content_length(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail_next(1, "truncate")
    async with session.get(proxy.url("f/a.bin")) as response:
        assert response.status == 200
        assert response.content_length == len(PAYLOAD)
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.read()
    proxy.fail_next(1, "truncate", after_bytes=10)
    async with session.get(proxy.url("f/a.bin"), headers=RANGE) as response:
        assert response.status == 206
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.read()
    assert [entry["bytes"] for entry in proxy.log] == [len(PAYLOAD) // 2, 10]


async def test_stall_outlasts_the_client_timeout(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail_next(1, "stall")
    with pytest.raises(TimeoutError):
        await session.get(proxy.url("f/a.bin"), timeout=aiohttp.ClientTimeout(total=0.3))
    proxy.fail_next(1, "stall", after_bytes=100)
    async with session.get(
        proxy.url("f/a.bin"), timeout=aiohttp.ClientTimeout(sock_read=0.3)
    ) as response:
        assert response.status == 200
        assert await response.content.readexactly(100) == PAYLOAD[:100]
        with pytest.raises(TimeoutError):
            await response.read()
    assert await _status(session, proxy.url("f/a.bin")) == 200


async def test_ignore_range_answers_the_whole_file(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail_next(1, "ignore_range")
    async with session.get(proxy.url("f/a.bin"), headers=RANGE) as response:
        assert response.status == 200
        assert "Content-Range" not in response.headers
        assert await response.read() == PAYLOAD
    assert served.entries()[0].range == ""


@pytest.mark.parametrize(("honest", "claimed"), [(False, "1000-1099"), (True, "1005-1104")])
async def test_wrong_range_sends_shifted_bytes(
    served: NginxServer,
    proxy: LatencyProxy,
    session: aiohttp.ClientSession,
    honest: bool,
    claimed: str,
) -> None:
    proxy.fail_next(1, "wrong_range", shift=5, honest=honest)
    async with session.get(proxy.url("f/a.bin"), headers=RANGE) as response:
        assert response.status == 206
        assert response.headers["Content-Range"] == f"bytes {claimed}/{len(PAYLOAD)}"
        assert await response.read() == PAYLOAD[1005:1105]


async def test_range_faults_leave_unranged_requests_alone(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail_next(1, "wrong_range")
    assert await _status(session, proxy.url("f/a.bin")) == 200  # no Range: not consumed
    async with session.get(proxy.url("f/a.bin"), headers={"Range": "bytes=-10"}) as response:
        assert await response.read() == PAYLOAD[-10:]  # a suffix range: not consumed either
    async with session.get(proxy.url("f/a.bin"), headers=RANGE) as response:
        assert await response.read() != PAYLOAD[1000:1100]
    assert [entry["fault"] for entry in proxy.log] == [None, None, "wrong_range"]


async def test_fail_next_n_then_recover(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail_next(2, "503")
    statuses = [await _status(session, proxy.url("f/a.bin")) for _ in range(4)]
    assert statuses == [503, 503, 200, 200]
    assert proxy.faults is None  # the plan was extended, not replaced


async def test_fail_matching_a_path_only(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail_matching(r"^/g/", "500")
    assert await _status(session, proxy.url("g/b.bin")) == 500
    assert await _status(session, proxy.url("f/a.bin")) == 200
    assert await _status(session, proxy.url("g/b.bin")) == 500
    proxy.clear_faults()
    assert await _status(session, proxy.url("g/b.bin")) == 200


async def test_rule_list_with_method_filter(
    served: NginxServer, proxy: LatencyProxy, session: aiohttp.ClientSession
) -> None:
    proxy.faults = [FaultRule("503", method="HEAD")]
    async with session.head(proxy.url("f/a.bin")) as response:
        assert response.status == 503
    assert await _status(session, proxy.url("f/a.bin")) == 200


async def test_probability_is_deterministic_with_a_seed(
    served: NginxServer, make_proxy: MakeProxy, session: aiohttp.ClientSession
) -> None:
    async def statuses(seed: int) -> list[int]:
        flaky = make_proxy(faults=0.5, fault_kinds=["500", "503", "429"], seed=seed)
        return [await _status(session, flaky.url("f/a.bin")) for _ in range(16)]

    first = await statuses(seed=3)
    assert first == await statuses(seed=3)
    assert first != await statuses(seed=4)
    assert 200 in first
    assert set(first) - {200}
    assert set(first) <= {200, 429, 500, 503}


@pytest.mark.parametrize(
    ("header", "parsed"),
    [
        ("bytes=0-99", (0, 99)),
        ("bytes=5-", (5, None)),
        (" bytes=7-7 ", (7, 7)),
        ("bytes=-5", None),
        ("bytes=0-1,4-5", None),
        ("items=0-1", None),
        (None, None),
    ],
)
def test_parse_single_range(header: str | None, parsed: tuple[int, int | None] | None) -> None:
    assert parse_single_range(header) == parsed


def test_rule_validation() -> None:
    with pytest.raises(ValueError, match="kind"):
        FaultRule("teapot")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="probability"):
        FaultRule("500", probability=1.5)
    with pytest.raises(ValueError, match="times"):
        FaultRule("500", times=-1)
