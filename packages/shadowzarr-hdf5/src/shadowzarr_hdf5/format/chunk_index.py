"""Chunk tables parsed straight from the index bytes: (coords, offset, size, filter mask) arrays.

Parsing the index ourselves avoids one request per node and HDF5's wrong coordinates for
extensible arrays whose unlimited dimension is not the first (``chunk_iter`` bug, §6.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .btree_v1 import walk_btree1
from .btree_v2 import walk_btree2
from .data_layout import ChunkedLayoutMessage, IndexKind, parse_chunked_layout
from .dataspace import Dataspace, parse_dataspace
from .errors import Hdf5FormatError
from .extensible_array import walk_extensible_array
from .fixed_array import walk_fixed_array
from .index_walk import IndexRecords, Walk, drive
from .object_header import DATASPACE, LAYOUT, read_object_headers
from .superblock import Superblock
from .superblock_extension import read_superblock

if TYPE_CHECKING:
    from .byte_source import RangeFetcher

__all__ = [
    "ChunkLocations",
    "ChunkTable",
    "DatasetIndex",
    "index_walk",
    "read_chunk_tables_at",
    "read_dataset_index",
    "read_dataset_indexes",
]


@dataclass(frozen=True, slots=True, eq=False)
class ChunkLocations:
    """Where each stored chunk of a dataset is: numpy arrays, bounded memory for millions."""

    coords: np.ndarray
    """(n, rank) int64 chunk-grid coordinates (chunk index per dimension)."""
    offsets: np.ndarray
    """(n,) uint64 absolute file offsets (the superblock base already added)."""
    sizes: np.ndarray
    """(n,) uint64 stored (possibly filtered) sizes in bytes."""
    masks: np.ndarray
    """(n,) uint32 HDF5 filter masks (bit i set: filter i of the pipeline was skipped)."""

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass(frozen=True, slots=True, eq=False)
class ChunkTable:
    """Every stored chunk of one dataset, sorted by chunk coordinates (C order), with the
    geometry its index was read with."""

    locations: ChunkLocations
    shape: tuple[int, ...]
    maxshape: tuple[int | None, ...]
    chunk_shape: tuple[int, ...]
    element_size: int
    index_kind: IndexKind

    @property
    def coords(self) -> np.ndarray:
        """(n, rank) int64 chunk coordinates."""
        return self.locations.coords

    @property
    def offsets(self) -> np.ndarray:
        """(n,) uint64 absolute file offsets."""
        return self.locations.offsets

    @property
    def sizes(self) -> np.ndarray:
        """(n,) uint64 stored sizes."""
        return self.locations.sizes

    @property
    def filter_masks(self) -> np.ndarray:
        """(n,) uint32 filter masks."""
        return self.locations.masks

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Chunks per dimension over the current shape."""
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunk_shape, strict=True))

    def __len__(self) -> int:
        return len(self.locations)


@dataclass(frozen=True, slots=True)
class DatasetIndex:
    """What a dataset's object header says about its chunks."""

    address: int
    dataspace: Dataspace
    layout: ChunkedLayoutMessage


def read_dataset_index(source: RangeFetcher, sb: Superblock, address: int) -> DatasetIndex:
    return read_dataset_indexes(source, sb, [address])[0]


def read_dataset_indexes(
    source: RangeFetcher, sb: Superblock, addresses: list[int]
) -> list[DatasetIndex]:
    """Dataspace and layout of many datasets, their headers read in lockstep."""
    out = []
    for header in read_object_headers(source, sb, addresses):
        space, layout = header.find(DATASPACE), header.find(LAYOUT)
        if space is None or layout is None:
            raise Hdf5FormatError(f"object at address {header.address} is not a dataset")
        out.append(
            DatasetIndex(
                header.address, parse_dataspace(space, sb), parse_chunked_layout(layout.data, sb)
            )
        )
    return out


def index_walk(sb: Superblock, layout: ChunkedLayoutMessage, rank: int) -> Walk | None:
    """The level-at-a-time walk of an index, or None for kinds without index structures."""
    if sb.is_undefined(layout.address):
        return None
    match layout.kind:
        case IndexKind.BTREE_V1:
            return walk_btree1(sb, layout.address, rank)
        case IndexKind.BTREE_V2:
            return walk_btree2(sb, layout.address)
        case IndexKind.FIXED_ARRAY:
            return walk_fixed_array(sb, layout.address)
        case IndexKind.EXTENSIBLE_ARRAY:
            return walk_extensible_array(sb, layout.address)
        case _:
            return None


def read_chunk_tables_at(
    source: RangeFetcher, addresses: list[int], *, superblock: Superblock | None = None
) -> list[ChunkTable]:
    """Parse the indexes of the datasets whose object headers are at ``addresses`` (relative to
    the superblock base), in lockstep: rounds grow with index depth, not dataset count.

    ``source`` is a ``RangeFetcher``; a ``RemoteFile``'s caches serve what h5py already read.
    """
    sb = superblock or _superblock_of(source)
    indexes = read_dataset_indexes(source, sb, addresses)
    walks = [index_walk(sb, i.layout, len(i.dataspace.shape)) for i in indexes]
    fetch_nodes = getattr(source, "fetch_nodes", source.fetch_many)  # RemoteFile's node gaps
    expect_round = getattr(source, "expect_round", None)  # RemoteFile: connections opened ahead
    if expect_round is not None:
        expect_round(widest_round(sb, indexes))
    results = iter(drive([w for w in walks if w is not None], fetch_nodes))
    return [
        _table(sb, index, next(results) if walk is not None else None)
        for index, walk in zip(indexes, walks, strict=True)
    ]


