"""Where an array's chunks lie in their source files, and what reading a selection costs.

`array_extents` lists the physical byte range of every stored chunk of an array (refs, gen
entries and chunk manifests alike, through the store's own resolver). `plan_selection` says which
chunks a selection reads, which manifest chunks that needs, and which requests the store
sends for them: it issues the reads as zarr does (C order, ``async.concurrency`` in flight) and
merges each flush with the store's own planner (`merge.plan_runs`, `head_start`,
``RangeMerger.eligible``). For a selection of at most ``async.concurrency`` chunks that is
exactly what a cold read sends; beyond, later reads are merged as earlier requests finish, which
depends on timing, and the plan assumes they finish one by one (so it is the most requests a
cold read sends). An array the store shows through its grouped view (small chunks as shards,
see `views.grouped`) is planned as that view reads: zarr asks for ``async.concurrency`` shards at
a time, each for every stored chunk of the packs (inner chunks) the selection touches, all
gathered, so one wave of shards is one flush of the merger (the packs' read-ahead included).
`measure_selection` reads the selection and records every request it sent.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Any

import zarr
import zarr.api.asynchronous
from shadowzarr_spec.keys import array_of_chunk_key, join

from shadowzarr_store.manifests import manifest_location
from shadowzarr_store.merge import RangeMerger, head_start, plan_runs
from shadowzarr_store.remote.selection import chunk_keys
from shadowzarr_store.resolve import SourceValue, plan_read
from shadowzarr_store.transport.stats import StoreStats

if TYPE_CHECKING:
    from shadowzarr_store.rfs_store import RfsStore
    from shadowzarr_store.views.grouped import GroupLayout

__all__ = [
    "ChunkExtent",
    "Measured",
    "PlannedRequest",
    "SelectionPlan",
    "array_extents",
    "measure_selection",
    "plan_selection",
]


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
    """Manifest chunks read first (one request each), as locations."""
    index_metadata: tuple[str, ...]
    """The ``zarr.json`` of each chunk manifest, read once before its first chunk."""
    requests: tuple[PlannedRequest, ...]
    concurrency: int
    merge_gap: int
    max_merge_size: int
    read_ahead: tuple[ChunkExtent, ...] = ()
    """Stored chunks read besides ``chunks``: the rest of the packs of the grouped view that
    the selection touches."""
    grouped: bool = False
    """Whether the store reads this array through its grouped view (shards of small chunks)."""

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
            "index_metadata": list(self.index_metadata),
            "requests": [
                {"url": r.url, "start": r.start, "end": r.end, "chunks": len(r.chunks)}
                for r in self.requests
            ],
            "request_bytes": self.request_bytes,
            "read_ahead_chunks": len(self.read_ahead),
            "grouped": self.grouped,
            "concurrency": self.concurrency,
            "merge_gap": self.merge_gap,
            "max_merge_size": self.max_merge_size,
        }


async def array_extents(store: RfsStore, path: str) -> list[ChunkExtent]:
    """Every stored chunk of array ``path`` that lives in a source file, by offset."""
    store = store.stored_view()
    prefix = join(path, "c") + "/"
    extents = [
        extent
        async for key in store.list_prefix(prefix)
        if (extent := await _extent(store, key)) is not None
    ]
    return sorted(extents, key=lambda e: (e.url, e.start))


async def plan_selection(store: RfsStore, path: str, selection: Any = ()) -> SelectionPlan:
    """The chunks, index chunks and merged requests of a cold read of ``selection``, as the
    store reads it (through its grouped view, if it shows the array so)."""
    layout = store.grouped_layout(path)
    store = store.stored_view()
    opened = await zarr.api.asynchronous.open_array(store=store, path=path, mode="r", zarr_format=3)
    keys = _touched_keys(zarr.Array(opened), selection)
    chunks: list[ChunkExtent] = []
    inline = missing = 0
    for key in keys:
        value = await store.resolver.resolve(key)
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
    read_ahead: list[ChunkExtent] = []
    if layout is not None:
        read_ahead = await _pack_members(store, path, layout, chunks)
        requests = _grouped_requests(chunks + read_ahead, layout, store, concurrency)
    else:
        requests = _requests(chunks, store, concurrency)
    index_chunks = await _index_chunks(store, path, keys)
    index = store.rfs.indexes.get(path)
    return SelectionPlan(
        path=path,
        selection=_describe(selection),
        chunks=tuple(chunks),
        inline_chunks=inline,
        missing_chunks=missing,
        index_chunks=tuple(index_chunks),
        index_metadata=(manifest_location(store.rfs.base, index.path, "zarr.json"),)
        if index_chunks
        and index is not None
        and index.path is not None
        and "zarr.json" not in index.files
        else (),
        requests=tuple(requests),
        concurrency=concurrency,
        merge_gap=options.merge_gap,
        max_merge_size=options.max_merge_size,
        read_ahead=tuple(read_ahead),
        grouped=layout is not None,
    )


@dataclass(frozen=True, slots=True)
class Measured:
    """What a cold read of a selection sent, from the store's own counters."""

    requests: int
    bytes: int
    index_chunk_reads: int
    seconds: float


