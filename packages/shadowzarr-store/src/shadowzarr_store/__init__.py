"""shadowzarr-store: read reference file systems with zarr-python (RfsStore, open_rfs)."""

from __future__ import annotations

from shadowzarr_spec.errors import (
    ChunkDecodeError,
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
)

from shadowzarr_store.local_cache import CacheDamagedWarning, CacheUnavailableWarning, LocalCache
from shadowzarr_store.materialize import ArrayReport, MaterializeError, MaterializeReport, materialize
from shadowzarr_store.memory_cache import MemoryCache
from shadowzarr_store.open_rfs import open_array, open_rfs
from shadowzarr_store.references import load_rfs
from shadowzarr_store.options import StoreOptions
from shadowzarr_store.rfs_store import RfsStore
from shadowzarr_store.transport.stats import StatsSnapshot, StoreStats

__version__ = "0.1.0"

__all__ = [
    "ArrayReport",
    "CacheDamagedWarning",
    "CacheUnavailableWarning",
    "ChunkDecodeError",
    "LocalCache",
    "MaterializeError",
    "MaterializeReport",
    "MemoryCache",
    "RfsStore",
    "SourceChangedError",
    "SourceError",
    "SourceNotFoundError",
    "StatsSnapshot",
    "StoreOptions",
    "StoreStats",
    "load_rfs",
    "materialize",
    "open_array",
    "open_rfs",
]
