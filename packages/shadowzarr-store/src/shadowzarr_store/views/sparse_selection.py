"""Which bytes of a view's shard a sparse selection needs, so that it reads those and not the
packs around them.

An inner chunk of the grouped view packs about a mebibyte of stored chunks (`views.grouped`):
zarr reads whole inner chunks, so 1,000 scattered chunks of 16 B read every pack they touch,
the whole file once the packs outnumber them. A selection that picks points (integer arrays,
masks, coordinates) or strides, and few of a shard's elements, is read here instead: for each
inner chunk it touches, the byte runs of the elements it picks (at most `MAX_RANGES`, at most a
quarter of the inner chunk, else the whole inner chunk), and only those are asked of the store,
which reads the stored chunks they lie in. Their neighbours join across gaps of at most
`SPARSE_GAP` bytes, not the store's ``merge_gap``: the bytes fetched stay about those of the
stored chunks touched, plus `SPARSE_GAP` per chunk at most. The rest of such an inner chunk is
zeros that zarr never decodes into the result: it copies only the picked elements out of it.

A selection of runs of rows or boxes (slices with step 1, integers) keeps zarr's whole inner
chunks and the store's gaps, whose few large requests a dense read needs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from zarr.core.indexing import CoordinateIndexer

if TYPE_CHECKING:
    from zarr.core.indexing import Indexer

__all__ = [
    "MAX_RANGES",
    "RANGED_MIN_BYTES",
    "SPARSE_GAP",
    "SPARSE_SHARE",
    "element_runs",
    "picks_points",
    "sparse_enough",
]

SPARSE_SHARE = 32
"""A selection is read sparsely when it picks at most 1 / this of a shard's elements."""
SPARSE_GAP = 1024
"""The largest gap a sparse selection's reads join across: per stored chunk touched, at most
this many bytes it did not ask for (1,000 chunks: under 1 MiB)."""
RANGED_MIN_BYTES = 64 * 1024
"""Inner chunks smaller than this are read whole (a stored chunk, not a pack of them)."""
MAX_RANGES = 4096
"""Most byte runs asked of one inner chunk; more, and it is read whole."""


def picks_points(selection: Any) -> bool:
    """Whether a shard's selection picks points or strides (integer or Boolean arrays, slices
    of step other than 1), not runs of rows and boxes."""
    if not isinstance(selection, tuple):
        return False
    return any(
        isinstance(part, np.ndarray) or (isinstance(part, slice) and part.step not in (None, 1))
        for part in selection
    )


def sparse_enough(indexer: Indexer, shard_shape: tuple[int, ...]) -> bool:
    """Whether the selection picks at most 1 / `SPARSE_SHARE` of a shard's elements."""
    return math.prod(indexer.shape) * SPARSE_SHARE <= math.prod(shard_shape)


def element_runs(
    indexer: Indexer, chunk_selection: Any, inner_shape: tuple[int, ...], itemsize: int
) -> np.ndarray | None:
    """The byte runs ``(start, end)`` of an inner chunk of ``inner_shape`` (C order) holding
    the elements ``chunk_selection`` picks, as an (n, 2) array; None when the inner chunk is
    better read whole (small, most of it picked, or too many runs)."""
    nbytes = math.prod(inner_shape) * itemsize
    if nbytes < RANGED_MIN_BYTES:
        return None
    offsets = _element_offsets(indexer, chunk_selection, inner_shape, nbytes // itemsize // 4)
    if offsets is None or not len(offsets):
        return None
    breaks = np.flatnonzero(np.diff(offsets) != 1) + 1
    if len(breaks) >= MAX_RANGES:
        return None
    starts = offsets[np.concatenate(([0], breaks))]
    ends = offsets[np.concatenate((breaks - 1, [len(offsets) - 1]))] + 1
    return np.stack((starts, ends), axis=1) * itemsize


def _element_offsets(
    indexer: Indexer, chunk_selection: Any, inner_shape: tuple[int, ...], most: int
) -> np.ndarray | None:
    """Sorted distinct C-order offsets of the picked elements; None for more than ``most``
    or a selection of a kind not expected here."""
    if not isinstance(chunk_selection, tuple) or len(chunk_selection) != len(inner_shape):
        return None
    strides = np.cumprod((1, *inner_shape[:0:-1]))[::-1].astype(np.int64)
    if isinstance(indexer, CoordinateIndexer):  # points: one index array per axis
        parts = [np.asarray(part, dtype=np.int64).ravel() for part in chunk_selection]
        if len({len(part) for part in parts}) != 1 or len(parts[0]) > 4 * most:
            return None
        found = np.unique(sum((p * s for p, s in zip(parts, strides, strict=True)), np.int64(0)))
        return found if len(found) <= most else None
    axes = []  # orthogonal: the picked indices along each axis, their product picked
    for part, length in zip(chunk_selection, inner_shape, strict=True):
        if isinstance(part, slice):
            axes.append(np.arange(*part.indices(length), dtype=np.int64))
        elif isinstance(part, np.ndarray) and part.dtype == bool:
            axes.append(np.flatnonzero(part.ravel()).astype(np.int64))
        elif isinstance(part, np.ndarray):
            axes.append(np.unique(part.astype(np.int64).ravel()))
        elif isinstance(part, int | np.integer):
            axes.append(np.array([int(part)], dtype=np.int64))
        else:
            return None
    if math.prod(len(a) for a in axes) > most:
        return None
    flat = np.zeros((), dtype=np.int64)
    for axis, (picked, stride) in enumerate(zip(axes, strides, strict=True)):
        shape = [1] * len(axes)
        shape[axis] = len(picked)
        flat = flat + (picked * stride).reshape(shape)
    return np.asarray(flat).ravel()
