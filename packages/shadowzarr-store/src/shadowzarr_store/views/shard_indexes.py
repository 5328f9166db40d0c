"""The grouped view's shard indexes, computed from the references (never fetched): where each
stored chunk of a shard sits in the shard zarr is shown, and how many bytes it holds."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from shadowzarr_spec import MISSING_CHUNK, ChunkDecodeError, InlineRef
from shadowzarr_spec.keys import chunk_key
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store.resolve import SourceValue, finish_inline, plan_read
from shadowzarr_store.stored_reads import UNRESOLVED
from shadowzarr_store.views.grouped import ShardIndex, StoredKeys

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.listing import SortedRefs
    from shadowzarr_store.manifests import ManifestReader
    from shadowzarr_store.resolve import Resolver
    from shadowzarr_store.stored_reads import StoredReads
    from shadowzarr_store.views.grouped import GroupLayout

__all__ = ["Group", "ShardIndexes"]

Group = tuple[str, tuple[int, ...], "GroupLayout"]
"""A shard of the grouped view: (array path, shard coordinates, the array's layout)."""

_MISSING_ENTRY = int(MISSING_CHUNK)
_LARGEST_NUMBER = 2**53 - 1
"""The largest offset or size a reference holds (the format's bound on numbers)."""
_SHARD_INDEXES_KEPT = 256
"""Synthesized shard indexes kept per store (each at most 16 KiB)."""


class _Packing(TypedDict):
    """How a grouped view's shard packs its stored chunks (`ShardIndex.build`'s keywords)."""

    members: int
    inner_nbytes: int


class ShardIndexes:
    """The shard indexes of one store's grouped view, kept (they are rebuilt from references);
    ``owner`` names the store in errors."""

    def __init__(
        self,
        rfs: ReferenceFileSystem,
        resolver: Resolver,
        indexes: ManifestReader,
        stored: StoredReads,
        refs: SortedRefs,
        owner: object,
    ) -> None:
        self._rfs = rfs
        self._resolver = resolver
        self._indexes = indexes
        self._stored = stored
        self._refs = refs
        self._owner = owner
        self._kept: dict[str, ShardIndex] = {}
        self._builds: dict[tuple[Any, str], asyncio.Future[ShardIndex]] = {}

    async def get(self, key: str, group: Group) -> ShardIndex:
        """The index of shard ``key``: one build however many reads of it arrive at once."""
        found = self._kept.get(key)
        if found is not None:
            return found
        build = (asyncio.get_running_loop(), key)
        task = self._builds.get(build)
        if task is None:
            task = asyncio.ensure_future(self._build(key, group))
            self._builds[build] = task
            task.add_done_callback(lambda _: self._builds.pop(build, None))
        return await asyncio.shield(task)

    async def _build(self, key: str, group: Group) -> ShardIndex:
        path, shard, layout = group
        packing: _Packing = {
            "members": layout.members,
            "inner_nbytes": layout.members * layout.chunk_nbytes,
        }
        fast = await self._from_manifest(path, layout.inner_points(shard), packing)
        chunks = layout.inner_chunks(shard) if fast is None else []
        if fast is not None:
            index = fast
        elif not any(chunks):
            keys: list[str | None] = [None] * len(chunks)
            values: list[InlineRef | SourceValue | None] = [None] * len(chunks)
            index = ShardIndex.build(keys, [None] * len(chunks), tuple(values), **packing)
        else:
            keys, values = await self._resolver.resolve_chunks(path, chunks)
            lengths = [
                await self._logical_length(k, v) if _needs_read(v) else self._known_length(k, v)
                for k, v in zip(keys, values, strict=True)
            ]
            for inner, value, length in zip(keys, values, lengths, strict=True):
                if length == 0 and inner is not None:
                    await self._refuse_empty(inner, value)
            index = ShardIndex.build(keys, lengths, tuple(values), **packing)
        if len(self._kept) >= _SHARD_INDEXES_KEPT:
            self._kept.pop(next(iter(self._kept)))
        self._kept[key] = index
        return index

    async def _refuse_empty(self, key: str, value: InlineRef | SourceValue | None) -> None:
        """A stored chunk of no bytes (an empty inline value) would reach zarr's sharding codec
        as an empty inner chunk, which its codecs fail to decode with their own errors: it is
        read on the per-key path, whose checks refuse it with the array's typed error."""
        await self._stored.get_stored(key, default_buffer_prototype(), None, value)
        raise ChunkDecodeError(
            f"{self._owner!r}: stored chunk {key!r} holds no bytes; no chunk of its array "
            "decodes from nothing"
        )

    async def _from_manifest(
        self, path: str, points: np.ndarray, packing: _Packing
    ) -> ShardIndex | None:
        """The shard index straight from the chunk manifest's arrays (no object per chunk), for an
        array whose every chunk reference is in its chunk manifest, or in a version-1 file's
        listed columns (`Resolver.entries`), and has no selection; None otherwise. ``points``:
        the shard's stored chunks (`GroupLayout.inner_points`). Inner chunks are resolved again
        only when read."""
        inside = points[:, 0] >= 0
        if not self._refs.manifest_only(path) or not inside.any():
            return None
        first = chunk_key(path, (0,) * len(self._indexes.grid(path)))
        chunk_layout = self._resolver.layout_of_key(first)
        full = None if chunk_layout is None else chunk_layout.chunk_nbytes
        whole = bool(inside.all())  # the usual shard: no stored chunk past the array's end
        where = np.arange(len(points)) if whole else np.flatnonzero(inside)
        url, offsets, sizes = await self._resolver.entries(path, points if whole else points[where])
        present = ((offsets != _MISSING_ENTRY) | (sizes != _MISSING_ENTRY)) & (
            (offsets != 0) | (sizes != 0)  # offset 0, size 0: a missing chunk too
        )
        every = bool(present.all())
        held_offsets, held_sizes = (offsets, sizes) if every else (offsets[present], sizes[present])
        if max(
            int(held_offsets.max(initial=0)), int(held_sizes.max(initial=0))
        ) > _LARGEST_NUMBER or not bool(held_sizes.all()):
            # Entries no reference could hold (a damaged index, an empty chunk not at offset
            # 0): the path chunk by chunk refuses them with the error that names the chunk.
            return None
        lengths = np.full(len(points), -1, dtype=np.int64)
        stored_rows = where if every else where[present]
        stored_sizes = held_sizes.astype(np.int64)
        if full is not None:
            # an uncompressed chunk reads at its full size (padded); an over-long reference
            # keeps its size here and fails when read, as unsharded
            stored_sizes = np.where(stored_sizes <= full, full, stored_sizes)
        lengths[stored_rows] = stored_sizes
        is_stored = np.zeros(len(points), dtype=bool)
        is_stored[stored_rows] = True
        keys = StoredKeys(chunk_key(path, ()) + "/", points, is_stored)
        every_offset = np.full(len(points), _MISSING_ENTRY, dtype=np.uint64)
        every_size = every_offset.copy()
        every_offset[where], every_size[where] = offsets, sizes
        entries = (url, every_offset, every_size)
        return ShardIndex.build(
            keys, lengths, (UNRESOLVED,) * len(points), entries=entries, **packing
        )

    async def _logical_length(
        self, key: str | None, value: InlineRef | SourceValue | None
    ) -> int | None:
        """Bytes zarr would get for stored chunk ``key`` (None: not stored), without reading it
        where the reference says (a whole-file reference of unknown size is read)."""
        match value:
            case None:
                return None
            case InlineRef(data=inline):
                assert key is not None
                return len(finish_inline(key, self._resolver.layout_of_key(key), inline, None))
            case SourceValue(offset=None):
                assert key is not None
                whole = await self._stored.get_stored(key, default_buffer_prototype(), None, value)
                return None if whole is None else len(whole)
            case SourceValue():
                return plan_read(value, None).want
        raise AssertionError("unreachable")

    def _known_length(self, key: str | None, value: InlineRef | SourceValue | None) -> int | None:
        """`_logical_length` without a coroutine per chunk (1,024 per shard index): a plain
        chunk is its reference's size, or its full size when uncompressed (padded)."""
        if value is None or key is None:
            return None
        if isinstance(value, InlineRef):
            layout = self._resolver.layout_of_key(key)
            return len(finish_inline(key, layout, value.data, None))
        layout = value.layout
        size = value.size
        if size is not None and (layout is None or layout.selection is None):
            if layout is None or layout.chunk_nbytes is None:
                return size
            if size <= layout.chunk_nbytes:
                return layout.chunk_nbytes
        return plan_read(value, None).want  # selections, and the error of an over-long reference


def _needs_read(value: InlineRef | SourceValue | None) -> bool:
    """Whether a reference's logical length is known only by reading it (a whole file of
    unknown size)."""
    return isinstance(value, SourceValue) and value.offset is None
