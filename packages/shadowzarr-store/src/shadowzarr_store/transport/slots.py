"""Requests out at once, counted over every caller, each caller with a bound of its own.

A pool (and a loop's connection budget) is shared by callers that asked for different bounds:
a store reading with 128 requests per origin and a generation with 256, or a catalog run with
16 connections in all. Each caller's bound applies to its own requests, counted against
everyone's: a request goes when fewer than its caller's bound are out, so a caller alone never
has more out than it asked for, whichever caller made the pool.
"""

from __future__ import annotations

import asyncio

__all__ = ["Slots"]


class Slots:
    """``busy`` requests out now; those that wait, in order, each with its caller's bound.

    The taker checks ``busy < bound`` itself and counts its request with ``busy += 1`` before it
    awaits anything (the common case costs no coroutine); `wait` when the check fails;
    `release` when the request is over."""

    __slots__ = ("_waiting", "busy")

    def __init__(self) -> None:
        self.busy = 0
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []

    async def wait(self, bound: int) -> None:
        """Until fewer than ``bound`` requests are out (the caller then counts its own)."""
        while self.busy >= bound:
            woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (bound, woken)
            self._waiting.append(entry)
            try:
                await woken
            except BaseException:
                if entry in self._waiting:
                    self._waiting.remove(entry)
                elif woken.done():
                    self._wake()  # woken, then cancelled: the next one may go instead
                raise

    def release(self) -> None:
        """One request is over: wake the first waiting one whose bound lets it go now."""
        self.busy -= 1
        if self._waiting:
            self._wake()

    def _wake(self) -> None:
        for at, (bound, woken) in enumerate(self._waiting):
            if bound > self.busy and not woken.done():
                del self._waiting[at]
                woken.set_result(None)
                return
