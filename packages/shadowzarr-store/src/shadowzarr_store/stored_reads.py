"""The read path of every key as stored (or as the sharded view shows it): the store's own
job, which the grouped view also takes for each stored chunk it reads."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
from shadowzarr_spec import InlineRef

from shadowzarr_store.checked_reads import read_plan
from shadowzarr_store.metadata_gate import is_metadata_key
from shadowzarr_store.resolve import SourceValue, finish_inline, finish_whole, plan_read

if TYPE_CHECKING:
    from collections.abc import Sequence

    from shadowzarr_spec import ReferenceFileSystem
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

    from shadowzarr_store.array_checks import ArrayChecks
    from shadowzarr_store.metadata_gate import MetadataGate
    from shadowzarr_store.missing_codecs import MissingCodecs
    from shadowzarr_store.resolve import Resolver
    from shadowzarr_store.source_reader import SourceReader

__all__ = ["UNRESOLVED", "ChunkView", "KeyReads", "MetadataView", "StoredReads"]

UNRESOLVED = object()
"""A reference or an array's checks not looked up yet (None means: none)."""


class MetadataView(Protocol):
    """A view that shows zarr a ``zarr.json`` other than the stored one."""

    def rewrite(self, key: str, data: bytes) -> bytes: ...


class ViewedSize(Protocol):
    """How many bytes a key shows in a view."""

    @property
    def total(self) -> int: ...


class ChunkView(Protocol):
    """A view that shows zarr some keys' bytes other than the stored ones (the sharded view:
    `shadowzarr_store.views.ShardedReads`)."""

    def layout(self, key: str) -> ViewedSize | None: ...

    async def get_in_view(
        self, key: str, value: InlineRef | SourceValue, byte_range: ByteRequest | None
    ) -> bytes | memoryview | None: ...


