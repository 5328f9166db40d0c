"""open_rfs: a reference file system as a read-only zarr group, in one call."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import zarr
from shadowzarr_spec import ReferenceFileSystem, ReferenceFormatError
from zarr.errors import NodeNotFoundError

from shadowzarr_store.notebook_display import register_notebook_display
from shadowzarr_store.references import load_rfs
from shadowzarr_store.rfs_store import RfsStore
from shadowzarr_store.worker_threads import start_workers

if TYPE_CHECKING:
    from zarr import Array, Group

__all__ = ["open_rfs", "open_rfs_array", "open_rfs_store"]


def open_rfs(
    source: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any], **options: Any
) -> Group:
    """Open references as a read-only `zarr.Group` (zarr's own; in a notebook it and its
    arrays display as the store's tree, `notebook_display`, and ``group.store`` shows the whole
    tree, ``group.store.traffic`` what reading has cost).

    Parameters
    ----------
    source
        A ``.json`` reference file, a reference directory, an http(s), ``s3://``, ``gs://`` or
        ``az://`` URL to either, an in-memory rfs dict or a `ReferenceFileSystem`.
    **options
        `RfsStore` options (``validate_sources``, ``merge_gap``, ``local_cache``, …).
    """
    store = open_rfs_store(source, **options)
    register_notebook_display()
    try:
        return zarr.open_group(store, mode="r", zarr_format=3)
    except NodeNotFoundError as exc:
        raise ReferenceFormatError(
            f"{store!r}: the references hold no root group (no zarr.json at the root)"
        ) from exc


def open_rfs_array(
    source: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any],
    path: str = "",
    **options: Any,
) -> Array[Any]:
    """Open one array of references as a read-only `zarr.Array` (``path`` inside the rfs).

    Not to be confused with ``shadowzarr.open_array`` (and `shadowzarr_store.remote.
    open_remote_array`), which open one dataset of a *source file* as a `RemoteArray`.
    """
    store = open_rfs_store(source, **options)
    register_notebook_display()
    try:
        return zarr.open_array(store, path=path, mode="r", zarr_format=3)
    except NodeNotFoundError as exc:
        raise ReferenceFormatError(f"{store!r}: the references hold no array {path!r}") from exc


def open_rfs_store(
    source: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any], **options: Any
) -> RfsStore:
    """The `RfsStore` over ``source``'s references (remote references are loaded with the
    store's own access options; an array whose codec is not installed opens, and refuses its
    first read). zarr's worker threads start meanwhile (`worker_threads`), so that the first
    read does not start them."""
    store = RfsStore(load_rfs(source, **options), **options)
    start_workers()
    return store
