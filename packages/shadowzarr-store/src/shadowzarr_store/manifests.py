"""Chunk manifests: where each chunk of a large array is, read one index chunk at a time.

An index array is read as its own ``zarr.json`` describes it (`ManifestLayout`: any chunk
shape, key encoding, byte order, fill value, supported compressor), whoever wrote it. Its
``zarr.json`` is fetched once; an index chunk is fetched the first time a data chunk it covers
is asked for (from the reference directory, local or over HTTP), its frame checked before it is
decoded, and recent ones stay in memory. So reading one chunk of a cold array costs the index's
metadata and one index chunk plus the data read, and a warm one only the data read. An index
chunk that does not exist is an error (`SourceNotFoundError`): reading it as the fill value
would read every chunk it covers as never written, silently, if the file were lost.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import (
    MISSING_CHUNK,
    FileRef,
    ManifestLayout,
    ReferenceFileSystem,
    ReferenceFormatError,
    ShadowzarrError,
    UnsupportedFeatureError,
    array_info,
    index_array_metadata,
    parse_json,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Iterator

    from shadowzarr_store.transport.stats import StoreStats

__all__ = ["ManifestReader", "manifest_location"]

_MISSING = int(MISSING_CHUNK)
_GUESSED_CHUNKS = 2
"""Most index chunks fetched on a guess, before the index's ``zarr.json`` is read."""


def manifest_location(base: str | None, index_path: str, key: str) -> str:
    """URL or local path of ``key`` (``zarr.json``, ``c/0/1``) of a stored index array."""
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
    if "://" in root:
        return f"{root}/{key}"
    return os.path.join(root, *key.split("/"))


