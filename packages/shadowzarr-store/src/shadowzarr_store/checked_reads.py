"""The logical bytes of one read plan, checked before any cache keeps them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowzarr_store.array_checks import ArrayChecks
    from shadowzarr_store.resolve import ReadPlan
    from shadowzarr_store.source_reader import SourceReader

__all__ = ["read_plan"]


async def read_plan(
    reader: SourceReader, plan: ReadPlan, checks: ArrayChecks | None = None
) -> bytes | memoryview:
    """The logical bytes of ``plan``, checked (``checks``: the whole chunk is decoded as zarr
    will) before they are cached; only bytes that pass every check reach a cache."""
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
