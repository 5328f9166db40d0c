"""Every chunk of one array of a reference file system as grid-shaped numpy tables.

Refs listed one by one, gen entries and chunk manifests all end up in the same three tables
(which file, offset, length), so the repository side can hand them to Icechunk's
array-at-once setter without a Python object per chunk.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import (
    FileRef,
    IndexRef,
    ReferenceFileSystem,
    SourceNotFoundError,
    UnsupportedFeatureError,
    VirtualArray,
    array_info,
)
from shadowzarr_spec.keys import array_of_chunk_key, join, metadata_key
from shadowzarr_spec.virtual.layout import AffinePiece, TablePiece
from shadowzarr_store import RfsStore, StoreOptions
from shadowzarr_store.source_reader import allows_local_files
from shadowzarr_store.transport import TransportOptions, run_blocking, transport_for

from shadowzarr_icechunk.locations import UrlFor, file_url_path, location_of

if TYPE_CHECKING:
    from shadowzarr_spec.model import Ref

__all__ = [
    "INLINE",
    "MISSING",
    "ChunkRefs",
    "chunk_table",
    "chunk_tables",
    "source_size",
    "with_remote_indexes_loaded",
    "with_sized_whole_files",
]

MISSING = -1
"""Code of a chunk never written."""
INLINE = -2
"""Code of a chunk whose bytes the references hold."""


@dataclass(frozen=True, slots=True)
class ChunkRefs:
    """The chunks of an array: ``codes`` picks a url of ``urls`` (or MISSING / INLINE)."""

    virtual: VirtualArray
    urls: tuple[str, ...]
    codes: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.codes.shape)


def chunk_tables(rfs: ReferenceFileSystem, paths: list[str]) -> dict[str, ChunkRefs]:
    """The chunk tables of the arrays at ``paths``, reading the refs once for all of them."""
    listed = _listed_chunks(rfs, set(paths))
    return {path: chunk_table(rfs, path, listed.get(path, [])) for path in paths}


def chunk_table(
    rfs: ReferenceFileSystem, path: str, listed: list[tuple[tuple[int, ...], Ref]] | None = None
) -> ChunkRefs:
    """The chunk tables of the array at ``path`` (refs, gen entries and chunk manifest).

    ``listed`` is the array's chunks in refs, when the caller has gathered them already.
    """
    if listed is None:
        listed = _listed_chunks(rfs, {path}).get(path, [])
    # VirtualArray.from_rfs reads the gen entries and the chunk manifest; it is given only this
    # array's metadata so that it does not walk every ref of every other array.
    own = ReferenceFileSystem(
        refs={metadata_key(path): rfs.refs[metadata_key(path)]},
        gen=[entry for entry in rfs.gen if entry.key.startswith(join(path, "c"))],
        indexes={path: rfs.indexes[path]} if path in rfs.indexes else {},
        selections={path: rfs.selections[path]} if path in rfs.selections else {},
        version=2,
        base=rfs.base,
    )
    virtual = VirtualArray.from_rfs(own, path)
    layout = virtual.chunk_layout
    grid = layout.grid
    codes = np.full(grid, MISSING, dtype=np.int32)
    offsets = np.zeros(grid, dtype=np.int64)
    lengths = np.zeros(grid, dtype=np.int64)
    urls: dict[str, int] = {}
    # Later pieces first: the layout lists the chunk manifest ahead of gen pieces, and a reader
    # looks a key up in gen before the index, so earlier pieces must win.
    for piece in reversed(layout.pieces):
        # The trailing Ellipsis keeps a 0-d array's region a view rather than a scalar.
        region: tuple[slice | EllipsisType, ...] = (
            *(slice(s, s + c) for s, c in zip(piece.start, piece.count, strict=True)),
            Ellipsis,
        )
        if isinstance(piece, AffinePiece):
            piece_offsets, piece_lengths = piece.arrays()
            codes[region] = urls.setdefault(piece.url, len(urls))
            offsets[region] = piece_offsets
            lengths[region] = piece_lengths
            continue
        assert isinstance(piece, TablePiece)
        mapping = np.array(
            [urls.setdefault(url, len(urls)) for url in piece.urls] + [INLINE] * len(piece.inline),
            dtype=np.int32,
        )
        written = piece.codes != MISSING
        codes[region][written] = mapping[piece.codes[written]]
        offsets[region][written] = piece.offsets[written]
        lengths[region][written] = piece.lengths[written]
    _overlay_listed(listed, urls, codes, offsets, lengths)
    return ChunkRefs(virtual, tuple(urls), codes, offsets, lengths)


def _listed_chunks(
    rfs: ReferenceFileSystem, paths: set[str]
) -> dict[str, list[tuple[tuple[int, ...], Ref]]]:
    """The chunks in refs of each array of ``paths`` (coordinates not yet checked against the
    grid; :func:`_overlay_listed` drops those outside, as readers never ask for them)."""
    grids = {}
    for path in paths:
        info = array_info(rfs, path)
        if info is not None:
            grids[path] = info.grid
    listed: dict[str, list[tuple[tuple[int, ...], Ref]]] = {}
    for key, ref in rfs.refs.items():
        # "a/b/c/1/2" -> ("a/b", (1, 2)); a cheap split, since this runs once per reference
        path, separator, tail = key.rpartition("/c/")
        if separator:
            parts = tail.split("/")
        elif key.endswith("/c"):
            path, parts = key[:-2], []
        else:
            continue
        grid = grids.get(path)
        if grid is None or len(parts) != len(grid):
            continue
        try:
            coords = tuple(map(int, parts))
        except ValueError:  # not a chunk key
            continue
        listed.setdefault(path, []).append((coords, ref))
    return listed


def _overlay_listed(
    listed: list[tuple[tuple[int, ...], Ref]],
    urls: dict[str, int],
    codes: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
) -> None:
    """Refs win over gen entries and the chunk manifest, as they do for readers."""
    if not listed:
        return
    n = len(listed)
    positions = np.empty((n, codes.ndim), dtype=np.int64)
    listed_codes = np.empty(n, dtype=np.int32)
    listed_offsets = np.zeros(n, dtype=np.int64)
    listed_lengths = np.zeros(n, dtype=np.int64)
    for i, (coords, ref) in enumerate(listed):
        positions[i] = coords
        if isinstance(ref, FileRef):
            if ref.offset is None or ref.size is None:
                raise UnsupportedFeatureError(
                    f"a chunk references all of {ref.url}, whose size is not known"
                )
            listed_codes[i] = urls.setdefault(ref.url, len(urls))
            listed_offsets[i] = ref.offset
            listed_lengths[i] = ref.size
        else:
            listed_codes[i] = INLINE
    inside = np.all((positions >= 0) & (positions < np.array(codes.shape, dtype=np.int64)), axis=1)
    if not inside.all():
        positions, listed_codes = positions[inside], listed_codes[inside]
        listed_offsets, listed_lengths = listed_offsets[inside], listed_lengths[inside]
    if codes.ndim == 0:  # the one chunk of a 0-d array
        codes[...], offsets[...], lengths[...] = (
            listed_codes[0],
            listed_offsets[0],
            listed_lengths[0],
        )
        return
    where = tuple(positions.T)
    codes[where] = listed_codes
    offsets[where] = listed_offsets
    lengths[where] = listed_lengths


def with_remote_indexes_loaded(
    rfs: ReferenceFileSystem, store_options: Mapping[str, Any] | None = None
) -> ReferenceFileSystem:
    """``rfs`` with the chunk manifests of references loaded from a URL read into memory (the
    index arrays are plain Zarr arrays beside refs.json); local ones are read where they are.

    They are read by an `RfsStore` opened with ``store_options`` (its keyword arguments), so
    the user's headers, ``allowed_urls``, ``storage_options`` and proxy apply, and a missing
    index chunk is an error rather than the fill value."""
    remote = {
        path: index
        for path, index in rfs.indexes.items()
        if index.table is None
        and index.path is not None
        and ("://" in index.path or (rfs.base is not None and "://" in rfs.base))
    }
    if not remote:
        return rfs
    indexes = dict(rfs.indexes)
    store = RfsStore(rfs, **dict(store_options or {}))
    try:
        for path, index in remote.items():
            indexes[path] = IndexRef(url=index.url, table=store.index_table(path))
    finally:
        store.close()
    return dataclasses.replace(rfs, indexes=indexes)


def with_sized_whole_files(
    rfs: ReferenceFileSystem, store_options: Mapping[str, Any] | None = None
) -> ReferenceFileSystem:
    """``rfs`` with each whole-file chunk reference given its size (from ``sources``, or the
    local file), since a virtual chunk is always a byte range."""
    changed: dict[str, Ref] = {}
    for key, ref in rfs.refs.items():
        if not isinstance(ref, FileRef) or ref.offset is not None:
            continue
        if array_of_chunk_key(key) is None:
            continue
        changed[key] = FileRef(ref.url, 0, _whole_file_size(rfs, ref.url, store_options))
    if not changed:
        return rfs
    return ReferenceFileSystem(
        refs={**rfs.refs, **changed},
        gen=rfs.gen,
        indexes=rfs.indexes,
        selections=rfs.selections,
        sources=rfs.sources,
        version=rfs.version,
        base=rfs.base,
    )


def source_size(
    rfs: ReferenceFileSystem,
    url: str,
    url_for: UrlFor | None = None,
    store_options: Mapping[str, Any] | None = None,
) -> int | None:
    """The size of a source file: recorded under ``sources``, else the local file's, else what
    its server or object store reports when asked as `RfsStore` with ``store_options`` would
    ask (headers, ``allowed_urls``, ``storage_options``, proxy); None when none of them says."""
    source = rfs.sources.get(url)
    if source is not None and source.size is not None:
        return source.size
    location = location_of(url, base=rfs.base, url_for=url_for)
    path = file_url_path(location)
    if path is not None:
        try:
            return os.stat(path).st_size
        except FileNotFoundError as exc:
            raise SourceNotFoundError(f"the referenced file {path} does not exist") from exc
    options = StoreOptions.from_kwargs(store_options or {})
    transport_options = options.transport(allow_local_files=allows_local_files(rfs, options))
    return run_blocking(_probe_size(location, transport_options))


async def _probe_size(location: str, options: TransportOptions) -> int | None:
    """The size a server (or object store) reports, through the store's transport."""
    transport = transport_for(options)
    try:
        return (await transport.probe(location)).size
    finally:
        await transport.aclose()


def _whole_file_size(
    rfs: ReferenceFileSystem, url: str, store_options: Mapping[str, Any] | None
) -> int:
    size = source_size(rfs, url, store_options=store_options)
    if size is not None:
        return size
    raise UnsupportedFeatureError(
        f"a chunk references all of {url}, whose size the references do not record; a virtual "
        "chunk needs a byte range"
    )
