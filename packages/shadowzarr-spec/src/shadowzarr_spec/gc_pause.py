"""paused_gc: no cyclic garbage collection while the objects of a large reference file are made.

Parsing or writing a file that lists 10**6 chunks makes millions of lists, strings and integers,
none of them in a cycle. Each few hundred allocations the collector runs, and every so often it
walks every object alive: half the time of opening such a file went to it. While paused,
objects are still freed by reference counting; only cycle detection waits.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the collector for the block; turn it back on only if it was on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