class ManifestReader:
    """Looks chunks up in the index arrays of one reference file system."""

    def __init__(
        self,
        rfs: ReferenceFileSystem,
        fetch: Callable[[str], Awaitable[bytes]],
        stats: StoreStats,
        capacity: int = 64,
        check: Callable[[str], None] | None = None,
    ) -> None:
        """``fetch`` reads a file of a stored index array; ``check`` refuses one that may not
        be read, also when refs.json carries it (a reader not knowing `IndexRef.files` would
        follow the path)."""
        self._rfs = rfs
        self._fetch = fetch
        self._check = check
        self._stats = stats
        self._capacity = capacity
        self._lock = threading.Lock()
        self._blocks: OrderedDict[tuple[str, tuple[int, ...]], Any] = OrderedDict()
        self._layouts: dict[str, ManifestLayout | ShadowzarrError] = {}
        self._inflight: dict[tuple[asyncio.AbstractEventLoop, object], asyncio.Task[Any]] = {}
        self._grids: dict[str, tuple[int, ...]] = {}

    def grid(self, path: str) -> tuple[int, ...]:
        grid = self._grids.get(path)
        if grid is None:
            info = array_info(self._rfs, path)
            if info is None:
                raise ReferenceFormatError(f"{path!r} has a chunk manifest but no array metadata")
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
            offset, size = (int(v) for v in index.table[coords])
        else:
            layout = await self._layout_with(path, np.array([coords], dtype=np.int64))
            offset, size = [await self._entry(path, layout, (*coords, k)) for k in (0, 1)]
        if offset == _MISSING and size == _MISSING:
            return None
        return FileRef(index.url, offset, size)

    async def lookup_many(self, path: str, coords: list[tuple[int, ...]]) -> list[FileRef | None]:
        """`lookup` of many chunks of ``path`` at once: each index chunk read once, the entries
        picked out with numpy (a grouped view's shard index asks for 1,024 at a time)."""
        url = self._rfs.indexes[path].url
        offsets, sizes = await self.entries(path, coords)
        return [
            None if offset == _MISSING and size == _MISSING else FileRef(url, offset, size)
            for offset, size in zip(offsets.tolist(), sizes.tolist(), strict=True)
        ]

    async def entries(
        self, path: str, coords: list[tuple[int, ...]] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The index's (offsets, sizes) of chunks ``coords`` of ``path`` (tuples, or an
        (n, ndim) integer array) as uint64 arrays; both `MISSING_CHUNK` for a chunk never
        written or outside the grid."""
        index = self._rfs.indexes[path]
        grid = self.grid(path)
        offsets = np.full(len(coords), _MISSING, dtype=np.uint64)
        sizes = np.full(len(coords), _MISSING, dtype=np.uint64)
        inside: np.ndarray | slice
        bounds: tuple[list[int], list[int]] | None = None
        if isinstance(coords, np.ndarray):
            every = coords.reshape(len(coords), -1)
            if not len(every) or every.shape[1] != len(grid):
                return offsets, sizes
            bounds = _column_bounds(every)
            mask = _rows_inside(every, grid, bounds)
            inside = slice(None) if mask is None else mask
            if mask is not None:
                bounds = None  # of every point, not only those inside
        else:
            inside = np.array(
                [
                    len(c) == len(grid) and all(0 <= x < g for x, g in zip(c, grid, strict=True))
                    for c in coords
                ],
                dtype=bool,
            )
        if isinstance(inside, np.ndarray) and not inside.any():
            return offsets, sizes
        if isinstance(coords, np.ndarray):
            points = every[inside].astype(np.int64, copy=False)
        else:
            assert isinstance(inside, np.ndarray)  # the tuples' flags, above
            points = np.array(
                [c for c, ok in zip(coords, inside.tolist(), strict=True) if ok], dtype=np.int64
            ).reshape(int(inside.sum()), len(grid))
        if index.table is not None:
            entries = index.table[tuple(points.T)]
            offsets[inside], sizes[inside] = entries[..., 0], entries[..., 1]
            return offsets, sizes
        layout = await self._layout_with(path, points)
        block_shape = np.array(layout.chunk_shape[:-1], dtype=np.int64)
        found_offsets = np.empty(len(points), dtype=np.uint64)
        found_sizes = np.empty(len(points), dtype=np.uint64)
        # a shard's chunks usually sit in one index chunk (told by the corners): no division of
        # every point, no sorting out, no masks
        low, high = _column_bounds(points) if bounds is None else bounds
        first = np.array(low, dtype=np.int64) // block_shape
        one = bool((first == np.array(high, dtype=np.int64) // block_shape).all())
        if one:
            names = [tuple(int(v) for v in first)]
            local = points - first * block_shape
        else:
            blocks = points // block_shape
            local = points - blocks * block_shape
            names = [tuple(int(v) for v in row) for row in _unique_rows(blocks)]
        for name in names:
            pick = slice(None) if one else np.all(blocks == np.array(name), axis=1)
            here = local[pick]
            origin = tuple(n * b for n, b in zip(name, layout.chunk_shape, strict=False))
            for k, out in ((0, found_offsets), (1, found_sizes)):
                block_coords, last = layout.locate((*origin, k))
                block = np.asarray(await self._block(path, layout, block_coords))
                out[pick] = _gather(block, here, last[-1])
        offsets[inside], sizes[inside] = found_offsets, found_sizes
        return offsets, sizes

    async def layout(self, path: str) -> ManifestLayout:
        """The stored index array's layout, from its ``zarr.json`` (fetched once). A layout
        that is refused stays refused: every later lookup raises at once, without a fetch."""
        layout = self._layouts.get(path)
        if isinstance(layout, ShadowzarrError):
            raise type(layout)(str(layout)) from layout
        if layout is None:
            try:
                layout = await self._once(("layout", path), lambda: self._load_layout(path))
            except (ReferenceFormatError, UnsupportedFeatureError) as exc:
                self._layouts[path] = exc
                raise
            self._layouts[path] = layout
        return layout

    async def _layout_with(self, path: str, points: np.ndarray) -> ManifestLayout:
        """`layout`; the first time, the index chunks holding chunks ``points`` are fetched at
        the same time as the index's ``zarr.json``, on the guess that the index is laid out as
        `write_rfs` lays it out (a function of the chunk grid), so a cold read of an array
        costs one round trip for its index, not two. The guess is used only once the
        ``zarr.json`` is read and describes exactly that layout; otherwise what was fetched
        is dropped and the chunks are read as the ``zarr.json`` says."""
        if path in self._layouts:
            return await self.layout(path)
        return await self._once(("guess", path), lambda: self._guessed(path, points))

    async def _guessed(self, path: str, points: np.ndarray) -> ManifestLayout:
        grid = self.grid(path)
        try:
            guess = ManifestLayout.from_metadata(index_array_metadata(grid), grid, path)
        except ShadowzarrError:
            return await self.layout(path)
        block_shape = np.array(guess.chunk_shape[:-1], dtype=np.int64)
        blocks = _unique_rows(points.reshape(len(points), -1) // block_shape)
        starts = [
            [int(b) * c for b, c in zip(row, guess.chunk_shape, strict=False)]
            for row in blocks[:_GUESSED_CHUNKS].tolist()
        ]
        wanted = {guess.locate((*start, k))[0] for start in starts for k in (0, 1)}
        wanted = {c for c in wanted if (path, c) not in self._blocks}
        layout_read, *fetched = await asyncio.gather(
            self.layout(path),
            *(self._fetch_block(path, guess, c) for c in wanted),
            return_exceptions=True,
        )
        if isinstance(layout_read, BaseException):
            raise layout_read
        assert isinstance(layout_read, ManifestLayout)  # `layout`'s answer
        if layout_read == guess:
            for coords, block in zip(wanted, fetched, strict=True):
                if not isinstance(block, BaseException):  # else read (and refused) as usual
                    self._keep(path, coords, block)
        return layout_read

    async def _load_layout(self, path: str) -> ManifestLayout:
        location = self._location(path, "zarr.json")
        where = f"index of {path!r} ({location})"
        document = parse_json(await self._read_file(path, "zarr.json", location))
        return ManifestLayout.from_metadata(document, self.grid(path), where)

    async def _entry(self, path: str, layout: ManifestLayout, element: tuple[int, ...]) -> int:
        block_coords, inside = layout.locate(element)
        block = await self._block(path, layout, block_coords)
        return int(block[inside])

    async def _block(self, path: str, layout: ManifestLayout, block_coords: tuple[int, ...]) -> Any:
        """One index chunk: from memory, or fetched once however many chunks wait for it."""
        key = (path, block_coords)
        with self._lock:
            if key in self._blocks:
                self._blocks.move_to_end(key)
                block = self._blocks[key]
                if isinstance(block, ShadowzarrError):
                    raise type(block)(str(block)) from block
                return block
        return await self._once(key, lambda: self._load_and_keep(path, layout, block_coords))

    async def _once[T](self, key: object, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``make()`` once per key and event loop, however many callers wait for it.

        It runs as a task of its own, so a cancelled caller does not cancel the others' read;
        the task's outcome is always retrieved, so a failure leaves nothing pending or unread.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            task: asyncio.Task[T] | None = self._inflight.get((loop, key))
            if task is None:
                task = loop.create_task(make())
                self._inflight[(loop, key)] = task
                task.add_done_callback(lambda done: self._forget(loop, key, done))
        return await asyncio.shield(task)

    def _forget(
        self, loop: asyncio.AbstractEventLoop, key: object, task: asyncio.Task[Any]
    ) -> None:
        with self._lock:
            self._inflight.pop((loop, key), None)
        if not task.cancelled():
            task.exception()  # retrieved: every waiter got it, or none is left to

    async def _load_and_keep(
        self, path: str, layout: ManifestLayout, block_coords: tuple[int, ...]
    ) -> Any:
        try:
            block: Any = await self._fetch_block(path, layout, block_coords)
        except ReferenceFormatError as exc:
            block = exc  # a damaged index chunk stays damaged: refused without a fetch
        self._keep(path, block_coords, block)
        if isinstance(block, ShadowzarrError):
            raise block
        return block

    async def _fetch_block(
        self, path: str, layout: ManifestLayout, block_coords: tuple[int, ...]
    ) -> Any:
        """One index chunk fetched and decoded as ``layout`` says (not kept)."""
        key = layout.chunk_key(block_coords)
        location = self._location(path, key)
        # a missing index chunk is an error, never fill
        data = await self._read_file(path, key, location)
        return layout.decode(data, f"index of {path!r} ({location})")

    async def _read_file(self, path: str, key: str, location: str) -> bytes:
        """A file of the index array of ``path``: carried in refs.json (`IndexRef.files`), or
        fetched from ``location`` (only these count as index chunk reads)."""
        carried = self._rfs.indexes[path].files.get(key)
        if carried is not None:
            if self._check is not None:
                self._check(location)
            return carried
        data = await self._fetch(location)
        if key != "zarr.json":
            self._stats.add(index_chunk_reads=1)
        return data

    def _keep(self, path: str, block_coords: tuple[int, ...], block: Any) -> None:
        with self._lock:
            self._blocks[(path, block_coords)] = block
            while len(self._blocks) > self._capacity:
                self._blocks.popitem(last=False)

    def _location(self, path: str, key: str) -> str:
        index = self._rfs.indexes[path]
        assert index.path is not None
        return manifest_location(self._rfs.base, index.path, key)

    async def written_chunks(self, path: str) -> Iterator[tuple[int, ...]]:
        """Coordinates of every chunk of ``path`` that the index says was written."""
        index = self._rfs.indexes[path]
        grid = self.grid(path)
        if index.table is not None:
            return _present(index.table[..., 0], index.table[..., 1], (0,) * len(grid))
        layout = await self.layout(path)
        found: list[tuple[int, ...]] = []
        data_shape = layout.chunk_shape[:-1]
        for prefix in np.ndindex(*layout.counts[:-1]):
            region = tuple(
                slice(b * c, min((b + 1) * c, g))
                for b, c, g in zip(prefix, data_shape, grid, strict=True)
            )
            parts = []
            for k in (0, 1):
                block_coords, inside = layout.locate((*(r.start for r in region), k))
                block = await self._block(path, layout, block_coords)
                local = tuple(slice(0, r.stop - r.start) for r in region)
                parts.append(block[(*local, inside[-1])])
            found.extend(
                _present(np.asarray(parts[0]), np.asarray(parts[1]), tuple(r.start for r in region))
            )
        return iter(found)


def _present(
    offsets: np.ndarray, sizes: np.ndarray, origin: tuple[int, ...]
) -> Iterator[tuple[int, ...]]:
    never = (offsets == MISSING_CHUNK) & (sizes == MISSING_CHUNK)
    empty = (offsets == 0) & (sizes == 0)  # offset 0, size 0: a missing chunk too
    written = ~(never | empty)
    for local in zip(*np.nonzero(written), strict=True):
        yield tuple(int(o + i) for o, i in zip(origin, local, strict=True))


def _rows_inside(
    points: np.ndarray, grid: tuple[int, ...], bounds: tuple[list[int], list[int]]
) -> np.ndarray | None:
    """Which rows of ``points`` (n, ndim, n > 0) lie inside ``grid``; None when all do, the
    usual case, told by the columns' ``bounds`` (`_column_bounds`; a mask per row costs more
    than the rest of a shard's lookup)."""
    low, high = bounds
    if all(lo >= 0 for lo in low) and all(hi < g for hi, g in zip(high, grid, strict=True)):
        return None
    inside = np.ones(len(points), dtype=bool)
    for axis, extent in enumerate(grid):
        column = points[:, axis]
        inside &= (column >= 0) & (column < extent)
    return inside


