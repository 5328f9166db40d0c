"""Merging reads of nearby byte ranges that zarr asks for at the same time, per event loop.

zarr hands a store independent ``get`` calls, up to ``async.concurrency`` at once, all on one
loop. Each read (of any size up to ``max_merge_size``, or ``merge_below`` if set) is parked in
this loop's queue; the queue is flushed on the next tick (or after ``merge_window`` seconds, or at
once when it holds ``async.concurrency`` reads, since zarr sends no more until one completes). A
flush groups reads by URL, sorts them and joins neighbours while the gap is at most ``merge_gap``
and the span at most ``max_merge_size``; each run costs one request and each member gets a
zero-copy slice of it. Runs are sent at once, so a large read still goes out as several requests
in parallel (a wave of 64 chunks of 256 KiB is two 8 MiB requests).

When zarr is throttled (``async.concurrency`` reads outstanding, more waiting behind them), all
members of a run finish together and zarr then sends the rest a whole round trip later. So a
throttled run of at least ``2 * HEAD_START_BYTES`` is split: a quarter of it goes first as its own
request, finishes early, and frees zarr's slots while the rest still streams. Only zarr's own
reads count: the store's gathered reads (a shard's stored chunks, `gathered_reads`) all finish
before the read that asked for them does, so splitting them only doubled the requests (20
instead of 10 for the sequential read of issue 25, 12 ms slower at hand, paired).
"""

from __future__ import annotations

import asyncio
import contextlib
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Protocol

import zarr
from shadowzarr_spec import SourceError

from shadowzarr_store.transport.coalesce import coalesce

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    from shadowzarr_store.options import StoreOptions
    from shadowzarr_store.transport.stats import StoreStats

__all__ = [
    "HEAD_START_BYTES",
    "RangeMerger",
    "Span",
    "bounded_gaps",
    "gathered_reads",
    "head_start",
    "plan_runs",
]

HEAD_START_BYTES = 1024 * 1024
"""Throttled runs of at least twice this many bytes are split into a head start and the rest."""

type Fetch = Callable[[str, int, int], Awaitable[bytes | memoryview]]

_GATHERED: ContextVar[bool] = ContextVar("shadowzarr_gathered_reads", default=False)
_GAP: ContextVar[int | None] = ContextVar("shadowzarr_bounded_gaps", default=None)


@contextlib.contextmanager
def gathered_reads() -> Iterator[None]:
    """Reads started inside (and in tasks created inside) are issued together by the store
    itself, not throttled by zarr: the queue waits for all of them (the next tick) instead of
    flushing early at ``async.concurrency`` reads."""
    token = _GATHERED.set(True)
    try:
        yield
    finally:
        _GATHERED.reset(token)


@contextlib.contextmanager
def bounded_gaps(allowance: int) -> Iterator[None]:
    """Reads started inside join their neighbours only while the gaps joined stay within a
    budget: three times the bytes of these reads plus ``allowance`` bytes each, smallest gaps
    first (a sparse selection's reads, whose bytes must stay in proportion to what it touches,
    not to the gaps between). Reads of one flush share the budget."""
    token = _GAP.set(allowance)
    try:
        yield
    finally:
        _GAP.reset(token)


