"""zarr's worker threads started, and malloc readied for their buffers, when a store opens.

A read's CPU work (decoding packs, checking chunks, local files) runs in the default thread pool
of zarr's event loop (``asyncio.to_thread``). In a fresh process that pool is empty, and the
first read started its threads (4-5 on two cores). `start_workers` submits, from zarr's loop,
one task per worker the pool may have, each held at a barrier until all have a thread (an idle
worker would otherwise take the next task and start none), so the first read starts no thread. Each
task also allocates and frees a buffer the size of a decoded pack twice, never writing it (no
page is mapped): the first free raises malloc's mmap threshold, so the read's pack buffers come
from the thread's arena and are reused rather than fresh pages each time. It does not wait:
`open_rfs` returns while the threads start. ``SHADOWZARR_WARM_WORKERS=0`` turns it off.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import zarr

__all__ = ["WARM_BYTES", "pool_size", "start_workers"]

WARM_BYTES = 4 << 20
"""Bytes each worker allocates and frees (a grouped view's pack decodes to about 4 MiB)."""

_BARRIER_SECONDS = 0.25
"""How long a task waits for the others (workers busy with reads: the rest go on, and no read
waits long behind a task holding an idle worker)."""

_warmed: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_lock = threading.Lock()


def _forget_after_fork() -> None:
    """A forked child has a new zarr loop, and none of its parent's threads."""
    global _lock, _warmed
    _lock, _warmed = threading.Lock(), weakref.WeakSet()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def pool_size() -> int:
    """Workers of asyncio's default pool (`ThreadPoolExecutor`'s default), the pool
    ``asyncio.to_thread`` uses on zarr's loop."""
    return min(32, (os.cpu_count() or 1) + 4)


def start_workers() -> bool:
    """Start zarr's event loop (if not yet) and, once per loop, its default pool's workers,
    without waiting for them; returns whether this call started them. Not when
    ``SHADOWZARR_WARM_WORKERS=0`` is in the environment. With zarr's ``threading.max_workers``
    set, the pool is zarr's own (made here as zarr makes it at its first call)."""
    if os.environ.get("SHADOWZARR_WARM_WORKERS") == "0":
        return False
    from zarr.core import sync

    # zarr's loop and pool are private names: a zarr that moved them leaves the workers to the
    # first read, as before.
    get_loop = getattr(sync, "_get_loop", None)
    get_executor = getattr(sync, "_get_executor", None)
    if get_loop is None or get_executor is None:
        return False
    loop = get_loop()
    if zarr.config.get("threading.max_workers", None) is not None:
        get_executor()  # zarr's pool, the loop's default: not one of ours it replaces
    with _lock:
        if loop in _warmed or loop.is_closed():
            return False
        _warmed.add(loop)
    loop.call_soon_threadsafe(_submit, loop)
    return True


def _submit(loop: asyncio.AbstractEventLoop) -> None:
    """On the loop's thread: as many tasks as the pool has workers, held at a barrier until
    all have a thread (an idle worker would otherwise take the next task, and start none)."""
    executor = getattr(loop, "_default_executor", None)
    if executor is None:
        executor = ThreadPoolExecutor(thread_name_prefix="asyncio")
        loop.set_default_executor(executor)
    workers = getattr(executor, "_max_workers", pool_size())
    barrier = threading.Barrier(workers)
    try:
        for _ in range(workers):
            loop.run_in_executor(None, _warm, barrier)
    except RuntimeError:
        barrier.abort()  # the pool was shut down (the interpreter is exiting): nothing to start


def _warm(barrier: threading.Barrier) -> None:
    with contextlib.suppress(MemoryError):  # a read will say so, if it comes to that
        for _ in range(2):  # the first raises malloc's mmap threshold, the second: the arena's
            buffer = np.empty(WARM_BYTES, dtype=np.uint8)  # never written: no page is mapped
            del buffer
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait(_BARRIER_SECONDS)  # broken: some workers were busy with reads
