"""Reference file system ↔ Icechunk repository.

:func:`rfs_to_icechunk` writes groups, arrays and attributes as they are and turns every
``[url, offset, size]`` reference, manifest entry and gen chunk into a virtual chunk carrying
the ETag recorded under ``sources``, through Icechunk's array-at-once setter. What Icechunk
cannot point at is written into the repository: inline bytes, short last chunks (which
RfsStore pads) and, when asked, arrays read through a selection.

:func:`icechunk_to_rfs` reads a repository with VirtualiZarr's IcechunkParser and writes what it
finds as references (see :mod:`shadowzarr_icechunk.virtualizarr`).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import ReferenceFileSystem, array_info, array_paths
from shadowzarr_spec.keys import chunk_key, metadata_key
from shadowzarr_spec.model import FileRef, InlineRef
from shadowzarr_store import load_rfs

from shadowzarr_icechunk.chunk_table import (
    INLINE,
    ChunkRefs,
    chunk_tables,
    source_size,
    with_remote_indexes_loaded,
    with_sized_whole_files,
)
from shadowzarr_icechunk.errors import (
    MissingVirtualChunkContainerError,
    SelectionNotSupportedError,
)
from shadowzarr_icechunk.locations import UrlFor, container_prefix, is_covered, location_of
from shadowzarr_icechunk.node_metadata import clean_metadata_bytes

if TYPE_CHECKING:
    import icechunk

__all__ = [
    "Conversion",
    "MissingVirtualChunkContainerError",
    "SelectionNotSupportedError",
    "icechunk_to_rfs",
    "prepare_conversion",
    "required_containers",
    "rfs_to_icechunk",
    "write_conversion",
]

NATIVE_WRITE_CONCURRENCY = 16
_NATIVE_MARK = "icechunk-native://chunks"
_EMPTY_GROUP = b'{"zarr_format":3,"node_type":"group","attributes":{}}'


def rfs_to_icechunk(
    rfs_or_path: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any],
    session: icechunk.Session,
    *,
    copy_selections: bool = False,
    url_for: UrlFor | None = None,
    **store_options: Any,
) -> None:
    """Write a reference file system into a writable Icechunk session (not committed).

    Parameters
    ----------
    rfs_or_path
        A `ReferenceFileSystem` or anything `load_rfs` accepts.
    session
        A writable session; the caller commits it.
    copy_selections
        Read the data of arrays that have a selection and write it into the repository,
        instead of refusing them (their bytes are interleaved with others' in the file).
    url_for
        ``url -> url | None``: the location to record for a source URL (None keeps it), such
        as the ``s3://`` object behind a DANDI download URL. Local paths become ``file://``.
    store_options
        `RfsStore` keyword arguments (``headers``, ``allowed_urls``, ``storage_options``,
        ``proxy``, ``timeout``…) for what the conversion reads itself: the reference file,
        remote chunk manifests, source sizes and the chunks copied into the repository.

    Raises
    ------
    SelectionNotSupportedError
        An array has a selection and ``copy_selections`` is False.
    MissingVirtualChunkContainerError
        The repository has no virtual chunk container for some of the locations; nothing has
        been written then.
    """
    conversion = prepare_conversion(
        rfs_or_path, copy_selections=copy_selections, url_for=url_for, **store_options
    )
    write_conversion(conversion, session)


def required_containers(
    rfs_or_path: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any],
    *,
    url_for: UrlFor | None = None,
    **store_options: Any,
) -> list[str]:
    """The virtual chunk container prefixes a repository needs for these references: the
    server (or bucket) of each remote URL, the folder of each local file. ``store_options``
    as for :func:`rfs_to_icechunk`."""
    return prepare_conversion(
        rfs_or_path, copy_selections=True, url_for=url_for, **store_options
    ).prefixes


@dataclass(frozen=True, slots=True)
class Conversion:
    """What :func:`rfs_to_icechunk` will write: each array's chunk table and which of its
    chunks are copied into the repository rather than pointed at."""

    rfs: ReferenceFileSystem
    tables: dict[str, ChunkRefs]
    native: dict[str, np.ndarray]
    url_for: UrlFor | None
    store_options: dict[str, Any] = field(default_factory=dict, repr=False)
    """`RfsStore` keyword arguments for the chunks copied into the repository."""

    @property
    def locations(self) -> set[str]:
        """The URLs the repository's virtual chunks will point into."""
        urls: set[str] = set()
        for path, table in self.tables.items():
            used = np.unique(table.codes[(table.codes >= 0) & ~self.native[path]])
            urls.update(table.urls[int(code)] for code in used)
        return {self.location(url) for url in urls}

    @property
    def prefixes(self) -> list[str]:
        """A virtual chunk container prefix for each place the locations are in."""
        return sorted({container_prefix(location) for location in self.locations})

    def location(self, url: str) -> str:
        return location_of(url, base=self.rfs.base, url_for=self.url_for)


def prepare_conversion(
    rfs_or_path: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any],
    *,
    copy_selections: bool,
    url_for: UrlFor | None,
    **store_options: Any,
) -> Conversion:
    """Read the references once into chunk tables, refusing selections unless they are
    copied; what is read goes through the transport with ``store_options`` (`RfsStore`'s)."""
    rfs = load_rfs(rfs_or_path, **store_options)
    rfs = with_sized_whole_files(with_remote_indexes_loaded(rfs, store_options), store_options)
    paths = array_paths(rfs)
    if not copy_selections:
        selected = sorted(p for p in paths if p in rfs.selections)
        if selected:
            raise SelectionNotSupportedError(
                f"arrays {selected} are read through a selection (their bytes are interleaved "
                "with others in the file), which Icechunk cannot point at; pass "
                "copy_selections=True to copy their data into the repository"
            )
    tables = chunk_tables(rfs, paths)
    sizes: dict[str, int | None] = {}
    native = {
        path: _native_mask(rfs, path, table, copy_selections, url_for, sizes, store_options)
        for path, table in tables.items()
    }
    return Conversion(rfs, tables, native, url_for, dict(store_options))


