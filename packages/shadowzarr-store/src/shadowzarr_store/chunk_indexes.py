"""Chunk indexes: where each chunk of a large array is, read one index chunk at a time.

An index chunk is fetched the first time a data chunk it covers is asked for (from the reference
directory, local or over HTTP) and recent ones stay in memory, so reading one chunk of a cold
array costs one index read plus the data read, and a warm one only the data read.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import (
    MISSING_CHUNK,
    FileRef,
    ReferenceFileSystem,
    ReferenceFormatError,
    array_info,
    decode_index_chunk,
    index_chunk_shape,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from shadowzarr_store.transport.stats import StoreStats

__all__ = ["ChunkIndexReader", "index_chunk_location"]

_MISSING = int(MISSING_CHUNK)
type _BlockKey = tuple[str, tuple[int, ...]]


def index_chunk_location(base: str | None, index_path: str, coords: tuple[int, ...]) -> str:
    """URL or local path of one chunk of a stored index array."""
    if "://" in index_path:
        root = index_path.rstrip("/")
    elif base is None:
        raise ReferenceFormatError(
            f"index {index_path!r} is relative but the references were not loaded from a directory"
        )
    elif "://" in base:
        root = f"{base.rstrip('/')}/{index_path}"
    else:
        root = os.path.join(base, index_path)
    separator = "/" if "://" in root else os.sep
    return separator.join([root, "c", *(str(c) for c in coords)])


class ChunkIndexReader:
    """Looks chunks up in the index arrays of one reference file system."""

    def __init__(
        self,
        rfs: ReferenceFileSystem,
        fetch: Callable[[str], Awaitable[bytes]],
        stats: StoreStats,
        capacity: int = 64,
    ) -> None:
        self._rfs = rfs
        self._fetch = fetch
        self._stats = stats
        self._capacity = capacity
        self._lock = threading.Lock()
        self._blocks: OrderedDict[_BlockKey, np.ndarray] = OrderedDict()
        self._inflight: dict[
            tuple[asyncio.AbstractEventLoop, _BlockKey], asyncio.Task[np.ndarray]
        ] = {}
        self._grids: dict[str, tuple[int, ...]] = {}

    def grid(self, path: str) -> tuple[int, ...]:
        grid = self._grids.get(path)
        if grid is None:
            info = array_info(self._rfs, path)
            if info is None:
                raise ReferenceFormatError(f"{path!r} has a chunk index but no array metadata")
            grid = self._grids[path] = info.grid
        return grid

    async def lookup(self, path: str, coords: tuple[int, ...]) -> FileRef | None:
        """The reference of chunk ``coords`` of array ``path``; None if never written."""
        index = self._rfs.indexes[path]
        grid = self.grid(path)
        if len(coords) != len(grid) or any(
            not 0 <= c < g for c, g in zip(coords, grid, strict=True)
        ):
            return None
        if index.table is not None:
            entry = index.table[coords]
        else:
            shape = index_chunk_shape(grid)[:-1]
            block_coords = tuple(c // s for c, s in zip(coords, shape, strict=True))
            block = await self._block(path, block_coords)
            entry = block[tuple(c % s for c, s in zip(coords, shape, strict=True))]
        offset, size = int(entry[0]), int(entry[1])
        if offset == _MISSING and size == _MISSING:
            return None
        return FileRef(index.url, offset, size)

    async def _block(self, path: str, block_coords: tuple[int, ...]) -> np.ndarray:
        """One index chunk: from memory, or fetched once however many chunks wait for it."""
        key = (path, block_coords)
        loop = asyncio.get_running_loop()
        with self._lock:
            block = self._blocks.get(key)
            if block is not None:
                self._blocks.move_to_end(key)
                return block
            task = self._inflight.get((loop, key))
            if task is None:
                # A task of its own, so a cancelled caller does not cancel the others' read.
                task = loop.create_task(self._load_and_keep(key))
                self._inflight[(loop, key)] = task
                task.add_done_callback(lambda _: self._forget(loop, key))
        return await asyncio.shield(task)

    def _forget(self, loop: asyncio.AbstractEventLoop, key: _BlockKey) -> None:
        with self._lock:
            self._inflight.pop((loop, key), None)

    async def _load_and_keep(self, key: _BlockKey) -> np.ndarray:
        block = await self._load(*key)
        with self._lock:
            self._blocks[key] = block
            while len(self._blocks) > self._capacity:
                self._blocks.popitem(last=False)
        return block

    async def _load(self, path: str, block_coords: tuple[int, ...]) -> np.ndarray:
        index = self._rfs.indexes[path]
        assert index.path is not None
        location = index_chunk_location(self._rfs.base, index.path, (*block_coords, 0))
        data = await self._fetch(location)
        self._stats.add(index_chunk_reads=1)
        return decode_index_chunk(data, index_chunk_shape(self.grid(path)))

    async def written_chunks(self, path: str) -> list[tuple[int, ...]]:
        """Coordinates of every chunk of ``path`` that the index says was written."""
        index = self._rfs.indexes[path]
        grid = self.grid(path)
        if index.table is not None:
            return list(_present(index.table, (0,) * len(grid), grid))
        shape = index_chunk_shape(grid)[:-1]
        counts = [math.ceil(g / s) for g, s in zip(grid, shape, strict=True)]
        found: list[tuple[int, ...]] = []
        for block_coords in np.ndindex(*counts):
            block = await self._block(path, block_coords)
            origin = tuple(b * s for b, s in zip(block_coords, shape, strict=True))
            found.extend(_present(block, origin, grid))
        return found


def _present(
    table: np.ndarray, origin: tuple[int, ...], grid: tuple[int, ...]
) -> Iterator[tuple[int, ...]]:
    written = ~((table[..., 0] == MISSING_CHUNK) & (table[..., 1] == MISSING_CHUNK))
    for local in zip(*np.nonzero(written), strict=True):
        coords = tuple(int(o + i) for o, i in zip(origin, local, strict=True))
        if all(c < g for c, g in zip(coords, grid, strict=True)):
            yield coords
