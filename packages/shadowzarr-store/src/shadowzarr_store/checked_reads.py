"""The bytes of one read plan, checked before zarr or any cache sees them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowzarr_store.array_checks import ArrayChecks
    from shadowzarr_store.resolve import ReadPlan
    from shadowzarr_store.source_reader import SourceReader

__all__ = ["CheckedReads", "read_plan"]


class CheckedReads:
    """Reads the bytes of read plans through one store's reader, checked first: a whole chunk
    is decoded as zarr will; a partial read is raw bytes, except of a shard, whose inner chunks
    zarr decodes: the whole shard is checked once before. Only bytes that pass every check
    reach a cache."""

    def __init__(self, reader: SourceReader) -> None:
        self._reader = reader

    async def read_checked(self, plan: ReadPlan, checks: ArrayChecks | None) -> bytes | memoryview:
        """The logical bytes of ``plan``; ``checks``: those of its array (None: unchecked)."""
        checked = plan  # whose logical bytes are checked
        if checks is not None and plan.partial:
            if checks.shards is None:
                checks = None  # zarr decodes no part of a chunk: raw bytes
            elif plan.identity is not None:
                await self._check_shard(plan, checks)
                checks = None
            else:
                checked = plan.whole()  # read whole anyway (inline, a whole file): checked whole
        if checks is not None and checked.stored_size is not None:
            checks.check_stored_size(checked.stored_size, plan.key, plan.url)
        raw: bytes | memoryview
        if plan.inline is not None:
            raw, cached = plan.inline, True  # the references' own bytes: no cache needed
        elif plan.whole_file:
            raw, cached = await self._reader.read_whole(plan.url)
        elif plan.reads_nothing:
            raw, cached = b"", True
        else:
            raw, cached = await self._reader.read(plan.url, plan.start, plan.end)
        data = plan.assemble(raw)
        if checks is not None:
            whole = data if checked is plan else checked.assemble(raw)
            await checks.verify(whole, plan.key, plan.url, checked.identity)
        if not cached and plan.complete(raw):
            await self._reader.remember(plan.url, plan.start, plan.end, raw)
        return data

    async def _check_shard(self, plan: ReadPlan, shard: ArrayChecks) -> None:
        """Check shard ``plan.key`` whole once (its index and every inner chunk), so that zarr
        may read its inner chunks with partial reads."""
        if not shard.shard_checked(plan.key, plan.identity):
            await self.read_checked(plan.whole(), shard)


async def read_plan(
    reader: SourceReader, plan: ReadPlan, checks: ArrayChecks | None = None
) -> bytes | memoryview:
    """The logical bytes of a ranged ``plan``, checked (``checks``: the whole chunk is decoded
    as zarr will) before they are cached; only bytes that pass every check reach a cache."""
    if plan.reads_nothing:
        data = plan.assemble(b"")
    else:
        raw, cached = await reader.read(plan.url, plan.start, plan.end)
        data = plan.assemble(raw)
        if checks is not None:
            await checks.verify(data, plan.key, plan.url)
        if not cached and plan.complete(raw):
            await reader.remember(plan.url, plan.start, plan.end, raw)
        return data
    if checks is not None:
        await checks.verify(data, plan.key, plan.url)
    return data
