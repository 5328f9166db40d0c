"""What every part of one generation shares: the open file, where chunks point, the options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np

from .object_paths import ObjectPaths, object_address

__all__ = ["ChunkLocations", "Options", "Source", "object_address"]


@dataclass(frozen=True, slots=True)
class Options:
    chunk_index_threshold: int | None = 1000
    contiguous_chunk_bytes: int = 4 * 2**20
    inline_threshold: int = 1024
    inline_unsupported_below: int | None = 2**20
    """Datasets of at most this many bytes that no codec reads are inlined, decoded by HDF5."""
    strict: bool = False
    """Raise on the first dataset no reference describes, instead of omitting it."""


@dataclass(slots=True)
class Source:
    """The HDF5 file being read and where its references point."""

    file: h5py.File
    url: str
    """URL or path written into chunk references."""
    base: str
    """Where relative external-storage names resolve (the file's directory or URL)."""
    offset_shift: int = 0
    """Added to every chunk offset h5py reports (MATLAB files read with HDF5 1.10)."""
    read_bytes: Any = None
    """``read_bytes(offset, size) -> bytes`` of the file, for checks; None when unavailable."""
    tables: dict[str, Any] = field(default_factory=dict)
    """Chunk tables parsed ahead of time, by dataset path."""
    netcdf: bool = False
    """A netCDF-4 file: bookkeeping attributes and placeholder dimensions are left out."""
    netcdf_lengths: dict[int, int] = field(default_factory=dict)
    """netCDF-4: unlimited dimension scale address → the dimension's length."""
    opened: dict[int, Any] = field(default_factory=dict)
    """Datasets already opened, by object address (the first walk opens each once)."""
    headers: Any = None
    """The header reader (a HeaderFile), when it can read this file."""
    paths: ObjectPaths = field(init=False)
    """The paths references point at (one walk of the links, made when first needed)."""

    def __post_init__(self) -> None:
        self.paths = ObjectPaths(self.file)


@dataclass(frozen=True, slots=True)
class ChunkLocations:
    """Where each stored chunk of a dataset is: numpy arrays, bounded memory for millions."""

    coords: np.ndarray
    """(n, rank) int64 chunk-grid coordinates."""
    offsets: np.ndarray
    """(n,) uint64 absolute file offsets."""
    sizes: np.ndarray
    """(n,) uint64 stored sizes."""
    masks: np.ndarray
    """(n,) uint32 HDF5 filter masks (bit i: filter i skipped)."""

    def __len__(self) -> int:
        return len(self.offsets)