def measure_selection(store: RfsStore, path: str, selection: Any = ()) -> Measured:
    """Read ``selection`` through a fresh store (same options, no caches) and count what it
    sent: the truth the plan approximates beyond one wave of reads."""
    import time

    from shadowzarr_store.rfs_store import RfsStore

    options = {
        name: getattr(store.options, name)
        for name in store.options.__dataclass_fields__
        if name not in ("local_cache", "memory_cache")
    }
    fresh = RfsStore(store.rfs, **options)
    try:
        started = time.perf_counter()
        zarr.open_array(fresh, path=path, mode="r", zarr_format=3)[selection]
        seconds = time.perf_counter() - started
        stats = fresh.stats.snapshot()
    finally:
        fresh.close()
    return Measured(stats.requests, stats.bytes, stats.index_chunk_reads, seconds)


async def _extent(store: RfsStore, key: str) -> ChunkExtent | None:
    value = await store.resolver.resolve(key)
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
    """The requests of reading ``chunks`` in zarr's order with ``concurrency`` reads in flight.

    zarr sends the first ``concurrency`` reads at once; the merge queue flushes them together
    (zarr is then throttled, so long runs get a head start). Later reads follow as earlier ones
    finish: the requests of one flush are taken to finish together (sent at once, they are
    answered at once), so the reads they served free their slots together and their
    successors are merged with each other.
    """
    options = store.options
    merger = RangeMerger(_never, options, StoreStats(session=False))
    waiting = list(chunks)
    requests: list[PlannedRequest] = []
    batch, waiting = waiting[:concurrency], waiting[concurrency:]
    while batch:
        sent = _merge(batch, merger, throttled=len(batch) >= concurrency)
        requests.extend(sent)
        freed = sum(len(request.chunks) for request in sent)
        batch, waiting = waiting[:freed], waiting[freed:]
    return requests


def _touched_keys(array: zarr.Array[Any], selection: Any) -> list[str]:
    """The keys of the chunks zarr reads for ``selection``, in its order: its own indexer for
    slices and integers (a strided slice skips the chunks between its steps), else the
    chunks the selection's bounding box covers."""
    from zarr.core.indexing import BasicIndexer

    try:
        # zarr's own chunk grid object (private; without it, the bounding box)
        indexer = BasicIndexer(selection, array.shape, array._chunk_grid)
    except (AttributeError, IndexError, TypeError, ValueError):
        return list(chunk_keys(array, selection))
    prefix = f"{array.path}/" if array.path else ""
    return [prefix + array.metadata.encode_chunk_key(p.chunk_coords) for p in indexer]


