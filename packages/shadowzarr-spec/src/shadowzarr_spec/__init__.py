"""shadowzarr-spec: the reference file system format, its builder, writer and loader."""

from __future__ import annotations

import warnings
from typing import Any

from shadowzarr_spec.arrays import ArrayInfo, array_info, array_paths
from shadowzarr_spec.attribute_conventions import (
    BYTES_CONVENTION,
    COMPLEX_CONVENTION,
    NON_FINITE_CONVENTION,
    decode_attributes,
    encode_attributes,
)
from shadowzarr_spec.builder import RfsBuilder, columns_selection
from shadowzarr_spec.errors import (
    BuilderError,
    ChunkDecodeError,
    ConventionTypeWarning,
    DatasetNotFoundError,
    GenExpressionError,
    NotVirtualizable,
    ReferenceFormatError,
    ShadowzarrError,
    SourceAccessError,
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
    UnsafePathError,
    UnsupportedDatasetWarning,
    UnsupportedFeatureError,
)
from shadowzarr_spec.gen import Dimension, GenEntry
from shadowzarr_spec.io import REFS_FILE, load_index_table, read_local_rfs, write_rfs
from shadowzarr_spec.json_text import node_type, parse_json
from shadowzarr_spec.manifest import index_array_metadata, index_chunk_shape
from shadowzarr_spec.manifest_layout import ManifestLayout
from shadowzarr_spec.model import (
    MISSING_CHUNK,
    FileRef,
    IndexRef,
    InlineRef,
    Ref,
    ReferenceFileSystem,
    Selection,
    SourceInfo,
    UnsupportedDataset,
)
from shadowzarr_spec.parse import rfs_from_json
from shadowzarr_spec.region_references import RegionReference, region_references
from shadowzarr_spec.serialize import rfs_to_json
from shadowzarr_spec.virtual import VirtualArray, stack

__version__ = "0.1.0"

__all__ = [
    "BYTES_CONVENTION",
    "COMPLEX_CONVENTION",
    "MISSING_CHUNK",
    "NON_FINITE_CONVENTION",
    "REFS_FILE",
    "ArrayInfo",
    "BuilderError",
    "ChunkDecodeError",
    "ConventionTypeWarning",
    "DatasetNotFoundError",
    "Dimension",
    "FileRef",
    "GenEntry",
    "GenExpressionError",
    "IndexRef",
    "InlineRef",
    "ManifestLayout",
    "NotVirtualizable",
    "Ref",
    "ReferenceFileSystem",
    "ReferenceFormatError",
    "RegionReference",
    "RfsBuilder",
    "Selection",
    "ShadowzarrError",
    "SourceAccessError",
    "SourceChangedError",
    "SourceError",
    "SourceInfo",
    "SourceNotFoundError",
    "UnsafePathError",
    "UnsupportedDataset",
    "UnsupportedDatasetWarning",
    "UnsupportedFeatureError",
    "VirtualArray",
    "array_info",
    "array_paths",
    "columns_selection",
    "decode_attributes",
    "encode_attributes",
    "index_array_metadata",
    "index_chunk_shape",
    "load_index_table",
    "node_type",
    "parse_json",
    "read_local_rfs",
    "region_references",
    "rfs_from_json",
    "rfs_to_json",
    "stack",
    "write_rfs",
]


def __getattr__(name: str) -> Any:
    # Deprecated in 0.1: ``load_rfs`` named two functions across the workspace; this package's
    # reads local references only, ``shadowzarr_store.load_rfs`` reads URLs too and keeps the name.
    if name == "load_rfs":
        warnings.warn(
            "shadowzarr_spec.load_rfs is renamed read_local_rfs (local files and dicts only); "
            "shadowzarr_store.load_rfs also reads references at a URL",
            DeprecationWarning,
            stacklevel=2,
        )
        return read_local_rfs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
