"""The read path of every key as stored (or as the sharded view shows it): the store's own
job, which the grouped view also takes for each stored chunk it reads."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
from shadowzarr_spec import InlineRef
from shadowzarr_spec.keys import parse_key

from shadowzarr_store.metadata_gate import is_metadata_key
from shadowzarr_store.resolve import SourceValue, finish_whole, plan_read

if TYPE_CHECKING:
    from collections.abc import Sequence

    from shadowzarr_spec import ReferenceFileSystem
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

    from shadowzarr_store.array_checks import ArrayChecks
    from shadowzarr_store.checked_reads import CheckedReads
    from shadowzarr_store.metadata_gate import MetadataGate
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
    them. A read flows one way: the key is parsed once, its array's checks looked up
    (`MetadataGate`), the key resolved and planned (`Resolver`), the plan read and checked
    (`CheckedReads`). ``sharded``: the sharded view's reads, if it is on; ``views``: the views
    whose metadata zarr is shown instead of the stored one."""

    def __init__(
        self,
        rfs: ReferenceFileSystem,
        resolver: Resolver,
        reader: SourceReader,
        gate: MetadataGate,
        chunks: CheckedReads,
        sharded: ChunkView | None = None,
        views: Sequence[MetadataView] = (),
    ) -> None:
        self._rfs = rfs
        self._resolver = resolver
        self._reader = reader
        self._gate = gate
        self._chunks = chunks
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
        shard whose array passed them)."""
        parsed = parse_key(key)
        checks = (
            self._gate.checks_of(parsed)  # a refused array's chunks are refused too
            if array_checks is UNRESOLVED
            else cast("ArrayChecks | None", array_checks)
        )
        value = (
            await self._resolver.resolve(key)
            if resolved is UNRESOLVED
            else cast("InlineRef | SourceValue | None", resolved)
        )
        if value is None:
            return None
        data: bytes | memoryview | None = None
        if parsed.metadata:
            shown = self._gate.serve(key, value)
            for view in self._views:
                shown = view.rewrite(key, shown)
            value = InlineRef(shown)
        elif self.sharded is not None:
            data = await self.sharded.get_in_view(key, value, byte_range)
        if data is None:
            plan = self._resolver.plan(parsed, value, byte_range)
            data = await self._chunks.read_checked(plan, checks)
        return prototype.buffer.from_array_like(np.frombuffer(data, dtype=np.uint8))

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
