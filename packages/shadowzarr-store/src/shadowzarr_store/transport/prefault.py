"""Fresh buffers' pages faulted in by a helper thread while their bytes are still on the way.

A fresh process has no freed memory to reuse: every large buffer of its first read (an answer's
body, a shard's packed value) is new pages, which the kernel must zero (and a VM's host must
supply) on first touch. Touched by ``recv_into`` or a copy, that work lands on the event loop's
thread, the one that bounds a sequential read; a warm process's allocator hands back pages it
already holds. `populate` hands a buffer to one daemon thread, started when a store opens, that
asks the kernel to map its pages writable (``madvise(MADV_POPULATE_WRITE)``, Linux 5.14) while
the answer's bytes are still arriving or its request is still in flight. Populating writes no
byte, so it may run while the buffer is being written; pages already mapped (a warm process's)
cost nothing. Elsewhere (no such ``madvise``), or with ``SHADOWZARR_PREFAULT=0`` in the
environment, `populate` does nothing.
"""

from __future__ import annotations

import ctypes
import itertools
import mmap
import os
import queue
import sys
import threading
from dataclasses import dataclass

import numpy as np

__all__ = [
    "MIN_BYTES",
    "PrefaultStats",
    "populate",
    "populate_now",
    "prepared",
    "start",
    "stats",
    "supported",
]

MIN_BYTES = 1 << 20
"""Smaller buffers are left to the allocator (their pages are few, or reused)."""

_MADV_POPULATE_WRITE = 23
_PAGE = mmap.PAGESIZE


@dataclass(slots=True)
class PrefaultStats:
    """What the helper thread was given and did (counts, for tests and diagnostics)."""

    submitted: int = 0
    """Buffers handed to the helper thread."""
    prepared: int = 0
    """Of those, bodies made before their request left (`prepared`) ..."""
    received_into: int = 0
    """... and of these, bodies that came as long as asked and went into them."""
    populated: int = 0
    bytes: int = 0
    failed: int = 0
    dropped: int = 0
    """Buffers let go of by everyone else before they were done (not worth mapping)."""
    threads_started: int = 0

    @property
    def pending(self) -> int:
        return self.submitted - self.populated - self.failed - self.dropped


_stats = PrefaultStats()
STEP = 2 << 20
"""Bytes mapped per call (a huge page): between steps a buffer needed sooner goes first."""

type _Job = tuple[int, int, int, np.ndarray]
"""(rank: 0 first, 1 later; order handed over; bytes of it done; the buffer)."""
_jobs: queue.PriorityQueue[_Job] = queue.PriorityQueue()
_order = itertools.count()
_lock = threading.Lock()
_thread: threading.Thread | None = None
_madvise: ctypes._CFuncPtr | None = None  # type: ignore[name-defined]
_supported: bool | None = None


def _forget_after_fork() -> None:
    """A forked child has no helper thread, and a lock or queue its parent held mid-use."""
    global _jobs, _lock, _thread
    _jobs, _lock, _thread = queue.PriorityQueue(), threading.Lock(), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def stats() -> PrefaultStats:
    return _stats


def supported() -> bool:
    """Whether this kernel populates pages on request (probed once, on a page of our own)."""
    global _supported, _madvise
    if _supported is None:
        _supported = False
        if sys.platform.startswith("linux") and os.environ.get("SHADOWZARR_PREFAULT") != "0":
            try:
                call = ctypes.CDLL(None, use_errno=True).madvise  # libc, already loaded
                call.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
                call.restype = ctypes.c_int
                probe = mmap.mmap(-1, _PAGE)
                address = ctypes.addressof(ctypes.c_char.from_buffer(probe))
                _supported = call(address, _PAGE, _MADV_POPULATE_WRITE) == 0
                _madvise = call if _supported else None
                del address
                probe.close()
            except (OSError, AttributeError, BufferError):
                _supported = False
    return _supported


def start() -> bool:
    """Start the helper thread (once per process; again in a forked child). Called when a
    store opens, so a first read does not pay it; returns whether populating is supported."""
    global _thread
    if not supported():
        return False
    if _thread is not None:
        return True
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_work, name="shadowzarr-prefault", daemon=True)
            _thread.start()
            _stats.threads_started += 1
    return True


def populate(buffer: np.ndarray, *, later: bool = False) -> bool:
    """Have ``buffer``'s pages mapped by the helper thread, in the order handed over, those
    needed ``later`` (a shard's value, written once all its bytes are in) after those needed
    first (answers' bodies); returns whether it was handed over (``MIN_BYTES`` or more,
    contiguous, and a kernel that can). The thread holds the buffer until it is done."""
    if buffer.nbytes < MIN_BYTES or not buffer.flags.c_contiguous or not start():
        return False
    _stats.submitted += 1
    _jobs.put((int(later), next(_order), 0, buffer))
    return True


def prepared(nbytes: int | None) -> np.ndarray | None:
    """A fresh buffer of ``nbytes`` whose pages the helper thread maps meanwhile (made when a
    request of that many bytes leaves, so its round trip hides the work), or None: too small
    to be worth it, or populating unsupported (the receiver then allocates as it did)."""
    if nbytes is None or nbytes < MIN_BYTES or not supported():
        return None
    try:
        buffer = np.empty(nbytes, dtype=np.uint8)
    except (MemoryError, ValueError):
        return None  # the receiver's own allocation says what went wrong
    if not populate(buffer):
        return None
    _stats.prepared += 1
    return buffer


def populate_now(buffer: np.ndarray, start: int = 0, stop: int | None = None) -> bool:
    """Map writable, now and in this thread, ``buffer``'s whole pages from byte ``start`` to
    ``stop`` counted from its first whole page (the helper's work, a step at a time; ctypes
    lets go of the GIL meanwhile)."""
    if not supported() or _madvise is None:
        return False
    address = buffer.ctypes.data
    pages = -(-address // _PAGE) * _PAGE  # whole pages inside the buffer only, counted from
    end = address + buffer.nbytes  # its first, so that steps meet
    first = pages + start
    last = min(end, first + (stop - start)) if stop is not None else end
    length = (last - first) // _PAGE * _PAGE
    if length <= 0:
        return True  # no whole page left to map
    return bool(_madvise(first, length, _MADV_POPULATE_WRITE) == 0)


def _work() -> None:
    while True:
        rank, order, done, buffer = _jobs.get()
        if sys.getrefcount(buffer) <= 2:  # ours and the call's: its reader is done with it
            _stats.dropped += 1
        elif not populate_now(buffer, done, done + STEP):
            _stats.failed += 1
        elif done + STEP < buffer.nbytes:
            _jobs.put((rank, order, done + STEP, buffer))  # the rest, after anything sooner
        else:
            _stats.populated += 1
            _stats.bytes += buffer.nbytes
        del buffer
