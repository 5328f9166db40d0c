"""One bandwidth budget shared by every connection of the proxy."""

from __future__ import annotations

import asyncio

__all__ = ["Throttle"]

#: How far behind schedule a sender may be before the lost time is forgiven. It bounds the burst
#: an idle link allows (slack x rate bytes) while absorbing the event loop's sleep overshoot.
_SLACK_SECONDS = 0.02


class Throttle:
    """A virtual clock: each piece of ``n`` bytes books ``n / rate`` seconds of the link.

    Connections take turns on the same clock, so the total throughput of all of them is capped,
    as on a real shared link. Lives on the proxy's event loop thread only.
    """

    def __init__(self) -> None:
        self._link_free_at = 0.0

    async def spend(self, nbytes: int, rate: float | None) -> None:
        delay = self.book(nbytes, rate, asyncio.get_running_loop().time())
        if delay > 0:
            await asyncio.sleep(delay)

    def book(self, nbytes: int, rate: float | None, now: float) -> float:
        """Book ``nbytes`` on the link at ``now`` (the loop's clock); return the seconds to
        wait before sending them (0 or less: at once)."""
        if rate is None or nbytes <= 0:
            return 0.0
        start = max(self._link_free_at, now - _SLACK_SECONDS)
        self._link_free_at = start + nbytes / rate
        return self._link_free_at - now
