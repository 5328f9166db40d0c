"""shadowzarr-store: read reference file systems with zarr-python (RfsStore, open_rfs)."""

from __future__ import annotations

import warnings
from typing import Any

from shadowzarr_spec.errors import (
    ChunkDecodeError,
    ConventionTypeWarning,
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
)
from shadowzarr_spec.hdf5_types import read_native

from shadowzarr_store.dask_arrays import to_dask
from shadowzarr_store.local_cache import CacheDamagedWarning, CacheUnavailableWarning, LocalCache
from shadowzarr_store.materialize import (
    ArrayReport,
    MaterializeError,
    MaterializeLimitError,
    MaterializeReport,
    materialize,
)
from shadowzarr_store.memory_cache import MemoryCache
from shadowzarr_store.open_rfs import open_rfs, open_rfs_array, open_rfs_store
from shadowzarr_store.options import StoreOptions
from shadowzarr_store.references import load_rfs, write_rfs
from shadowzarr_store.rfs_store import RfsStore
from shadowzarr_store.store_tree import Traffic, session_traffic
from shadowzarr_store.transport.stats import SESSION_STATS, StatsSnapshot, StoreStats

__version__ = "0.1.0"

__all__ = [
    "SESSION_STATS",
    "ArrayReport",
    "CacheDamagedWarning",
    "CacheUnavailableWarning",
    "ChunkDecodeError",
    "ConventionTypeWarning",
    "LocalCache",
    "MaterializeError",
    "MaterializeLimitError",
    "MaterializeReport",
    "MemoryCache",
    "RfsStore",
    "SourceChangedError",
    "SourceError",
    "SourceNotFoundError",
    "StatsSnapshot",
    "StoreOptions",
    "StoreStats",
    "Traffic",
    "load_rfs",
    "materialize",
    "open_rfs",
    "open_rfs_array",
    "open_rfs_store",
    "read_native",
    "session_traffic",
    "to_dask",
    "write_rfs",
]


def __getattr__(name: str) -> Any:
    # Deprecated in 0.1: ``open_array`` named two functions with different results across the
    # workspace; ``shadowzarr.open_array`` (a RemoteArray of a source file) keeps the name.
    if name == "open_array":
        warnings.warn(
            "shadowzarr_store.open_array is renamed open_rfs_array (it returns a zarr.Array of "
            "references); shadowzarr.open_array opens a source file's dataset as a RemoteArray",
            DeprecationWarning,
            stacklevel=2,
        )
        return open_rfs_array
    raise AttributeError(f"module 'shadowzarr_store' has no attribute {name!r}")
