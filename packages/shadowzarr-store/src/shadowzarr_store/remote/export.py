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

from shadowzarr_store.resolve import SourceValue, plan_read

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
    store: RfsStore, caches: Caches, target: str | os.PathLike[str], include_cache: bool = True
) -> Path:
    """Write ``store``'s references to directory ``target``, with its cached chunks inside."""
    rfs = store.rfs
    warm: dict[str, bytes] = {}
    if include_cache:
        keys = [key async for key in store.list_prefix("") if array_of_chunk_key(key) is not None]
        for key in keys:
            data = await _cached_bytes(store, caches, key)
            if data is not None:
                warm[key] = data
    refs = {key: _scrubbed_ref(value) for key, value in rfs.refs.items()}
    for key in warm:
        refs[key] = FileRef(f"{_DATA_DIR}/{key}", 0, len(warm[key]))
    exported = dataclasses.replace(
        rfs,
        refs=refs,
        indexes={path: _portable_index(rfs, path) for path in rfs.indexes},
        sources={scrub_url(url): info for url, info in rfs.sources.items()},
        base=None,
    )
    folder = write_rfs(exported, target)
    for key, data in warm.items():
        chunk_file = folder / _DATA_DIR / key
        chunk_file.parent.mkdir(parents=True, exist_ok=True)
        chunk_file.write_bytes(data)
    return folder


def _portable_index(rfs: ReferenceFileSystem, path: str) -> IndexRef:
    """A chunk index that no longer depends on where the references were read from: a table
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


async def _cached_bytes(store: RfsStore, caches: Caches, key: str) -> bytes | None:
    """The source bytes of chunk ``key`` if a cache holds them (exactly as they were read)."""
    value = await store._resolver.resolve(key)  # same package: the store's own resolver
    if not isinstance(value, SourceValue):
        return None
    if value.offset is None:
        start, end = 0, -1
    else:
        plan = plan_read(value, None)
        if plan.start != value.offset:
            return None
        start, end = plan.start, plan.end
    identity = store._reader.identity(value.url)  # same package: the store's own resolver
    if caches.memory is not None:
        data = caches.memory.get(identity, start, end)
        if data is not None:
            return data
    if caches.disk is not None:
        return caches.disk.get(identity, start, end)
    return None
