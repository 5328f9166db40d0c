"""Reading the grouped view: shards of it as their synthesized index and the stored chunks they
show, every other key as stored (`StoredReads`).

A shard's read flows one way, as a stored key's does: the key is parsed once, its array's
checks are looked up once, its index is built (or kept) once (`ShardIndexes`), the asked ranges
are planned (`plan_shard`), and the plan is read, checked and assembled in one step
(`ShardReader`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowzarr_spec import ShadowzarrError
from shadowzarr_spec.keys import chunk_key, join, parse_key

from shadowzarr_store.views.shard_plan import plan_shard
from shadowzarr_store.views.shard_reader import ShardReader

if TYPE_CHECKING:
    from collections.abc import Sequence

    from shadowzarr_spec import ReferenceFileSystem
    from shadowzarr_spec.keys import ParsedKey
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

    from shadowzarr_store.metadata_gate import MetadataGate
    from shadowzarr_store.missing_codecs import MissingCodecs
    from shadowzarr_store.source_reader import SourceReader
    from shadowzarr_store.stored_reads import StoredReads
    from shadowzarr_store.views.grouped import GroupedView
    from shadowzarr_store.views.shard_indexes import Group, ShardIndexes

__all__ = ["GroupedReads", "pack_kind"]


def pack_kind(
    path: str, index_only: bool, gate: MetadataGate, missing_codecs: MissingCodecs
) -> str | None:
    """How the grouped view may pack the stored chunks of ``path`` (see `GroupedView`):
    only arrays read straight from one chunk manifest (``index_only``), whose one array codec is
    ``bytes``; ``"plain"`` without byte codecs, ``"decoded"`` with byte codecs of bounded
    output."""
    if not index_only:
        return None
    try:
        checks = gate.array(path)
    except ShadowzarrError:
        return None  # refused: its chunks are refused as stored
    if (
        checks is None
        or checks.shards is not None
        or checks.filters
        or checks.serializer_name != "bytes"
    ):
        return None
    if not checks.layers:
        return "plain"
    if checks.stored_bound is None or missing_codecs.refuses(path):
        return None
    return "decoded"


class GroupedReads:
    """The grouped view's reads of one store: ``view`` says which arrays it shows as shards,
    ``shard_indexes`` computes their indexes, ``stored`` reads every other key (and each
    stored chunk on the per-key path); ``owner`` names the store in errors."""

    def __init__(
        self,
        view: GroupedView,
        shard_indexes: ShardIndexes,
        stored: StoredReads,
        reader: SourceReader,
        gate: MetadataGate,
        rfs: ReferenceFileSystem,
        owner: object,
    ) -> None:
        self.view = view
        self.shard_indexes = shard_indexes
        self._stored = stored
        self._gate = gate
        self._shards = ShardReader(stored, reader, rfs, owner)

    # -- keys -----------------------------------------------------------------------------------

    def group_of(self, key: str) -> Group | None:
        """(array, shard coordinates, layout) when ``key`` is a shard of the grouped view."""
        return self._group(parse_key(key))

    def _group(self, parsed: ParsedKey) -> Group | None:
        if parsed.array is None:
            return None
        layout = self.view.layout(parsed.array)
        return None if layout is None else (parsed.array, parsed.coords, layout)

    def chunks_root(self, key: str) -> str | None:
        """``path/c`` when ``key`` lies inside the chunks of an array shown as shards."""
        group = self.group_of(key)
        return None if group is None else join(group[0], "c")

    def shard_key(self, key: str) -> str | None:
        """The shard key that shows stored chunk ``key``; None when it is shown as stored."""
        group = self.group_of(key)
        if group is None:
            return None
        path, coords, layout = group
        return chunk_key(path, layout.shard_of(coords))

    # -- reading: shards here, every other key as stored ---------------------------------------

    async def get_key(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        parsed = parse_key(key)
        group = self._group(parsed)
        if group is None:
            return await self._stored.get_key(key, prototype, byte_range)
        return (await self.get_shard(parsed, group, [byte_range], prototype, one_get=True))[0]

    async def get_key_ranges(
        self, key: str, byte_ranges: Sequence[ByteRequest | None], prototype: BufferPrototype
    ) -> list[Buffer | None]:
        parsed = parse_key(key)
        group = self._group(parsed)
        if group is None:
            return await self._stored.get_key_ranges(key, byte_ranges, prototype)
        return await self.get_shard(parsed, group, byte_ranges, prototype)

    async def key_exists(self, key: str) -> bool:
        group = self.group_of(key)
        if group is None:
            return await self._stored.key_exists(key)
        return not (await self.shard_indexes.get(key, group)).empty

    async def key_size(self, key: str) -> int:
        group = self.group_of(key)
        if group is None:
            return await self._stored.key_size(key)
        index = await self.shard_indexes.get(key, group)
        if index.empty:
            raise FileNotFoundError(key)
        return index.total

    async def get_shard(
        self,
        parsed: ParsedKey,
        group: Group,
        byte_ranges: Sequence[ByteRequest | None],
        prototype: BufferPrototype,
        *,
        one_get: bool = False,
    ) -> list[Buffer | None]:
        """Ranges of shard ``parsed``: its array's checks once (a refused array's shards are
        refused too; the shard's array is its inner chunks' array), its index once, one plan
        of every range, one read of the plan."""
        checks = self._gate.checks_of(parsed)
        index = await self.shard_indexes.get(parsed.key, group)
        if index.empty:
            return [None] * len(byte_ranges)
        plan = plan_shard(parsed, group[2], index, checks, byte_ranges)
        return await self._shards.read_plan(plan, prototype, one_get=one_get)
