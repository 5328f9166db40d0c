"""Chunk manifests: (offset, nbytes) of every chunk of a large array, as a plain Zarr v3 array.

The layout matches the Zarr sharding index: uint64, shaped like the chunk grid plus a last axis of
2, 2**64-1 for chunks never written. shadowzarr writes it chunked so that one index chunk covers
about 65,536 data chunks and compressed with Blosc (zstd, byte shuffle), so a reader fetches one
small index chunk for a whole region of the recording and any Zarr library can read the index
itself. Readers do not assume this chunking: see `shadowzarr_spec.manifest_layout`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Final

import numcodecs
import numpy as np

from shadowzarr_spec.model import MISSING_CHUNK

__all__ = [
    "CHUNKS_PER_INDEX_CHUNK",
    "encode_index_chunks",
    "index_array_metadata",
    "index_chunk_shape",
    "new_index_table",
]

CHUNKS_PER_INDEX_CHUNK: Final = 65_536
_BLOSC: Final = numcodecs.Blosc(
    cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE, blocksize=0
)
_MISSING: Final = int(MISSING_CHUNK)


def new_index_table(grid_shape: Sequence[int]) -> np.ndarray:
    """An index with every chunk missing, to fill in."""
    return np.full((*grid_shape, 2), MISSING_CHUNK, dtype=np.uint64)


def index_chunk_shape(
    grid_shape: Sequence[int], target: int = CHUNKS_PER_INDEX_CHUNK
) -> tuple[int, ...]:
    """Keep trailing grid axes whole while they fit ``target``; cut the next one to fit."""
    shape = [1] * len(grid_shape)
    covered = 1
    for axis in range(len(grid_shape) - 1, -1, -1):
        extent = max(1, int(grid_shape[axis]))
        if covered * extent <= target:
            shape[axis] = extent
            covered *= extent
        else:
            shape[axis] = max(1, target // covered)
            break
    return (*shape, 2)


def index_array_metadata(grid_shape: Sequence[int]) -> dict[str, Any]:
    """The zarr.json of an index array."""
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [*map(int, grid_shape), 2],
        "data_type": "uint64",
        "chunk_grid": {
            "name": "regular",
            "configuration": {"chunk_shape": list(index_chunk_shape(grid_shape))},
        },
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": _MISSING,
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {
                "name": "blosc",
                "configuration": {
                    "cname": "zstd",
                    "clevel": 5,
                    "shuffle": "shuffle",
                    "typesize": 8,
                    "blocksize": 0,
                },
            },
        ],
        "attributes": {},
        "storage_transformers": [],
    }


def encode_index_chunks(table: np.ndarray) -> Iterator[tuple[tuple[int, ...], bytes]]:
    """Every chunk of the index array as (chunk coordinates, compressed bytes)."""
    grid_shape = table.shape[:-1]
    chunk_shape = index_chunk_shape(grid_shape)
    counts = [math.ceil(s / c) for s, c in zip(grid_shape, chunk_shape[:-1], strict=True)]
    for coords in np.ndindex(*counts):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunk_shape, strict=False))
        block = np.full(chunk_shape, MISSING_CHUNK, dtype="<u8")
        part = table[region]
        block[tuple(slice(0, s) for s in part.shape)] = part
        yield (*coords, 0), bytes(_BLOSC.encode(block))
