"""A host name is looked up once for a burst of connections, not once per connection.

asyncio resolves the host of every ``create_connection`` in the default executor, whose few
threads also rearrange packs; a cold read from S3 opening tens of connections made tens of
lookups. The pool keeps a name's addresses for `ADDRESSES_KEPT_SECONDS`. Lookups and connections
are counted on the running loop, around its real ``getaddrinfo`` and ``create_connection``; the
bytes come from nginx.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

import pytest
from yarl import URL

from shadowzarr_store.transport import http1
from shadowzarr_store.transport.http1 import OriginPool

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

PIECE = 64 * 1024
PIECES = 20


def _count_calls(loop: asyncio.AbstractEventLoop, name: str) -> list[Any]:
    calls: list[Any] = []
    real = getattr(loop, name)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[:2] if name == "getaddrinfo" else args[1:3])
        return await real(*args, **kwargs)

    setattr(loop, name, counted)
    return calls


async def _read_pieces(pool: OriginPool, address: URL) -> list[bytes]:
    async def piece(i: int) -> bytes:
        head = pool.head(address, {"Range": f"bytes={i * PIECE}-{(i + 1) * PIECE - 1}"}, "piece")
        answer, body = await pool.request(head, str(address))
        assert answer.status == 206
        return bytes(body)

    try:
        return await asyncio.gather(*(piece(i) for i in range(PIECES)))
    finally:
        pool.close()


@pytest.mark.network
async def test_a_burst_of_connections_to_a_name_makes_one_lookup(
    nginx: NginxServer, nginx_root: Path
) -> None:
    data = os.urandom(PIECE * PIECES)
    (nginx_root / "data.bin").write_bytes(data)
    loop = asyncio.get_running_loop()
    lookups = _count_calls(loop, "getaddrinfo")
    connections = _count_calls(loop, "create_connection")
    address = URL(f"http://localhost:{nginx.port}/data.bin")
    pieces = await _read_pieces(OriginPool(address, limit=64, timeout=10), address)
    assert b"".join(pieces) == data
    assert len(connections) == PIECES  # every request on its own connection, all at once
    assert {host for host, _ in connections} == {"127.0.0.1"}  # the address, not the name
    assert lookups == [("localhost", nginx.port)]


@pytest.mark.network
async def test_an_address_needs_no_lookup_and_kept_addresses_expire(
    nginx: NginxServer, nginx_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(PIECE * PIECES)
    (nginx_root / "data.bin").write_bytes(data)
    loop = asyncio.get_running_loop()
    lookups = _count_calls(loop, "getaddrinfo")
    address = URL(f"http://127.0.0.1:{nginx.port}/data.bin")
    assert b"".join(await _read_pieces(OriginPool(address, limit=64, timeout=10), address)) == data
    assert lookups == []
    monkeypatch.setattr(http1, "ADDRESSES_KEPT_SECONDS", 0.0)  # every connection looks again
    named = URL(f"http://localhost:{nginx.port}/data.bin")
    assert b"".join(await _read_pieces(OriginPool(named, limit=64, timeout=10), named)) == data
    assert len(lookups) == PIECES