def _column_bounds(points: np.ndarray) -> tuple[list[int], list[int]]:
    """The least and greatest value of each column of ``points`` (n > 0 rows), a column at a
    time: ``min(axis=0)`` of an (n, 2) array reduces along the short axis, ten times slower."""
    columns = [points[:, axis] for axis in range(points.shape[1])]
    return [int(c.min()) for c in columns], [int(c.max()) for c in columns]


def _gather(block: np.ndarray, local: np.ndarray, last: int) -> np.ndarray:
    """``block[(*local.T, last)]``: elements of an index chunk at positions ``local`` (n,
    ndim - 1) and ``last`` on its last axis, as one flat take where the chunk is contiguous
    (indexing with a tuple of arrays costs several times more)."""
    contiguous = block.flags.c_contiguous or block.flags.f_contiguous
    if not contiguous or local.shape[1] == 0:
        picked: np.ndarray = block[(*local.T, np.full(len(local), last))]
        return picked
    steps = [stride // block.itemsize for stride in block.strides]
    at = local[:, 0] * steps[0] + last * steps[-1]
    for axis in range(1, local.shape[1]):
        at += local[:, axis] * steps[axis]
    return np.ravel(block, order="K").take(at)


def _unique_rows(rows: np.ndarray) -> np.ndarray:
    """The distinct rows of a non-negative integer array, in order (``np.unique(axis=0)``
    sorts rows as records: ten times slower for the thousands of a shard)."""
    if len(rows) == 0:
        return rows
    extent = rows.max(axis=0) + 1
    flat = np.ravel_multi_index(tuple(rows.T), tuple(int(e) for e in extent))
    return np.stack(np.unravel_index(np.unique(flat), tuple(int(e) for e in extent)), axis=1)
