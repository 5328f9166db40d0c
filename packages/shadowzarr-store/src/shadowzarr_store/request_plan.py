"""Where an array's chunks lie in their source files, and what reading a selection costs.

`array_extents` lists the physical byte range of every stored chunk of an array (refs, gen
entries and chunk indexes alike, through the store's own resolver). `plan_selection` says which
chunks a selection reads, which chunk-index chunks that needs, and which requests the store will
send for them: it groups the reads as zarr issues them (waves of ``async.concurrency`` reads, in
C order) and merges each wave with the store's own planner (`merge.plan_runs`, `head_start`,
``RangeMerger.eligible``), so a picture or a cost estimate drawn from it tells the truth about
a cold read (nothing cached yet).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Any

import zarr
import zarr.api.asynchronous
from shadowzarr_spec import array_info, index_chunk_shape
from shadowzarr_spec.keys import array_of_chunk_key, join

from shadowzarr_store.chunk_indexes import index_chunk_location
from shadowzarr_store.merge import RangeMerger, head_start, plan_runs
from shadowzarr_store.remote.selection import chunk_keys
from shadowzarr_store.resolve import SourceValue, plan_read
from shadowzarr_store.stats import StoreStats

if TYPE_CHECKING:
    from shadowzarr_store.rfs_store import RfsStore

__all__ = ["ChunkExtent", "PlannedRequest", "SelectionPlan", "array_extents", "plan_selection"]


@dataclass(frozen=True, slots=True)
class ChunkExtent:
    """Stored chunk ``coords`` of an array: bytes ``[start, end)`` of ``url``."""

    key: str
    coords: tuple[int, ...]
    url: str
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request the store sends: bytes ``[start, end)`` of ``url`` for ``chunks``."""

    url: str
    start: int
    end: int
    chunks: tuple[str, ...]

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class SelectionPlan:
    """What a cold read of ``selection`` of array ``path`` costs."""

    path: str
    selection: str
    chunks: tuple[ChunkExtent, ...]
    """Stored chunks read, in the order zarr asks for them."""
    inline_chunks: int
    """Chunks held in the references themselves (no request)."""
    missing_chunks: int
    """Chunks never written (read as the fill value, no request)."""
    index_chunks: tuple[str, ...]
    """Chunk-index chunks read first (one request each), as locations."""
    requests: tuple[PlannedRequest, ...]
    concurrency: int
    merge_gap: int
    max_merge_size: int

    @property
    def request_bytes(self) -> int:
        return sum(request.size for request in self.requests)

    @property
    def chunk_bytes(self) -> int:
        return sum(chunk.size for chunk in self.chunks)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "selection": self.selection,
            "chunks": len(self.chunks),
            "chunk_bytes": self.chunk_bytes,
            "inline_chunks": self.inline_chunks,
            "missing_chunks": self.missing_chunks,
            "index_chunks": list(self.index_chunks),
            "requests": [
                {"url": r.url, "start": r.start, "end": r.end, "chunks": len(r.chunks)}
                for r in self.requests
            ],
            "request_bytes": self.request_bytes,
            "concurrency": self.concurrency,
            "merge_gap": self.merge_gap,
            "max_merge_size": self.max_merge_size,
        }


async def array_extents(store: RfsStore, path: str) -> list[ChunkExtent]:
    """Every stored chunk of array ``path`` that lives in a source file, by offset."""
    prefix = join(path, "c") + "/"
    extents = [
        extent
        async for key in store.list_prefix(prefix)
        if (extent := await _extent(store, key)) is not None
    ]
    return sorted(extents, key=lambda e: (e.url, e.start))


