"""The connections of one event loop across all origins: at most so many open at once.

Each origin's `OriginPool` bounds its own connections; thousands of chunks spread over many
origins would still open that bound per origin. Every connection holds a slot of the loop's
`ConnectionBudget` while it is open (idle or busy). A pool that needs a connection when none is
free closes another pool's idle one; if none is idle it waits, and a pool ending a request while
someone waits closes its connection rather than keeping it idle.

Callers sharing the loop's pools may ask for different totals. The budget holds the largest
asked for, and each caller's own total bounds its requests out at once over all origins
(`out`, counting every caller's), so a caller alone never opens more connections than it
asked for, whichever caller came first.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from shadowzarr_store.transport.slots import Slots

__all__ = ["ConnectionBudget"]


class _Pool(Protocol):
    def drop_idle(self) -> bool:
        """Close one idle connection (releasing its slot); False when none is idle."""
        ...


class ConnectionBudget:
    """Slots for the connections of one loop (`asyncio` objects: one budget per loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._slots = asyncio.Semaphore(limit)
        self._waiting = 0
        self.pools: list[_Pool] = []
        self.out = Slots()
        """Requests out on the loop's pools, each caller bounded by its own total."""

    def grow(self, limit: int) -> None:
        """Hold at least ``limit`` connections (a caller asked for more than the others)."""
        for _ in range(limit - self.limit):
            self._slots.release()
        self.limit = max(self.limit, limit)

    @property
    def wanted(self) -> bool:
        """Whether a pool waits for a slot (a connection done with goes, not idle)."""
        return self._waiting > 0

    async def acquire(self) -> None:
        """A slot for a new connection: a free one, one freed by closing an idle connection of
        any pool, or the next one released."""
        if self._slots.locked():
            for pool in self.pools:
                if pool.drop_idle():
                    break
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1

    def release(self) -> None:
        self._slots.release()
