"""What a `RangeFile` fetches beyond a read: the read-ahead policies, one interface.

A file object over a network pays a round trip for every read its cache cannot answer, and the
libraries that read one (h5py, tifffile) read a few hundred bytes at a time. What to fetch
along with a read depends on the format: HDF5's metadata is spread through the file in runs,
so `GrowingRuns` reads further while misses follow each other (remfile's rule); a TIFF's IFDs
are evenly spaced, so its policy (in ``shadowzarr_tiff``) guesses the next IFDs. A policy only
says *which* bytes; the file rounds them to its blocks, merges neighbours, fetches them in one
round through the transport and keeps them.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["CachedBlocks", "GrowingRuns", "NoReadAhead", "ReadAhead"]

_GROWTH = 1.7


class CachedBlocks(Protocol):
    """What a policy may ask of the file's cache: the file is cut into blocks of
    ``block_size`` bytes, numbered from 0; the last one may be short."""

    @property
    def block_size(self) -> int: ...

    @property
    def size(self) -> int:
        """Bytes in the file."""
        ...

    @property
    def last_fetched(self) -> int | None:
        """The block the latest fetch into the cache ended at (None before any)."""
        ...

    def holds(self, block: int) -> bool:
        """Whether block number ``block`` is in the cache."""
        ...


class ReadAhead(Protocol):
    """The interface of a read-ahead policy (one object per file: a policy keeps state)."""

    def plan(self, offset: int, size: int, cache: CachedBlocks) -> list[tuple[int, int]]:
        """Byte ranges ``(offset, size)`` to fetch now, for a read of ``size`` bytes at
        ``offset`` (at least one byte, inside the file).

        Called for every read, cached or not, so a policy may learn the pattern of the reads.
        The file fetches the read's missing blocks whatever the answer; an empty list adds
        nothing. Ranges are rounded out to whole blocks and clipped at the end of the file.
        """
        ...


class NoReadAhead:
    """Fetch only the blocks a read needs."""

    def plan(self, offset: int, size: int, cache: CachedBlocks) -> list[tuple[int, int]]:
        del offset, size, cache
        return []


class GrowingRuns:
    """On a miss, one run of blocks from the first missing one: ×1.7 longer while misses follow
    the previous fetch, ×1/1.7 shorter otherwise, at least what the read needs, at most
    ``max_run_blocks``, and stopping at a block already held. Metadata written in runs (HDF5's
    headers, heaps and groups) then costs a few growing requests, scattered reads one block.
    """

    def __init__(self, max_run_blocks: int = 256) -> None:
        self._max_run = max(1, max_run_blocks)
        self._run = 1.0

    def plan(self, offset: int, size: int, cache: CachedBlocks) -> list[tuple[int, int]]:
        block = cache.block_size
        first, last = offset // block, (offset + size - 1) // block
        missing = next((b for b in range(first, last + 1) if not cache.holds(b)), None)
        if missing is None:
            return []
        follows = cache.last_fetched is not None and missing == cache.last_fetched + 1
        if follows:
            self._run = min(self._max_run, self._run * _GROWTH)
        else:
            self._run = max(1.0, self._run / _GROWTH)
        count = max(round(self._run), last - missing + 1)
        for held in range(last + 1, missing + count):
            if cache.holds(held):
                count = held - missing
                break
        start = missing * block
        return [(start, min(cache.size, (missing + count) * block) - start)]
