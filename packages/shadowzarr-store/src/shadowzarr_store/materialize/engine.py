"""Copy regions from a reference-backed array into an ordinary Zarr array, a few at a time.

Reads and writes go through zarr's async API with a bounded number of regions in flight, so
memory stays at about ``concurrency`` destination chunks whatever the array's size.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any

import numpy as np
from zarr.core.array import AsyncArray

__all__ = ["copy_regions", "for_each", "region_equal", "verify_regions"]


async def copy_regions(
    source: AsyncArray,  # type: ignore[type-arg]
    destination: AsyncArray,  # type: ignore[type-arg]
    regions: Sequence[tuple[slice, ...]],
    indices: Iterable[int],
    *,
    concurrency: int = 8,
    on_done: Callable[[int], Awaitable[None]] | None = None,
) -> None:
    """Copy ``regions[i]`` for each i in ``indices``; call ``on_done(i)`` after each write.

    ``concurrency`` workers pull regions from one queue, so memory and tasks stay bounded however
    many regions there are; the first failure cancels the other workers before it is raised.
    """
    pending = iter(indices)

    async def worker() -> None:
        for index in pending:
            region = regions[index]
            values = await source.getitem(region)
            await destination.setitem(region, values)
            if on_done is not None:
                await on_done(index)

    await _run_workers([worker() for _ in range(max(1, concurrency))])


async def for_each[T](
    items: AsyncIterator[T],
    work: Callable[[T], Awaitable[None]],
    *,
    concurrency: int = 8,
) -> None:
    """``work(item)`` for every item, ``concurrency`` at a time, pulling items as they are
    needed: a lazy listing of millions of keys is never held in memory or turned into tasks all
    at once; the first failure cancels the other workers before it is raised."""
    lock = asyncio.Lock()

    async def worker() -> None:
        while True:
            async with lock:
                try:
                    item = await anext(items)
                except StopAsyncIteration:
                    return
            await work(item)

    await _run_workers([worker() for _ in range(max(1, concurrency))])


async def _run_workers(coroutines: list[Coroutine[Any, Any, None]]) -> None:
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    done, running = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running)
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


async def verify_regions(
    source: AsyncArray,  # type: ignore[type-arg]
    destination: AsyncArray,  # type: ignore[type-arg]
    regions: Sequence[tuple[slice, ...]],
    *,
    concurrency: int = 8,
    on_done: Callable[[tuple[slice, ...]], None] | None = None,
) -> list[tuple[slice, ...]]:
    """The regions whose values differ between source and destination (``concurrency`` at a
    time, pulled from the sequence as needed); ``on_done(region)`` after each comparison."""
    mismatches: list[tuple[slice, ...]] = []
    pending = iter(regions)

    async def worker() -> None:
        for region in pending:
            expected, got = await asyncio.gather(
                source.getitem(region), destination.getitem(region)
            )
            if not region_equal(np.asarray(expected), np.asarray(got)):
                mismatches.append(region)
            if on_done is not None:
                on_done(region)

    await _run_workers([worker() for _ in range(max(1, concurrency))])
    return mismatches


def region_equal(expected: np.ndarray, got: np.ndarray) -> bool:
    """Exact equality: same shape and bytes, NaN equal to NaN (of the same bits)."""
    if expected.shape != got.shape:
        return False
    if expected.dtype.kind in "OT" or got.dtype.kind in "OT":
        return bool(np.array_equal(expected, got))
    native = expected.dtype.newbyteorder("=") if expected.dtype.fields is None else expected.dtype
    return (
        np.ascontiguousarray(expected.astype(native)).tobytes()
        == np.ascontiguousarray(got.astype(native)).tobytes()
    )