def write_conversion(conversion: Conversion, session: icechunk.Session) -> None:
    """Write a prepared conversion into a writable session (see :func:`rfs_to_icechunk`)."""
    from zarr.core.sync import sync

    _check_containers(conversion, session)
    sync(_write(conversion, session))


def icechunk_to_rfs(
    session: icechunk.Session,
    *,
    native_chunks_prefix: str | None = None,
    url_for: UrlFor | None = None,
) -> ReferenceFileSystem:
    """The references of what a repository session holds, read with VirtualiZarr's
    IcechunkParser.

    A virtual chunk becomes a reference to the same byte range (an array with more than
    1,000 chunks in one file gets a chunk manifest). A chunk the repository stores itself is
    copied in, or referenced at ``native_chunks_prefix`` (the repository's ``chunks``
    directory or its URL) when given. ``url_for`` maps locations RfsStore cannot read, such
    as ``s3://``, to ones it can.
    """
    from obspec_utils.registry import ObjectStoreRegistry
    from virtualizarr.parsers import IcechunkParser
    from zarr.core.sync import sync

    from shadowzarr_icechunk.virtualizarr import manifest_group_to_rfs

    prefix = native_chunks_prefix.rstrip("/") if native_chunks_prefix else _NATIVE_MARK
    manifest_store = IcechunkParser().parse_session(
        session, ObjectStoreRegistry(), native_chunks_prefix=prefix
    )
    rfs = manifest_group_to_rfs(manifest_store._group, url_for=url_for)
    if native_chunks_prefix is None:
        native_keys = [
            key
            for key, ref in rfs.refs.items()
            if not isinstance(ref, InlineRef) and ref.url.startswith(_NATIVE_MARK + "/")
        ]
        copied = sync(_read_keys(session.store, native_keys))
        for key, data in zip(native_keys, copied, strict=True):
            rfs.refs[key] = InlineRef(data)
    return rfs


