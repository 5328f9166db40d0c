"""What every part of one generation shares: the open file, where chunks point, the options."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import h5py

from .format.chunk_index import ChunkLocations
from .object_paths import ObjectPaths, object_address

if TYPE_CHECKING:
    from .format.chunk_index import ChunkTable
    from .header_reader import HeaderFile
    from .header_reader.dataset import HeaderDataset

__all__ = ["ChunkLocations", "Options", "Source", "object_address"]


@dataclass(frozen=True, slots=True)
class Options:
    manifest_threshold: int | None = 1000
    contiguous_chunk_bytes: int = 4 * 2**20
    inline_threshold: int = 1024
    inline_unsupported_below: int | None = 2**20
    """Datasets of at most this many bytes that no codec reads are inlined, decoded by HDF5."""
    strict: bool = False
    """Raise on the first dataset no reference describes, instead of omitting it."""


@dataclass(frozen=True, slots=True)
class Source:
    """The HDF5 file being read and where its references point, as the first reads found it.

    Made once, after the file's headers, datasets and chunk indexes have been read, and never
    changed: every later step only reads it."""

    file: h5py.File
    url: str
    """URL or path written into chunk references."""
    base: str
    """Where relative external-storage names resolve (the file's directory or URL)."""
    paths: ObjectPaths
    """The paths references point at (one walk of the links, made when first needed)."""
    read_bytes: Callable[[int, int], bytes] | None = None
    """``read_bytes(offset, size) -> bytes`` of the file, for checks; None when unavailable."""
    offset_shift: int = 0
    """Added to every chunk offset h5py reports (MATLAB files read with HDF5 1.10)."""
    netcdf: bool = False
    """A netCDF-4 file: bookkeeping attributes and placeholder dimensions are left out."""
    netcdf_lengths: Mapping[int, int] = field(default_factory=dict)
    """netCDF-4: unlimited dimension scale address → the dimension's length."""
    netcdf_dimensions: Mapping[int, str] = field(default_factory=dict)
    """netCDF-4: dimension scale address → its dimension's name as netCDF-C gives it."""
    opened: Mapping[int, h5py.Dataset | HeaderDataset] = field(default_factory=dict)
    """Datasets already opened, by object address (the first walk opens each once)."""
    headers: HeaderFile | None = None
    """The header reader, when it can read this file."""
    tables: Mapping[str, ChunkTable] = field(default_factory=dict)
    """Chunk tables parsed ahead of time, by dataset name."""

    def netcdf_dimension_of(self, scale: h5py.Dataset) -> str | None:
        """netCDF-4: the name of the dimension ``scale`` stands for where it is not the scale's
        own name (a dimension reached by several links); None otherwise."""
        if not self.netcdf_dimensions:
            return None
        return self.netcdf_dimensions.get(object_address(scale))
