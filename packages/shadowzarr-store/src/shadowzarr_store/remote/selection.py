"""Which stored chunks a selection touches (a superset for strided slices), as store keys."""

from __future__ import annotations

import itertools
import math
import operator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterator

    import zarr

__all__ = ["chunk_key_of", "chunk_keys", "chunk_selection", "normalize_selection"]


def normalize_selection(selection: Any, shape: tuple[int, ...]) -> tuple[slice, ...]:
    """One slice per axis (integers become one-element slices; ``...`` fills the middle)."""
    items = selection if isinstance(selection, tuple) else (selection,)
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("a selection may hold one Ellipsis at most")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        rest = len(shape) - (len(items) - 1)
        items = items[:at] + (slice(None),) * rest + items[at + 1 :]
    if len(items) > len(shape):
        raise IndexError(f"too many indices: {len(items)} for {len(shape)} dimensions")
    items = items + (slice(None),) * (len(shape) - len(items))
    slices = []
    for item, size in zip(items, shape, strict=True):
        match item:
            case slice():
                start, stop, step = item.indices(size)
                if step < 0:
                    start, stop = stop + 1, start + 1
                slices.append(slice(start, max(start, stop)))
            case _ if hasattr(item, "__index__"):
                index = item.__index__()
                if not -size <= index < size:
                    raise IndexError(f"index {index} out of bounds for size {size}")
                index %= size
                slices.append(slice(index, index + 1))
            case _:
                raise TypeError(f"prefetch selections are slices and integers, got {item!r}")
    return tuple(slices)


def chunk_keys(array: zarr.Array[Any], selection: Any = ()) -> Iterator[str]:
    """Store keys of the stored chunks (shards, when sharded) that ``selection`` reads."""
    shape = array.shape
    grid = array.shards or array.chunks
    slices = normalize_selection(selection, shape)
    if any(part.start >= part.stop for part in slices):
        return
    ranges = [
        range(part.start // size, math.ceil(part.stop / size))
        for part, size in zip(slices, grid, strict=True)
    ]
    prefix = f"{array.path}/" if array.path else ""
    for coords in itertools.product(*ranges):
        yield prefix + array.metadata.encode_chunk_key(coords)


def chunk_key_of(array: zarr.Array[Any], nchunk: int) -> str:
    """Store key of stored chunk number ``nchunk`` (C order over the chunk grid, or the shard
    grid when sharded), as blosc2 numbers chunks."""
    grid = array.shards or array.chunks
    counts = tuple(
        math.ceil(size / step) if size else 0 for size, step in zip(array.shape, grid, strict=True)
    )
    total = math.prod(counts)
    index = operator.index(nchunk)
    if not -total <= index < total:
        raise IndexError(f"chunk {nchunk} out of range: the array has {total} chunks")
    coords = tuple(int(c) for c in np.unravel_index(index % total, counts)) if counts else ()
    prefix = f"{array.path}/" if array.path else ""
    return prefix + array.metadata.encode_chunk_key(coords)


def chunk_selection(array: zarr.Array[Any], nchunk: int) -> tuple[slice, ...]:
    """The region of the array that stored chunk number ``nchunk`` covers."""
    grid = array.shards or array.chunks
    counts = tuple(math.ceil(size / step) for size, step in zip(array.shape, grid, strict=True))
    chunk_key_of(array, nchunk)  # range check
    coords = np.unravel_index(operator.index(nchunk) % math.prod(counts), counts) if counts else ()
    return tuple(
        slice(int(c) * step, min((int(c) + 1) * step, size))
        for c, step, size in zip(coords, grid, array.shape, strict=True)
    )
