"""The stores materialize reads from and writes to, and where it keeps its progress."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shadowzarr_spec import ReferenceFileSystem
from zarr.abc.store import Store
from zarr.storage import LocalStore, MemoryStore

from shadowzarr_store.transport.locations import kind_of
from shadowzarr_store.transport.object_store import zarr_store_for

__all__ = ["open_destination_store", "open_progress_store", "open_source_store", "worker_options"]


def open_source_store(rfs: ReferenceFileSystem, store_options: dict[str, Any]) -> Any:
    """The store materialize reads from, here or on a worker. Chunks copied as stored must be
    the stored bytes, never a sharded or grouped view's index + data."""
    from shadowzarr_store.rfs_store import RfsStore

    return RfsStore(rfs, **{**store_options, "sharded_view": 0, "grouped_view": 0})


def worker_options(store_options: dict[str, Any]) -> dict[str, Any]:
    """The store options a Dask worker's own store takes: all but the caller's cache objects."""
    return {k: v for k, v in store_options.items() if k not in ("local_cache", "memory_cache")}


def open_destination_store(destination: Any, storage_options: Any = None) -> Store:
    if isinstance(destination, Store):
        return destination
    if isinstance(destination, str) and kind_of(destination) == "object_store":
        # s3://bucket/prefix (gs://, az://): configured like the transport reads object stores.
        return zarr_store_for(destination, storage_options, read_only=False)
    Path(destination).mkdir(parents=True, exist_ok=True)
    return LocalStore(str(destination))


def open_progress_store(destination: Any) -> Store:
    """Where progress is kept: beside a local destination (so the destination holds only the
    Zarr hierarchy, and a zip needs no deletes); in memory for other stores (no resume)."""
    if isinstance(destination, Path) or (
        isinstance(destination, str) and kind_of(destination) == "local"
    ):
        target = Path(destination)
        return LocalStore(target.parent / f".{target.name}.materialize-progress")
    if isinstance(destination, LocalStore):
        target = Path(destination.root)
        return LocalStore(target.parent / f".{target.name}.materialize-progress")
    return MemoryStore()