# -- writing ------------------------------------------------------------------------------


async def _write(conversion: Conversion, session: icechunk.Session) -> None:
    from zarr.core.buffer import default_buffer_prototype

    rfs, tables, native, url_for = (
        conversion.rfs,
        conversion.tables,
        conversion.native,
        conversion.url_for,
    )
    store = session.store
    buffer = default_buffer_prototype().buffer
    metadata_keys = sorted(
        (k for k in rfs.refs if k == "zarr.json" or k.endswith("/zarr.json")),
        key=lambda k: k.count("/"),
    )
    for key in _missing_group_keys(metadata_keys):
        await store.set(key, buffer.from_bytes(_EMPTY_GROUP))
    for key in metadata_keys:
        ref = rfs.refs[key]
        if isinstance(ref, InlineRef):
            await store.set(key, buffer.from_bytes(clean_metadata_bytes(ref.data)))
    copies = ReferenceFileSystem(
        refs={key: rfs.refs[key] for key in metadata_keys},
        selections=rfs.selections,
        sources={
            location_of(url, base=rfs.base, url_for=url_for): source
            for url, source in rfs.sources.items()
        },
        version=2,
    )
    for path, table in tables.items():
        copied = native[path]
        _set_virtual(rfs, path, table, ~copied & (table.codes >= 0), store, url_for)
        for coords in map(tuple, np.argwhere(copied).tolist()):
            key = chunk_key(path, coords)
            code = int(table.codes[coords])
            copies.refs[key] = (
                rfs.refs[key]
                if code == INLINE
                else FileRef(
                    location_of(table.urls[code], base=rfs.base, url_for=url_for),
                    int(table.offsets[coords]),
                    int(table.lengths[coords]),
                )
            )
    written = set(metadata_keys)
    native_keys = [key for key in copies.refs if key not in written]
    if native_keys:
        await _copy_native(copies, native_keys, store, conversion.store_options)


def _missing_group_keys(metadata_keys: list[str]) -> list[str]:
    """``zarr.json`` keys of the groups the references leave implicit: Icechunk stores a node
    without its parents, but zarr then finds no group to open."""
    present = set(metadata_keys)
    missing: set[str] = set()
    for key in metadata_keys:
        parts = key.split("/")[:-2]
        for depth in range(len(parts) + 1):
            parent = metadata_key("/".join(parts[:depth]))
            if parent not in present:
                missing.add(parent)
    return sorted(missing, key=lambda k: k.count("/"))


def _native_mask(
    rfs: ReferenceFileSystem,
    path: str,
    table: ChunkRefs,
    copy_selections: bool,
    url_for: UrlFor | None,
    sizes: dict[str, int | None],
    store_options: dict[str, Any],
) -> np.ndarray:
    """Chunks that go into the repository: inline ones, short (padded) or empty ones of
    uncompressed arrays, and all of a selected array's."""
    written: np.ndarray = table.codes != -1
    if copy_selections and path in rfs.selections:
        return written
    native: np.ndarray = table.codes == INLINE
    info = array_info(rfs, path)
    assert info is not None
    if info.uncompressed:
        # A reference running past the end of its file reads clipped, then padded.
        full = math.prod(info.chunk_shape) * table.virtual.dtype.itemsize
        for url in table.urls:
            if url not in sizes:  # one stat or HEAD per file, whatever the number of arrays
                sizes[url] = source_size(rfs, url, url_for, store_options)
        unknown = np.iinfo(np.int64).max
        size_of_code = np.array(
            [unknown if sizes[url] is None else sizes[url] for url in table.urls] + [unknown],
            dtype=np.int64,
        )
        referenced = table.codes >= 0
        file_sizes = size_of_code[np.where(referenced, table.codes, len(table.urls))]
        readable = np.minimum(table.lengths, np.maximum(file_sizes - table.offsets, 0))
        native |= referenced & (readable < full)
    else:
        native |= (table.codes >= 0) & (table.lengths == 0)
    return native


