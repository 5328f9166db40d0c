"""One connection pool per origin per process, shared by every transport of the process.

Every `open_rfs`, `RfsStore`, generator and `RangeSource` makes a `Transport` of its own; with
pools of their own, 200 stores opened one after another opened 200 connections to one server.
Here the pools live in a registry per event loop (asyncio transports cannot cross loops), and
every HTTP request runs on one loop, the transport's own (`home`: a request awaited on zarr's
loop or a user's is handed to it), so the process has one registry in use and one pool per
origin. A pool is keyed by what a connection is bound to: the origin (scheme, host, port, so
TLS too), the proxy it goes through and the timeout; each caller's per-origin limit applies to
its requests on the shared pool (`OriginPool.request`). Each loop has one `ConnectionBudget`
of connections across origins, as large as the largest total asked for, each caller's total
bounding its own requests, and one aiohttp session per pair of limits. Connections idle for
`IDLE_SECONDS` are closed by their pool. When a loop shuts down (``asyncio.run`` ending) its
pools and sessions are closed on it: an async generator started on the loop is closed by
``loop.shutdown_asyncgens()``, and its ``finally`` closes them. After a fork, the child drops
what it inherited (the sockets are the parent's).

`pool_stats` says, per origin, how many connections were opened, how many are open and idle,
and how many requests they carried.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shadowzarr_store.transport.budget import ConnectionBudget
from shadowzarr_store.transport.http1 import IDLE_SECONDS, OriginPool

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import aiohttp
    from yarl import URL

    from shadowzarr_store.transport.proxies import Proxy

__all__ = ["IDLE_SECONDS", "LoopPools", "OriginStats", "close_all_pools", "pool_stats", "pools"]

type PoolKey = tuple[str, str, int | None, Proxy | None, float]


@dataclass(slots=True)
class LoopPools:
    """The pools, budgets and aiohttp sessions of one event loop (used on that loop only)."""

    origins: dict[PoolKey, OriginPool] = field(default_factory=dict)
    budget: ConnectionBudget | None = None
    sessions: dict[tuple[int, int], aiohttp.ClientSession] = field(default_factory=dict)
    anchor: object = None
    """The async generator whose closing at the loop's shutdown closes these."""
    started: object = None
    """The task that started it (kept: a task only weakly held may be collected)."""

    def pool(
        self, address: URL, proxy: Proxy | None, limit: int, total: int, timeout: float
    ) -> OriginPool:
        """The pool of ``address``'s origin (through ``proxy``) under these limits."""
        budget = self.budget
        if budget is None:
            budget = self.budget = ConnectionBudget(total)
        elif total > budget.limit:
            budget.grow(total)
        key = (address.scheme, address.raw_host or "", address.port, proxy, timeout)
        pool = self.origins.get(key)
        if pool is None:
            pool = self.origins[key] = OriginPool(address, limit, timeout, budget, proxy)
        return pool

    def session(self, limit: int, total: int) -> aiohttp.ClientSession:
        """The aiohttp session for these limits (timeouts and proxies go per request)."""
        session = self.sessions.get((limit, total))
        if session is None or session.closed:
            import aiohttp  # at its first use: a read seldom needs it (see `http._aiohttp`)

            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=total, limit_per_host=limit, keepalive_timeout=IDLE_SECONDS
                ),
                auto_decompress=False,
            )
            self.sessions[(limit, total)] = session
        return session

    async def aclose(self) -> None:
        for pool in self.origins.values():
            pool.close()
        self.origins.clear()
        self.budget = None
        sessions = list(self.sessions.values())
        self.sessions.clear()
        for session in sessions:
            await session.close()


_lock = threading.Lock()
_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopPools] = (
    weakref.WeakKeyDictionary()
)


def pools() -> LoopPools:
    """The registry of the running loop (made at its first use)."""
    loop = asyncio.get_running_loop()
    found = _by_loop.get(loop)
    if found is None:
        with _lock:
            found = _by_loop.setdefault(loop, LoopPools())
        if found.anchor is None:
            anchor = found.anchor = _closed_at_shutdown(found)
            found.started = loop.create_task(anext(anchor))  # type: ignore[arg-type]
    return found


async def _closed_at_shutdown(registry: LoopPools) -> AsyncIterator[None]:
    """Waits at its ``yield`` until the loop's ``shutdown_asyncgens`` closes it."""
    try:
        yield
    finally:
        await registry.aclose()


@dataclass(frozen=True, slots=True)
class OriginStats:
    """The connections of one origin, summed over the process's event loops."""

    opened: int = 0
    """Connections opened since the process (or the child, after a fork) started."""
    open: int = 0
    idle: int = 0
    requests: int = 0


def pool_stats() -> dict[str, OriginStats]:
    """Per origin (``scheme://host:port``, `` via http://proxy:port`` when proxied), the
    connections of our own HTTP/1.1 pools."""
    with _lock:
        registries = list(_by_loop.values())
    totals: dict[str, OriginStats] = {}
    for registry in registries:
        for (scheme, host, port, proxy, _), pool in list(registry.origins.items()):
            shown_host = f"[{host}]" if ":" in host else host
            name = f"{scheme}://{shown_host}:{port}"
            if proxy is not None:
                name += f" via {proxy.shown}"
            seen = totals.get(name, OriginStats())
            totals[name] = OriginStats(
                seen.opened + pool.opened,
                seen.open + pool.open_connections,
                seen.idle + pool.idle_connections,
                seen.requests + pool.requests,
            )
    return totals


def close_all_pools() -> None:
    """Close the pools and sessions of every loop still running (at exit, from outside them)."""
    with _lock:
        registries = list(_by_loop.items())
    for loop, registry in registries:
        if loop.is_closed():
            continue
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is running:
            loop.create_task(registry.aclose())
        elif loop.is_running():
            future = asyncio.run_coroutine_threadsafe(registry.aclose(), loop)
            with contextlib.suppress(TimeoutError, RuntimeError):
                future.result(timeout=5)


def _forget_after_fork() -> None:
    """In a forked child: the parent's loops, sockets and sessions are not ours."""
    global _lock, _by_loop
    _lock = threading.Lock()
    _by_loop = weakref.WeakKeyDictionary()


os.register_at_fork(after_in_child=_forget_after_fork)