async def plan_selection(store: RfsStore, path: str, selection: Any = ()) -> SelectionPlan:
    """The chunks, index chunks and merged requests of a cold read of ``selection``."""
    opened = await zarr.api.asynchronous.open_array(store=store, path=path, mode="r", zarr_format=3)
    keys = list(chunk_keys(zarr.Array(opened), selection))
    chunks: list[ChunkExtent] = []
    inline = missing = 0
    for key in keys:
        value = await store._resolver.resolve(key)  # same package: the store's own resolver
        if value is None:
            missing += 1
        elif not isinstance(value, SourceValue):
            inline += 1
        else:
            extent = _extent_of(value, key)
            if extent is not None:
                chunks.append(extent)
    options = store.options
    concurrency = int(zarr.config.get("async.concurrency"))
    return SelectionPlan(
        path=path,
        selection=_describe(selection),
        chunks=tuple(chunks),
        inline_chunks=inline,
        missing_chunks=missing,
        index_chunks=tuple(_index_chunks(store, path, keys)),
        requests=tuple(_requests(chunks, store, concurrency)),
        concurrency=concurrency,
        merge_gap=options.merge_gap,
        max_merge_size=options.max_merge_size,
    )


async def _extent(store: RfsStore, key: str) -> ChunkExtent | None:
    value = await store._resolver.resolve(key)  # same package: the store's own resolver
    return _extent_of(value, key) if isinstance(value, SourceValue) else None


def _extent_of(value: SourceValue, key: str) -> ChunkExtent | None:
    split = array_of_chunk_key(key)
    if split is None or value.offset is None:
        return None
    plan = plan_read(value, None)
    if plan.reads_nothing:
        return None
    return ChunkExtent(key, tuple(split[1]), value.url, plan.start, plan.end)


@dataclass(frozen=True, slots=True)
class _Read:
    """What `plan_runs` groups: a read of ``[start, end)`` of ``url`` (as the merge queue's)."""

    url: str
    start: int
    end: int
    key: str


def _requests(chunks: list[ChunkExtent], store: RfsStore, concurrency: int) -> list[PlannedRequest]:
    """The requests of reading ``chunks`` in order, ``concurrency`` at a time, as merged by the
    store: a full wave is flushed while zarr is throttled, so long runs get a head start."""
    options = store.options
    merger = RangeMerger(_never, options, StoreStats())
    requests: list[PlannedRequest] = []
    for first in range(0, len(chunks), max(1, concurrency)):
        wave = chunks[first : first + concurrency]
        throttled = len(wave) >= concurrency
        mergeable = [c for c in wave if merger.eligible(c.start, c.end)]
        requests.extend(
            PlannedRequest(c.url, c.start, c.end, (c.key,))
            for c in wave
            if not merger.eligible(c.start, c.end)
        )
        reads = sorted((_Read(c.url, c.start, c.end, c.key) for c in mergeable), key=_by_place)
        for _, group in groupby(reads, key=lambda read: read.url):
            for run in plan_runs(list(group), options.merge_gap, options.max_merge_size):
                for piece in head_start(run) if throttled else [run]:
                    requests.append(
                        PlannedRequest(
                            piece[0].url,
                            piece[0].start,
                            max(read.end for read in piece),
                            tuple(read.key for read in piece),
                        )
                    )
    return requests


def _by_place(read: _Read) -> tuple[str, int]:
    return read.url, read.start


async def _never(url: str, start: int, end: int) -> bytes:
    raise AssertionError("the planner sends nothing")


def _index_chunks(store: RfsStore, path: str, keys: list[str]) -> list[str]:
    """Locations of the chunk-index chunks holding ``keys`` (empty without a stored index)."""
    index = store.rfs.indexes.get(path)
    info = array_info(store.rfs, path)
    if index is None or index.table is not None or index.path is None or info is None:
        return []
    shape = index_chunk_shape(info.grid)[:-1]
    blocks: dict[tuple[int, ...], None] = {}
    for key in keys:
        split = array_of_chunk_key(key)
        if split is not None and key not in store.rfs.refs:
            blocks[tuple(c // s for c, s in zip(split[1], shape, strict=True))] = None
    return [index_chunk_location(store.rfs.base, index.path, (*block, 0)) for block in blocks]


def _describe(selection: Any) -> str:
    items = selection if isinstance(selection, tuple) else (selection,)
    if items == ():
        return "[...]"
    parts = []
    for item in items:
        if isinstance(item, slice):
            start = "" if item.start is None else item.start
            stop = "" if item.stop is None else item.stop
            parts.append(f"{start}:{stop}" + ("" if item.step in (None, 1) else f":{item.step}"))
        elif item is Ellipsis:
            parts.append("...")
        else:
            parts.append(str(item))
    return "[" + ", ".join(parts) + "]"