def _set_virtual(
    rfs: ReferenceFileSystem,
    path: str,
    table: ChunkRefs,
    virtual: np.ndarray,
    store: icechunk.IcechunkStore,
    url_for: UrlFor | None,
) -> None:
    """One array-at-once call per distinct ETag (local files have none: one call)."""
    if not virtual.any():
        return
    by_etag: dict[str | None, list[int]] = {}
    for code, url in enumerate(table.urls):
        source = rfs.sources.get(url)
        etag = source.etag if source is not None else None
        by_etag.setdefault(_icechunk_checksum(etag), []).append(code)
    locations = np.array(
        [location_of(url, base=rfs.base, url_for=url_for) for url in table.urls] + [""],
        dtype=object,
    )
    offsets = table.offsets.astype(np.uint64).ravel()
    lengths = table.lengths.astype(np.uint64).ravel()
    flat_codes = np.where(virtual, table.codes, len(table.urls)).ravel()
    for etag, codes in by_etag.items():
        picked = np.isin(flat_codes, codes)
        if not picked.any():
            continue
        chosen = np.where(picked, flat_codes, len(table.urls))
        failed = store.set_virtual_refs_arr(
            path,
            table.grid,
            locations[chosen].tolist(),
            offsets,
            lengths,
            validate_containers=True,
            checksum=etag,
        )
        if failed:
            urls = {str(locations[flat_codes[np.ravel_multi_index(c, table.grid)]]) for c in failed}
            raise MissingVirtualChunkContainerError(sorted({container_prefix(u) for u in urls}))


def _icechunk_checksum(etag: str | None) -> str | None:
    """The ETag as Icechunk wants it: Icechunk drops one pair of surrounding quotes before
    sending ``If-Match`` (S3 takes either form), while HTTP servers such as nginx compare the
    quoted entity tag, so a quoted ETag gets one more pair to keep its own."""
    if etag is not None and len(etag) >= 2 and etag.startswith('"') and etag.endswith('"'):
        return f'"{etag}"'
    return etag


async def _copy_native(
    rfs: ReferenceFileSystem,
    keys: list[str],
    store: icechunk.IcechunkStore,
    store_options: dict[str, Any],
) -> None:
    """Read chunks through RfsStore (which pads short ones and applies selections) and write
    their bytes into the repository. ``rfs`` holds those chunks at their final locations."""
    from shadowzarr_store import RfsStore
    from zarr.core.buffer import default_buffer_prototype

    prototype = default_buffer_prototype()
    # the stored chunks' bytes, not shards of them
    source = RfsStore(rfs, **{**store_options, "grouped_view": 0, "sharded_view": 0})
    limit = asyncio.Semaphore(NATIVE_WRITE_CONCURRENCY)

    async def copy(key: str) -> None:
        async with limit:
            data = await source.get(key, prototype)
            if data is None:
                return
            await store.set(key, data)

    try:
        await asyncio.gather(*(copy(key) for key in keys))
    finally:
        source.close()


def _check_containers(conversion: Conversion, session: icechunk.Session) -> None:
    containers = session.config.virtual_chunk_containers or {}
    prefixes = [container.url_prefix for container in containers.values()]
    missing = {
        container_prefix(location)
        for location in conversion.locations
        if not is_covered(location, prefixes)
    }
    if missing:
        raise MissingVirtualChunkContainerError(sorted(missing))


async def _read_keys(store: icechunk.IcechunkStore, keys: Iterable[str]) -> list[bytes]:
    from zarr.core.buffer import default_buffer_prototype

    prototype = default_buffer_prototype()
    limit = asyncio.Semaphore(NATIVE_WRITE_CONCURRENCY)

    async def read(key: str) -> bytes:
        async with limit:
            buffer = await store.get(key, prototype)
            if buffer is None:
                raise KeyError(key)
            return buffer.to_bytes()

    return list(await asyncio.gather(*(read(key) for key in keys)))