class KeyReads(Protocol):
    """What the store answers zarr with: the stored keys (`StoredReads`), or a view composed
    over them (`shadowzarr_store.views.GroupedReads`)."""

    async def get_key(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None: ...

    async def get_key_ranges(
        self, key: str, byte_ranges: Sequence[ByteRequest | None], prototype: BufferPrototype
    ) -> list[Buffer | None]: ...

    async def key_exists(self, key: str) -> bool: ...

    async def key_size(self, key: str) -> int: ...


class StoredReads:
    """Keys of one store read as their references say, checked before zarr or a cache sees
    them; ``sharded``: the sharded view's reads, if it is on; ``views``: the views whose
    metadata zarr is shown instead of the stored one."""

    def __init__(
        self,
        rfs: ReferenceFileSystem,
        resolver: Resolver,
        reader: SourceReader,
        gate: MetadataGate,
        missing_codecs: MissingCodecs,
        sharded: ChunkView | None = None,
        views: Sequence[MetadataView] = (),
    ) -> None:
        self._rfs = rfs
        self._resolver = resolver
        self._reader = reader
        self._gate = gate
        self._missing_codecs = missing_codecs
        self.sharded = sharded
        self._views = tuple(views)

    def shown_metadata(self, key: str, data: bytes) -> bytes:
        """A ``zarr.json`` as the views show it (others unchanged)."""
        if not (key == "zarr.json" or key.endswith("/zarr.json")):
            return data
        for view in self._views:
            data = view.rewrite(key, data)
        return data

    async def get_key(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        return await self.get_stored(key, prototype, byte_range)

    async def get_key_ranges(
        self, key: str, byte_ranges: Sequence[ByteRequest | None], prototype: BufferPrototype
    ) -> list[Buffer | None]:
        return list(
            await asyncio.gather(*(self.get_stored(key, prototype, r) for r in byte_ranges))
        )

    async def key_exists(self, key: str) -> bool:
        return await self._resolver.resolve(key) is not None

    async def get_stored(
        self,
        key: str,
        prototype: BufferPrototype,
        byte_range: ByteRequest | None = None,
        resolved: object = UNRESOLVED,
        array_checks: object = UNRESOLVED,
    ) -> Buffer | None:
        """``key`` as stored (or as the sharded view shows it) (``resolved``: its reference,
        if known; ``array_checks``: its array's checks, if known, as for an inner chunk of a
        shard whose array passed them: no key parsed again per inner chunk)."""
        if array_checks is UNRESOLVED:
            self._missing_codecs.check_chunk(key)  # an array whose codec is not installed
            checks = self._gate.chunk_checks(key)  # a refused array's chunks are refused too
        else:
            checks = cast("ArrayChecks | None", array_checks)
        value = (
            await self._resolver.resolve(key)
            if resolved is UNRESOLVED
            else cast("InlineRef | SourceValue | None", resolved)
        )
        if value is None:
            return None
        if is_metadata_key(key):
            if isinstance(value, InlineRef):
                # stand-ins for codecs this install lacks, before zarr or the gate parses it
                self._missing_codecs.note_metadata(key, value.data)
            value = InlineRef(self.shown_metadata(key, self._gate.serve(key, value)))
        if self.sharded is not None:
            shown = await self.sharded.get_in_view(key, value, byte_range)
            if shown is not None:
                return prototype.buffer.from_array_like(np.frombuffer(shown, dtype=np.uint8))
        data = await self._checked(key, value, byte_range, checks)
        return prototype.buffer.from_array_like(np.frombuffer(data, dtype=np.uint8))

    async def _checked(
        self,
        key: str,
        value: InlineRef | SourceValue,
        byte_range: ByteRequest | None,
        checks: ArrayChecks | None,
    ) -> bytes | memoryview:
        """The bytes of ``value`` in ``byte_range``. A whole chunk is checked before zarr
        decodes it. Partial reads are raw bytes, except of a shard, whose inner chunks zarr
        decodes: the whole shard is checked once."""
        whole = checks if byte_range is None else None
        shard = checks if checks is not None and checks.shards is not None else None
        data: bytes | memoryview
        match value:
            case InlineRef(data=inline):
                data = finish_inline(key, self._resolver.layout_of_key(key), inline, byte_range)
                if whole is not None:
                    whole.check_stored_size(len(inline), key, "inline reference")
                    await whole.verify(data, key, "inline reference")
                elif shard is not None:
                    await self._gate.verify_shard(shard, key, inline, "inline reference")
            case SourceValue(offset=None):
                raw, cached = await self._reader.read_whole(value.url)
                data = finish_whole(value, raw, byte_range)
                if whole is not None:
                    await whole.verify(data, key, value.url)
                elif shard is not None:
                    await self._gate.verify_shard(
                        shard, key, finish_whole(value, raw, None), value.url
                    )
                if not cached:
                    await self._reader.remember(value.url, 0, -1, raw)
            case SourceValue():
                if whole is not None and value.layout is None and value.size is not None:
                    whole.check_stored_size(value.size, key, value.url)
                if shard is not None and whole is None:
                    identity = (value.url, value.offset, value.size)
                    if not self._gate.shard_verified(key, identity):
                        shard.check_stored_size(value.size or 0, key, value.url)
                        full = await read_plan(self._reader, plan_read(value, None))
                        await self._gate.verify_shard(shard, key, full, value.url, identity)
                data = await read_plan(self._reader, plan_read(value, byte_range), whole)
        return data

    async def key_size(self, key: str) -> int:
        """The bytes ``key`` holds as stored (or as the sharded view shows it)."""
        value = await self._resolver.resolve(key)
        match value:
            case None:
                raise FileNotFoundError(key)
            case InlineRef() if is_metadata_key(key):
                return len(self.shown_metadata(key, self._gate.serve(key, value)))
            case _ if (layout := self._sharded_layout(key)) is not None:
                return layout.total
            case InlineRef(data=inline):
                return len(inline)
            case SourceValue(offset=None):
                info = self._rfs.sources.get(value.url)
                if value.layout is None and info is not None and info.size is not None:
                    return info.size
                whole, _ = await self._reader.read_whole(value.url)
                return len(finish_whole(value, whole, None))
            case SourceValue():
                return plan_read(value, None).want
        raise AssertionError("unreachable")

    def _sharded_layout(self, key: str) -> ViewedSize | None:
        return None if self.sharded is None else self.sharded.layout(key)
