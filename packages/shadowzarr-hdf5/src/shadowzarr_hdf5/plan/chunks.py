"""Every stored chunk of a chunked dataset: parsed ahead, or h5py's ``chunk_iter`` relabelled where
HDF5 mislabels it; the filter mask most chunks share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import h5py
import numpy as np

from ..context import ChunkLocations, Source

__all__ = ["chunk_locations", "common_mask", "inside_grid"]


def chunk_locations(dataset: h5py.Dataset, source: Source) -> ChunkLocations:
    """Every stored chunk of a chunked dataset (parsed ahead, or through ``chunk_iter``)."""
    table = source.tables.get(dataset.name)
    if table is not None:
        return table.locations  # parsed: offsets already absolute
    count = dataset.id.get_num_chunks()
    rank = len(dataset.shape)
    coords = np.zeros((count, rank), dtype=np.int64)
    offsets = np.zeros(count, dtype=np.uint64)
    sizes = np.zeros(count, dtype=np.uint64)
    masks = np.zeros(count, dtype=np.uint32)
    chunk_shape = dataset.chunks
    position = 0

    def visit(info: Any) -> None:
        nonlocal position
        coords[position] = [o // c for o, c in zip(info.chunk_offset, chunk_shape, strict=True)]
        offsets[position] = info.byte_offset + source.offset_shift
        sizes[position] = info.size
        masks[position] = info.filter_mask
        position += 1

    if count:
        dataset.id.chunk_iter(visit)
    coords = coords[:position]
    if _mislabelled(dataset, coords, offsets[:position], source):
        coords = _relabel_extensible(dataset, coords)
    return ChunkLocations(coords, offsets[:position], sizes[:position], masks[:position])


def _unlimited_axis(dataset: h5py.Dataset) -> int | None:
    maxshape = dataset.maxshape or ()
    unlimited = [i for i, m in enumerate(maxshape) if m is None]
    return unlimited[0] if len(unlimited) == 1 else None


def _mislabelled(
    dataset: h5py.Dataset, coords: np.ndarray, offsets: np.ndarray, source: Source
) -> bool:
    """HDF5 mislabels chunks of extensible-array indexes whose unlimited axis is not the
    first (chunk_iter reports C order over an infinite unlimited axis). Compare one chunk
    h5py reads by coordinates with the bytes at the offset chunk_iter gave for it."""
    axis = _unlimited_axis(dataset)
    if axis in (None, 0) or not len(coords) or source.read_bytes is None:
        return False
    for i in range(min(len(coords), 4)):
        scaled = tuple(int(c) * n for c, n in zip(coords[i], dataset.chunks, strict=True))
        try:
            _mask, stored = dataset.id.read_direct_chunk(scaled)
        except (OSError, ValueError):
            return True  # no chunk at the reported coordinates
        if source.read_bytes(int(offsets[i]), len(stored)) != bytes(stored):
            return True
    return False


def _relabel_extensible(dataset: h5py.Dataset, coords: np.ndarray) -> np.ndarray:
    """The true coordinates of chunk_iter's mislabelled ones (hdf5-chunk-indexes §6.1)."""
    axis = _unlimited_axis(dataset)
    assert axis is not None
    counts = [
        -(-int(m) // c) if m is not None else 0
        for m, c in zip(dataset.maxshape, dataset.chunks, strict=True)
    ]
    # Linear element index: C order over the max grid, the unlimited axis infinitely long,
    # so only the unlimited axis and those after it contribute.
    linear = np.zeros(len(coords), dtype=np.int64)
    for d in range(axis, len(counts)):
        stride = int(np.prod(counts[d + 1 :], dtype=np.int64)) if d + 1 < len(counts) else 1
        linear += coords[:, d] * stride
    # Element order of an extensible array: the unlimited axis first, the others in order.
    out = np.zeros_like(coords)
    rest = linear.copy()
    for d in reversed([d for d in range(len(counts)) if d != axis]):
        out[:, d] = rest % counts[d]
        rest //= counts[d]
    out[:, axis] = rest
    return out


def common_mask(locations: ChunkLocations, shape: Sequence[int], chunk_shape: Sequence[int]) -> int:
    """The filter mask most stored chunks share (0 when there are none): the array's codecs
    skip those filters, and chunks with another mask are re-encoded inline."""
    masks = locations.masks[inside_grid(locations.coords, shape, chunk_shape)]
    if masks.size == 0:
        return 0
    values, counts = np.unique(masks, return_counts=True)
    return int(values[np.argmax(counts)])


def inside_grid(coords: np.ndarray, shape: Sequence[int], chunk_shape: Sequence[int]) -> np.ndarray:
    """Chunks inside the current extent (a shrunk dataset keeps chunks beyond its shape)."""
    if coords.size == 0:
        return np.zeros(len(coords), dtype=bool)
    grid = np.array([-(-s // c) for s, c in zip(shape, chunk_shape, strict=False)], dtype=np.int64)
    return np.all(coords < grid, axis=1)
