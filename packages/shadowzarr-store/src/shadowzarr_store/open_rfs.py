"""open_rfs: a reference file system as a read-only zarr group, in one call."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import zarr
from shadowzarr_spec import ReferenceFileSystem, ReferenceFormatError
from zarr.errors import NodeNotFoundError

from shadowzarr_store.references import load_rfs
from shadowzarr_store.rfs_store import RfsStore

if TYPE_CHECKING:
    from zarr import Array, Group

__all__ = ["open_array", "open_rfs"]


def open_rfs(
    source: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any], **options: Any
) -> Group:
    """Open references as a read-only `zarr.Group`.

    Parameters
    ----------
    source
        A ``.json`` reference file, a reference directory, an http(s), ``s3://``, ``gs://`` or
        ``az://`` URL to either, an in-memory rfs dict or a `ReferenceFileSystem`.
    **options
        `RfsStore` options (``validate_sources``, ``merge_gap``, ``local_cache``, …).
    """
    store = _store(source, options)
    try:
        return zarr.open_group(store, mode="r", zarr_format=3)
    except NodeNotFoundError as exc:
        raise ReferenceFormatError(
            f"{store!r}: the references hold no root group (no zarr.json at the root)"
        ) from exc


def open_array(
    source: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any],
    path: str = "",
    **options: Any,
) -> Array[Any]:
    """Open one array of references as a read-only `zarr.Array` (``path`` inside the rfs)."""
    store = _store(source, options)
    try:
        return zarr.open_array(store, path=path, mode="r", zarr_format=3)
    except NodeNotFoundError as exc:
        raise ReferenceFormatError(f"{store!r}: the references hold no array {path!r}") from exc


def _store(source: Any, options: dict[str, Any]) -> RfsStore:
    """The store over ``source``'s references (an array whose codec is not installed opens, and
    refuses its first read)."""
    return RfsStore(load_rfs(source, **options), **options)
