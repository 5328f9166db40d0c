"""Copying an array's chunks as stored, verifying a copy against its source, and the bounds
checked before anything is written."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from typing import Any

from shadowzarr_spec import ReferenceFileSystem
from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_spec.keys import array_of_chunk_key, chunk_grid_shape, join, metadata_key
from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.buffer.cpu import Buffer

from shadowzarr_store.materialize.bounds import chunks_to_write
from shadowzarr_store.materialize.engine import for_each, verify_regions
from shadowzarr_store.materialize.plan import ArrayPlan
from shadowzarr_store.materialize.progress import ProgressReporter, region_bytes
from shadowzarr_store.materialize.report import MaterializeError, MaterializeLimitError

__all__ = ["check_bounds", "copy_as_stored", "item_bytes", "verify_array"]


def item_bytes(source: Any) -> int:
    """Bytes per value as zarr counts them in ``nbytes`` (also for strings and objects)."""
    return int(source.nbytes) // max(1, int(math.prod(source.shape)))


async def copy_as_stored(
    plan: ArrayPlan,
    source_store: Store,
    dest_store: Store,
    concurrency: int,
    source: Any,
    bar: ProgressReporter,
) -> int:
    """Copy the metadata and every stored chunk byte for byte: the chunks the references list
    (lazily, inside the array's grid), not every position of a grid that may be huge."""
    await dest_store.set(
        metadata_key(plan.path), Buffer.from_bytes(dumps_strict(plan.document).encode())
    )
    configuration = plan.document["chunk_grid"]["configuration"]
    grid = chunk_grid_shape(plan.document["shape"], configuration["chunk_shape"])
    chunk_shape = tuple(configuration["chunk_shape"])
    shape = tuple(plan.document["shape"])
    itemsize = item_bytes(source)
    written = 0

    async def chunk_keys() -> AsyncIterator[tuple[str, tuple[int, ...]]]:
        async for key in source_store.list_prefix(join(plan.path, "c")):
            split = array_of_chunk_key(key)
            if split is None or split[0] != plan.path or len(split[1]) != len(grid):
                continue
            if all(c < g for c, g in zip(split[1], grid, strict=True)):
                yield key, split[1]

    async def one(item: tuple[str, tuple[int, ...]]) -> None:
        nonlocal written
        key, coords = item
        data = await source_store.get(key, prototype=default_buffer_prototype())
        if data is not None:
            await dest_store.set(key, data)
            written += len(data)
        region = tuple(
            slice(c * step, min((c + 1) * step, size))
            for c, step, size in zip(coords, chunk_shape, shape, strict=True)
        )
        bar.advance("copy", plan.path, region_bytes(region, itemsize))

    await for_each(chunk_keys(), one, concurrency=concurrency)
    return written


async def verify_array(
    path: str,
    source: Any,
    dest: Any,
    all_regions: Sequence[Any],
    concurrency: int,
    bar: ProgressReporter,
) -> None:
    itemsize = item_bytes(source)

    def checked(region: tuple[slice, ...]) -> None:
        bar.advance("verify", path, region_bytes(region, itemsize))

    mismatches = await verify_regions(
        source, dest, all_regions, concurrency=concurrency, on_done=checked
    )
    bar.array_done("verify", path)
    if mismatches:
        raise MaterializeError(
            f"array {path!r}: {len(mismatches)} regions differ after writing, first {mismatches[0]}"
        )


def check_bounds(
    rfs: ReferenceFileSystem, arrays: list[ArrayPlan], verify: bool, max_chunks: int
) -> None:
    for path, count in chunks_to_write(rfs, arrays, verify).items():
        if count > max_chunks:
            raise MaterializeLimitError(
                f"array {path!r} would take {count} chunks, more than max_chunks={max_chunks}: "
                "pass a larger max_chunks (or larger chunks through layout) to copy it anyway"
            )