def widest_round(sb: Superblock, indexes: list[DatasetIndex]) -> int:
    """About how many requests the widest level of these indexes' lockstep walks needs, known
    before any node is read: a v1 B-tree's leaves each hold at most 2K chunks, so the chunks
    of the current extent (all allocated, as most files have them) need at least that many
    leaves. Other kinds: 0 (their levels are a few blocks, read with few requests)."""
    leaves = 0
    for index in indexes:
        if index.layout.kind != IndexKind.BTREE_V1:
            continue
        shape, chunks = index.dataspace.shape, index.layout.chunk_shape
        count = math.prod(-(-n // max(1, c)) for n, c in zip(shape, chunks, strict=False))
        leaves += -(-count // (2 * sb.chunk_btree_k))
    return leaves


def _superblock_of(source: RangeFetcher) -> Superblock:
    cached = getattr(source, "superblock", None)
    return cached if isinstance(cached, Superblock) else read_superblock(source)


def _table(sb: Superblock, index: DatasetIndex, records: IndexRecords | None) -> ChunkTable:
    layout, space = index.layout, index.dataspace
    rank = len(space.shape)
    chunk = np.array(layout.chunk_shape, dtype=np.int64)
    if records is None:
        coords, offsets, sizes, masks = _without_index(sb, layout, space)
    else:
        offsets = records.offsets
        coords = _coords(layout, space, records.keys, chunk)
        # Unfiltered records store no size or mask: every chunk is whole and unfiltered.
        n = len(offsets)
        sizes = (
            np.full(n, layout.chunk_bytes, np.uint64) if records.sizes is None else records.sizes
        )
        masks = np.zeros(n, np.uint32) if records.masks is None else records.masks
    order = np.lexsort(coords.T[::-1]) if rank else np.arange(len(offsets))
    return ChunkTable(
        ChunkLocations(
            np.ascontiguousarray(coords[order], dtype=np.int64),
            offsets[order].astype(np.uint64),
            sizes[order].astype(np.uint64),
            masks[order].astype(np.uint32),
        ),
        space.shape,
        space.maxshape,
        layout.chunk_shape,
        layout.element_size,
        layout.kind,
    )


def _max_grid(layout: ChunkedLayoutMessage, space: Dataspace) -> list[int]:
    grid = []
    for m, c in zip(space.maxshape, layout.chunk_shape, strict=True):
        grid.append(0 if m is None else -(-m // c))
    return grid


def _coords(
    layout: ChunkedLayoutMessage, space: Dataspace, keys: np.ndarray, chunk: np.ndarray
) -> np.ndarray:
    rank = len(chunk)
    match layout.kind:
        case IndexKind.BTREE_V1:
            return np.asarray(keys[:, :rank] // chunk)
        case IndexKind.BTREE_V2:
            return keys.reshape(-1, rank)
        case IndexKind.FIXED_ARRAY:
            grid = _max_grid(layout, space)
            return np.stack(np.unravel_index(keys, grid), axis=1).reshape(-1, rank)
        case IndexKind.EXTENSIBLE_ARRAY:
            return _rotated_coords(keys, _max_grid(layout, space), space.maxshape.index(None))
    raise Hdf5FormatError(f"index kind {layout.kind!r} has no records")


def _rotated_coords(linear: np.ndarray, grid: list[int], unlimited: int) -> np.ndarray:
    """C order over the max grid with the unlimited dimension moved to the front."""
    others = [g for d, g in enumerate(grid) if d != unlimited]
    stride = math.prod(others)
    coords = np.zeros((len(linear), len(grid)), np.int64)
    coords[:, unlimited] = linear // stride
    rest = np.unravel_index(linear % stride, others) if others else ()
    for column, d in zip(rest, [d for d in range(len(grid)) if d != unlimited], strict=True):
        coords[:, d] = column
    return coords


def _without_index(
    sb: Superblock, layout: ChunkedLayoutMessage, space: Dataspace
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rank = len(space.shape)
    if sb.is_undefined(layout.address) or layout.kind not in (
        IndexKind.SINGLE_CHUNK,
        IndexKind.IMPLICIT,
    ):
        empty = np.zeros(0, np.uint64)
        return np.zeros((0, rank), np.int64), empty, empty, np.zeros(0, np.uint32)
    start = sb.absolute(layout.address)
    if layout.kind == IndexKind.SINGLE_CHUNK:
        size = layout.single_size if layout.single_size is not None else layout.chunk_bytes
        return (
            np.zeros((1, rank), np.int64),
            np.array([start], np.uint64),
            np.array([size], np.uint64),
            np.array([layout.single_mask], np.uint32),
        )
    # Implicit: one array laid out over the max chunk grid; list chunks inside the current extent.
    grid = _max_grid(layout, space)
    current = [-(-s // c) for s, c in zip(space.shape, layout.chunk_shape, strict=True)]
    coords = np.indices(current).reshape(rank, -1).T.astype(np.int64)
    linear = np.asarray(np.ravel_multi_index(tuple(coords.T), grid), dtype=np.uint64)
    offsets = np.uint64(start) + linear * np.uint64(layout.chunk_bytes)
    sizes = np.full(len(offsets), layout.chunk_bytes, np.uint64)
    return coords, offsets, sizes, np.zeros(len(offsets), np.uint32)