class Span(Protocol):
    """A read the planner can group: bytes ``[start, end)`` (of one URL, grouped by the caller)."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True, slots=True)
class _Pending:
    url: str
    start: int
    end: int
    future: asyncio.Future[bytes | memoryview]
    gap: int | None = None
    """This read's allowance of gap bytes (`bounded_gaps`; None: any gap up to the store's
    ``merge_gap``)."""


def plan_runs[T: Span](reads: list[T], merge_gap: int, max_merge_size: int) -> list[list[T]]:
    """Group reads of one URL into runs that one request can serve (the transport's rule)."""
    runs = coalesce([(read.start, read.end) for read in reads], merge_gap, max_merge_size)
    return [[reads[i] for i in run.members] for run in runs]


def head_start[T: Span](run: list[T], min_bytes: int = HEAD_START_BYTES) -> list[list[T]]:
    """``run`` as [head, rest]: the shortest prefix spanning a quarter of it goes first.

    Runs shorter than ``2 * min_bytes`` or of one member stay whole."""
    start, end = run[0].start, max(read.end for read in run)
    if len(run) < 2 or end - start < 2 * min_bytes:
        return [run]
    quarter = start + (end - start) // 4
    cut = 1
    while cut < len(run) - 1 and run[cut - 1].end < quarter:
        cut += 1
    return [run[:cut], run[cut:]]


class RangeMerger:
    """The merge queue of one event loop (never shared between loops: futures are loop-bound)."""

    def __init__(self, fetch: Fetch, options: StoreOptions, stats: StoreStats) -> None:
        self._fetch = fetch
        self._options = options
        self._stats = stats
        self._pending: list[_Pending] = []
        self._handle: asyncio.Handle | asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._outstanding = 0

    @property
    def options(self) -> StoreOptions:
        """The merge settings (gap, sizes, window) this queue follows."""
        return self._options

    def eligible(self, start: int, end: int) -> bool:
        options = self._options
        below = options.max_merge_size if options.merge_below is None else options.merge_below
        return options.max_merge_size > 0 and 0 < end - start <= below

    async def read(self, url: str, start: int, end: int) -> bytes | memoryview:
        """Bytes ``[start, end)`` of ``url``, possibly as a slice of a merged request."""
        if not self.eligible(start, end):
            return await self._fetch(url, start, end)
        future = self._park(url, start, end)
        self._schedule()
        return await future

    async def read_many(
        self, url: str, spans: Sequence[tuple[int, int]]
    ) -> list[bytes | memoryview]:
        """`read` of each of ``spans`` of ``url``, parked together: one future per range and no
        task (a shard's stored chunks come in tens of ranges, each a task's worth of Python
        before the first request could leave)."""
        if not all(self.eligible(start, end) for start, end in spans):
            return list(await asyncio.gather(*(self.read(url, a, b) for a, b in spans)))
        futures = [self._park(url, start, end) for start, end in spans]
        self._schedule()
        return list(await asyncio.gather(*futures))

    def _park(self, url: str, start: int, end: int) -> asyncio.Future[bytes | memoryview]:
        future: asyncio.Future[bytes | memoryview] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(url, start, end, future, _GAP.get()))
        if not _GATHERED.get():
            # only zarr's own reads hold its slots: the store's gathered reads (a shard's
            # stored chunks) finish together whatever goes first, so they never throttle
            self._outstanding += 1
            future.add_done_callback(self._finished)
        return future

    def _schedule(self) -> None:
        """Flush at once when zarr is throttled on the parked reads, else on the next tick."""
        if not _GATHERED.get() and len(self._pending) >= int(zarr.config.get("async.concurrency")):
            self._flush()
        elif self._handle is None:
            loop = asyncio.get_running_loop()
            window = self._options.merge_window
            self._handle = (
                loop.call_later(window, self._flush) if window > 0 else loop.call_soon(self._flush)
            )

    def _finished(self, _: asyncio.Future[bytes | memoryview]) -> None:
        self._outstanding -= 1

    def _flush(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        pending, self._pending = self._pending, []
        throttled = self._outstanding >= int(zarr.config.get("async.concurrency"))
        pending.sort(key=lambda read: (read.url, read.start))
        for _, group in groupby(pending, key=lambda read: read.url):
            reads = list(group)
            for run in _plan_pending(reads, self._options.merge_gap, self._options.max_merge_size):
                for piece in head_start(run) if throttled else [run]:
                    task = asyncio.get_running_loop().create_task(self._serve(piece))
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


def _plan_pending(reads: list[_Pending], merge_gap: int, max_size: int) -> list[list[_Pending]]:
    """`plan_runs` of parked reads (sorted by start). Where a read is bounded
    (`bounded_gaps`), the gaps next to it are joined smallest first while the bytes of all
    joined gaps stay within the budget of the bounded reads: three times their bytes plus
    their allowance each."""
    if all(read.gap is None for read in reads):
        return plan_runs(reads, merge_gap, max_size)
    budget = sum(3 * (r.end - r.start) + r.gap for r in reads if r.gap is not None)
    joins = [False] * len(reads)  # joins[i]: read i joins the run of read i - 1
    bounded: list[tuple[int, int]] = []  # (gap, i)
    end = 0
    for i, read in enumerate(reads):
        gap = read.start - end
        if i and gap <= merge_gap:
            if gap <= 0 or (read.gap is None and reads[i - 1].gap is None):
                joins[i] = True
            else:
                bounded.append((gap, i))
        end = max(end, read.end) if i else read.end
    for gap, i in sorted(bounded):
        if gap > budget:
            break
        budget -= gap
        joins[i] = True
    runs: list[list[_Pending]] = []
    start = end = 0
    for read, join in zip(reads, joins, strict=True):
        if runs and join and max(end, read.end) - start <= max_size:
            runs[-1].append(read)
            end = max(end, read.end)
            continue
        runs.append([read])
        start, end = read.start, read.end
    return runs


def _fail(future: asyncio.Future[bytes | memoryview], exc: BaseException) -> None:
    if future.done():
        return
    if isinstance(exc, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(exc)
