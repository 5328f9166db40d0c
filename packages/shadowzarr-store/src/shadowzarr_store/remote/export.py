"""Portable references with warm data: cached chunks written as files next to ``refs.json``.

Each chunk found in the cache becomes ``data/<key>`` inside the exported directory and its
reference points there (relative, so the directory can move); every other chunk keeps its
source reference. Nothing local or secret is written: no cache path, no credentials (user
info and signature-like query parameters are stripped from URLs).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from shadowzarr_spec import FileRef, IndexRef, InlineRef, write_rfs
from shadowzarr_spec.io import load_index_table
from shadowzarr_spec.keys import array_of_chunk_key
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store.remote.cached_chunks import cached_chunk_bytes
from shadowzarr_store.remote.carrier import mark_carrier

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.remote.policy import Caches
    from shadowzarr_store.rfs_store import RfsStore

__all__ = ["export_references", "scrub_url"]

_DATA_DIR = "data"
_SECRET_PARAMETERS = ("signature", "sig", "token", "key", "credential", "x-amz-", "password")


def scrub_url(url: str) -> str:
    """``url`` without user info or query parameters that look like credentials."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if not any(secret in name.lower() for secret in _SECRET_PARAMETERS)
    ]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


async def export_references(
    store: RfsStore,
    caches: Caches,
    target: str | os.PathLike[str],
    include_cache: bool = True,
    *,
    carried: str | None = None,
) -> Path:
    """Write ``store``'s references to ``target``, with its cached chunks inside.

    A directory keeps each warm chunk as a file under ``data/`` (its source bytes, so the
    array's selections and padding apply as before); a ``.json`` target holds them inline (the
    values zarr decodes). ``carried`` records the array the export is for (`mark_carrier`).
    """
    rfs = store.rfs
    single = Path(target).suffix == ".json"
    warm: dict[str, bytes] = {}
    if include_cache:
        keys = [key async for key in store.list_prefix("") if array_of_chunk_key(key) is not None]
        for key in keys:
            data = await (
                _cached_value(store, caches, key)
                if single
                else cached_chunk_bytes(store, caches, key)
            )
            if data is not None:
                warm[key] = data
    refs: dict[str, InlineRef | FileRef] = {
        key: _scrubbed_ref(value) for key, value in rfs.refs.items()
    }
    for key, data in warm.items():
        refs[key] = InlineRef(data) if single else FileRef(f"{_DATA_DIR}/{key}", 0, len(data))
    exported = dataclasses.replace(
        rfs,
        refs=refs,
        indexes={path: _portable_index(rfs, path) for path in rfs.indexes},
        sources={scrub_url(url): info for url, info in rfs.sources.items()},
        base=None,
    )
    if carried is not None:
        exported = mark_carrier(exported, carried)
    written = write_rfs(exported, target)
    if not single:
        for key, data in warm.items():
            chunk_file = written / _DATA_DIR / key
            chunk_file.parent.mkdir(parents=True, exist_ok=True)
            chunk_file.write_bytes(data)
    return written


async def _cached_value(store: RfsStore, caches: Caches, key: str) -> bytes | None:
    """The value zarr decodes for ``key`` when reading it needs no request (else None)."""
    if await cached_chunk_bytes(store, caches, key) is None:
        return None
    value = await store.get(key, default_buffer_prototype())
    return None if value is None else value.to_bytes()


def _portable_index(rfs: ReferenceFileSystem, path: str) -> IndexRef:
    """A chunk manifest that no longer depends on where the references were read from: a table
    in memory (written anew into the export), or an absolute URL for references on a server."""
    index = rfs.indexes[path]
    url = scrub_url(index.url)
    if index.table is not None or index.path is None:
        return dataclasses.replace(index, url=url)
    base = rfs.base
    if base is not None and "://" in base and "://" not in index.path:
        return IndexRef(url=url, path=scrub_url(f"{base.rstrip('/')}/{index.path}"))
    if "://" in index.path:
        return IndexRef(url=url, path=scrub_url(index.path))
    return IndexRef(url=url, table=load_index_table(rfs, path))


def _scrubbed_ref(value: InlineRef | FileRef) -> InlineRef | FileRef:
    if isinstance(value, FileRef):
        return dataclasses.replace(value, url=scrub_url(value.url))
    return value