async def _pack_members(
    store: RfsStore, path: str, layout: GroupLayout, chunks: list[ChunkExtent]
) -> list[ChunkExtent]:
    """The stored chunks the grouped view reads besides ``chunks``: every member of each pack
    (inner chunk) that holds one of them."""
    packed = layout.packed
    if all(p == 1 for p in packed):
        return []
    wanted = {chunk.coords for chunk in chunks}
    origins = {tuple(c - c % p for c, p in zip(coords, packed, strict=True)) for coords in wanted}
    extra: list[ChunkExtent] = []
    for origin in sorted(origins):
        for offsets in itertools.product(*(range(p) for p in packed)):
            coords = tuple(o + d for o, d in zip(origin, offsets, strict=True))
            if coords in wanted or any(c >= g for c, g in zip(coords, layout.grid, strict=True)):
                continue
            key = join(path, "c", *map(str, coords))
            extent = await _extent(store, key)
            if extent is not None:
                extra.append(extent)
    return extra


def _grouped_requests(
    chunks: list[ChunkExtent], layout: GroupLayout, store: RfsStore, concurrency: int
) -> list[PlannedRequest]:
    """The requests of a grouped read: shards in zarr's order, ``concurrency`` at a time, each
    wave's stored chunks gathered into one flush of the merger."""
    merger = RangeMerger(_never, store.options, StoreStats(session=False))
    by_shard: dict[tuple[int, ...], list[ChunkExtent]] = {}
    for chunk in chunks:
        by_shard.setdefault(layout.shard_of(chunk.coords), []).append(chunk)
    shards = sorted(by_shard)
    requests: list[PlannedRequest] = []
    for first in range(0, len(shards), concurrency):
        wave = [c for shard in shards[first : first + concurrency] for c in by_shard[shard]]
        requests.extend(_merge(wave, merger, throttled=False))
    return requests


def _merge(
    batch: list[ChunkExtent], merger: RangeMerger, *, throttled: bool
) -> list[PlannedRequest]:
    """One flush of the merge queue: reads grouped by URL and joined by the store's planner."""
    options = merger.options
    alone = [c for c in batch if not merger.eligible(c.start, c.end)]
    sent = [PlannedRequest(c.url, c.start, c.end, (c.key,)) for c in alone]
    reads = sorted(
        (_Read(c.url, c.start, c.end, c.key) for c in batch if merger.eligible(c.start, c.end)),
        key=_by_place,
    )
    for _, group in groupby(reads, key=lambda read: read.url):
        for run in plan_runs(list(group), options.merge_gap, options.max_merge_size):
            for piece in head_start(run) if throttled else [run]:
                sent.append(
                    PlannedRequest(
                        piece[0].url,
                        piece[0].start,
                        max(read.end for read in piece),
                        tuple(read.key for read in piece),
                    )
                )
    return sent


def _by_place(read: _Read) -> tuple[str, int]:
    return read.url, read.start


async def _never(url: str, start: int, end: int) -> bytes:
    raise AssertionError("the planner sends nothing")


async def _index_chunks(store: RfsStore, path: str, keys: list[str]) -> list[str]:
    """Locations of the manifest chunks holding ``keys`` (empty without a stored index), as
    the index array's own ``zarr.json`` lays them out (already read when the keys resolved);
    chunks refs.json carries (`IndexRef.files`) cost no request and are left out."""
    index = store.rfs.indexes.get(path)
    if index is None or index.table is not None or index.path is None:
        return []
    layout = await store.manifests.layout(path)
    blocks: dict[tuple[int, ...], None] = {}
    for key in keys:
        split = array_of_chunk_key(key)
        if split is not None and key not in store.rfs.refs:
            blocks[layout.locate((*split[1], 0))[0]] = None
    keys_of = [layout.chunk_key(b) for b in blocks]
    return [
        manifest_location(store.rfs.base, index.path, k) for k in keys_of if k not in index.files
    ]


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
