"""The plan of one dataset: everything :mod:`..emit` writes, decided and read beforehand.

A `DatasetPlan` is a plain frozen value: the array's metadata (type, codecs, fill value, shape,
chunk grid, attributes, dimension names) and one `Placement` saying where its chunks are. Emit
takes it and the builder, and never the HDF5 dataset::

    HDF5 dataset ──plan_dataset──▶ DatasetPlan ──emit_dataset──▶ zarr.json + references
                                   InlineChunks | Slabs | References | StoredChunks
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DatasetPlan", "InlineChunks", "Placement", "References", "Slabs", "StoredChunks"]

type ChunkCoords = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class InlineChunks:
    """Chunks held in the references, already encoded by the array's codecs (none at all for
    an empty array or a block never written)."""

    chunks: Mapping[ChunkCoords, bytes]


@dataclass(frozen=True, slots=True)
class Slabs:
    """One contiguous block at ``offset`` of ``url``, cut into slabs of the chunk shape along
    the first axis (one gen entry; a scalar is one chunk)."""

    url: str
    offset: int
    itemsize: int


@dataclass(frozen=True, slots=True)
class References:
    """Chunks referenced one by one: (coordinates, url, offset, size) each (external storage
    segments, a virtual dataset's source chunks)."""

    chunks: tuple[tuple[ChunkCoords, str, int, int], ...]


@dataclass(frozen=True, slots=True, eq=False)
class StoredChunks:
    """HDF5's own chunks, referenced where they are, plus the chunks re-encoded inline (those
    whose filter mask differs from the codecs, LZF chunks beyond what the codec decodes)."""

    url: str
    coords: np.ndarray
    """(n, rank) int64 chunk coordinates, array-type axes included."""
    offsets: np.ndarray
    sizes: np.ndarray
    as_index: bool
    """Written as one chunk manifest (a large grid) rather than one reference per chunk."""
    inline: Mapping[ChunkCoords, bytes]


type Placement = InlineChunks | Slabs | References | StoredChunks


@dataclass(frozen=True, slots=True)
class DatasetPlan:
    """One array: what its ``zarr.json`` says, and where its chunks are."""

    path: str
    shape: tuple[int, ...]
    data_type: Any
    """A numpy dtype, "string" or the variable-length bytes type."""
    chunk_shape: tuple[int, ...]
    codecs: tuple[dict[str, Any], ...] | None
    """None: the data type's default codecs (an empty array)."""
    fill_value: Any
    attributes: Mapping[str, Any]
    dimension_names: tuple[str | None, ...] | None
    placement: Placement
