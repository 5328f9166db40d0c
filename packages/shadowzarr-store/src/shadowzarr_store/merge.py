"""Merging reads of nearby byte ranges that zarr asks for at the same time, per event loop.

zarr hands a store independent ``get`` calls, up to ``async.concurrency`` at once, all on one
loop. Each small read is parked in this loop's queue; the queue is flushed on the next tick (or
after ``merge_window`` seconds, or at once when it holds ``async.concurrency`` reads, since zarr
sends no more until one completes). A flush groups reads by URL, sorts them and joins neighbours
while the gap is at most ``merge_gap`` and the span at most ``max_merge_size``; each run costs one
request and each member gets a zero-copy slice of it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING

import zarr
from shadowzarr_spec import SourceError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from shadowzarr_store.options import StoreOptions
    from shadowzarr_store.stats import StoreStats

__all__ = ["RangeMerger", "plan_runs"]

type Fetch = Callable[[str, int, int], Awaitable[bytes]]


@dataclass(frozen=True, slots=True)
class _Pending:
    url: str
    start: int
    end: int
    future: asyncio.Future[bytes | memoryview]


def plan_runs[T: _Pending](reads: list[T], merge_gap: int, max_merge_size: int) -> list[list[T]]:
    """Group reads of one URL (sorted by start) into runs that one request can serve."""
    runs: list[list[T]] = []
    run_start = run_end = 0
    for read in reads:
        if (
            runs
            and read.start - run_end <= merge_gap
            and max(run_end, read.end) - run_start <= max_merge_size
        ):
            runs[-1].append(read)
            run_end = max(run_end, read.end)
        else:
            runs.append([read])
            run_start, run_end = read.start, read.end
    return runs


class RangeMerger:
    """The merge queue of one event loop (never shared between loops: futures are loop-bound)."""

    def __init__(self, fetch: Fetch, options: StoreOptions, stats: StoreStats) -> None:
        self._fetch = fetch
        self._options = options
        self._stats = stats
        self._pending: list[_Pending] = []
        self._handle: asyncio.Handle | asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def eligible(self, start: int, end: int) -> bool:
        options = self._options
        return options.max_merge_size > 0 and 0 < end - start <= options.merge_below

    async def read(self, url: str, start: int, end: int) -> bytes | memoryview:
        """Bytes ``[start, end)`` of ``url``, possibly as a slice of a merged request."""
        if not self.eligible(start, end):
            return await self._fetch(url, start, end)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes | memoryview] = loop.create_future()
        self._pending.append(_Pending(url, start, end, future))
        if len(self._pending) >= int(zarr.config.get("async.concurrency")):
            self._flush()
        elif self._handle is None:
            window = self._options.merge_window
            self._handle = (
                loop.call_later(window, self._flush) if window > 0 else loop.call_soon(self._flush)
            )
        return await future

    def _flush(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        pending, self._pending = self._pending, []
        pending.sort(key=lambda read: (read.url, read.start))
        for _, group in groupby(pending, key=lambda read: read.url):
            reads = list(group)
            for run in plan_runs(reads, self._options.merge_gap, self._options.max_merge_size):
                task = asyncio.get_running_loop().create_task(self._serve(run))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _serve(self, run: list[_Pending]) -> None:
        if len(run) == 1:
            await self._serve_single(run[0])
            return
        start = run[0].start
        end = max(read.end for read in run)
        try:
            data = await self._fetch(run[0].url, start, end)
        except SourceError:
            # One bad member must not fail its neighbours: try each on its own.
            await asyncio.gather(*(self._serve_single(read) for read in run))
            return
        except BaseException as exc:
            for read in run:
                _fail(read.future, exc)
            raise
        self._stats.add(merged_requests=1, merged_chunks=len(run))
        view = memoryview(data)
        for read in run:
            if not read.future.done():
                read.future.set_result(view[read.start - start : read.end - start])

    async def _serve_single(self, read: _Pending) -> None:
        try:
            data = await self._fetch(read.url, read.start, read.end)
        except BaseException as exc:
            _fail(read.future, exc)
            if not isinstance(exc, Exception):
                raise
            return
        if not read.future.done():
            read.future.set_result(data)


def _fail(future: asyncio.Future[bytes | memoryview], exc: BaseException) -> None:
    if future.done():
        return
    if isinstance(exc, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(exc)
