"""Every chunk of one array of a reference file system as grid-shaped numpy tables.

Refs listed one by one, gen entries and chunk indexes all end up in the same three tables
(which file, offset, length), so the repository side can hand them to Icechunk's
array-at-once setter without a Python object per chunk.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import (
    FileRef,
    ReferenceFileSystem,
    SourceError,
    SourceNotFoundError,
    UnsupportedFeatureError,
    VirtualArray,
)
from shadowzarr_spec.keys import array_of_chunk_key
from shadowzarr_spec.virtual.layout import AffinePiece, ChunkLayout, TablePiece

from shadowzarr_icechunk.locations import UrlFor, local_path, location_of

if TYPE_CHECKING:
    from shadowzarr_spec.model import Ref

__all__ = [
    "INLINE",
    "MISSING",
    "ChunkTable",
    "chunk_table",
    "source_size",
    "with_sized_whole_files",
]

MISSING = -1
"""Code of a chunk never written."""
INLINE = -2
"""Code of a chunk whose bytes the references hold."""


@dataclass(frozen=True, slots=True)
class ChunkTable:
    """The chunks of an array: ``codes`` picks a url of ``urls`` (or MISSING / INLINE)."""

    virtual: VirtualArray
    urls: tuple[str, ...]
    codes: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.codes.shape)


def chunk_table(rfs: ReferenceFileSystem, path: str) -> ChunkTable:
    """The chunk tables of the array at ``path`` (refs, gen entries and chunk index)."""
    virtual = VirtualArray.from_rfs(rfs, path)
    # from_rfs always gives the chunked form, whose layout lists pieces in the stored grid.
    layout: ChunkLayout = virtual._layout  # type: ignore[assignment]
    grid = layout.grid
    codes = np.full(grid, MISSING, dtype=np.int32)
    offsets = np.zeros(grid, dtype=np.int64)
    lengths = np.zeros(grid, dtype=np.int64)
    urls: dict[str, int] = {}
    # Later pieces first: the layout lists the refs-and-index table ahead of gen pieces, and
    # a reader looks a key up in refs before gen, so the table must win.
    for piece in reversed(layout.pieces):
        # The trailing Ellipsis keeps a 0-d array's region a view rather than a scalar.
        region = (
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
    return ChunkTable(virtual, tuple(urls), codes, offsets, lengths)


def with_sized_whole_files(rfs: ReferenceFileSystem) -> ReferenceFileSystem:
    """``rfs`` with each whole-file chunk reference given its size (from ``sources``, or the
    local file), since a virtual chunk is always a byte range."""
    changed: dict[str, Ref] = {}
    for key, ref in rfs.refs.items():
        if not isinstance(ref, FileRef) or ref.offset is not None:
            continue
        if array_of_chunk_key(key) is None:
            continue
        changed[key] = FileRef(ref.url, 0, _whole_file_size(rfs, ref.url))
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


def source_size(rfs: ReferenceFileSystem, url: str, url_for: UrlFor | None = None) -> int | None:
    """The size of a source file: recorded under ``sources``, else the local file's, else what
    an HTTP server answers to HEAD; None when none of them says."""
    source = rfs.sources.get(url)
    if source is not None and source.size is not None:
        return source.size
    location = location_of(url, base=rfs.base, url_for=url_for)
    path = local_path(location)
    if path is not None:
        try:
            return os.stat(path).st_size
        except FileNotFoundError as exc:
            raise SourceNotFoundError(f"the referenced file {path} does not exist") from exc
    if location.startswith(("http://", "https://")):
        request = urllib.request.Request(location, method="HEAD")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                length = response.headers.get("Content-Length")
        except (urllib.error.URLError, TimeoutError) as exc:
            raise SourceError(f"asking {location} for its size failed: {exc}") from exc
        return int(length) if length is not None else None
    return None


def _whole_file_size(rfs: ReferenceFileSystem, url: str) -> int:
    size = source_size(rfs, url)
    if size is not None:
        return size
    raise UnsupportedFeatureError(
        f"a chunk references all of {url}, whose size the references do not record; a virtual "
        "chunk needs a byte range"
    )
