"""Writing a layout's chunks into an RfsBuilder: gen entries, a chunk manifest, or refs.

Evenly spaced chunks of one file become one gen entry each run, whatever their number. Chunks
listed one by one become a chunk manifest when there are more than the threshold and all are in
one file (the index then holds every chunk of the array, so a reader looks in one place), and
single refs otherwise.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

import numpy as np

from shadowzarr_spec.gen import Dimension, GenEntry
from shadowzarr_spec.keys import join
from shadowzarr_spec.manifest import new_index_table
from shadowzarr_spec.virtual.layout import MISSING, AffinePiece, TablePiece, VirtualChunkLayout

if TYPE_CHECKING:
    from shadowzarr_spec.builder import RfsBuilder

__all__ = ["add_chunks", "fit_affine", "gen_entry", "record_local_sizes"]


def add_chunks(builder: RfsBuilder, path: str, layout: VirtualChunkLayout, threshold: int) -> None:
    affine: list[AffinePiece] = []
    listed: list[TablePiece] = []
    for piece in layout.pieces:
        if isinstance(piece, AffinePiece):
            affine.append(piece)
            continue
        fitted = fit_affine(piece)
        if fitted is not None:
            affine.append(fitted)
        else:
            listed.append(piece)
    n_listed = sum(int(np.count_nonzero(p.codes != MISSING)) for p in listed)
    urls = {p.url for p in affine} | {
        p.urls[c] for p in listed for c in np.unique(p.codes) if 0 <= c < len(p.urls)
    }
    has_inline = any(np.any(p.codes >= len(p.urls)) for p in listed)
    if n_listed > threshold and len(urls) == 1 and not has_inline:
        builder.add_index(path, urls.pop(), _index_table(layout.grid, affine, listed))
        return
    for piece in affine:
        if math.prod(piece.count) == 1:
            builder.add_chunk(path, piece.start, piece.url, piece.base, piece.length)
        else:
            builder.add_gen_entry(path, gen_entry(path, piece))
    for piece in listed:
        if piece.codes.ndim == 0:
            if int(piece.codes) != MISSING:
                _add_scalar_chunk(builder, path, piece)
            continue
        for local in zip(*np.nonzero(piece.codes != MISSING), strict=True):
            coords = tuple(s + int(i) for s, i in zip(piece.start, local, strict=True))
            code = int(piece.codes[local])
            if code >= len(piece.urls):
                builder.add_inline_chunk(path, coords, piece.inline[code - len(piece.urls)])
            else:
                builder.add_chunk(
                    path,
                    coords,
                    piece.urls[code],
                    int(piece.offsets[local]),
                    int(piece.lengths[local]),
                )


def gen_entry(path: str, piece: AffinePiece) -> GenEntry:
    """One gen entry for an evenly spaced piece: a dimension for each axis it spans."""
    parts: list[str] = []
    dimensions: dict[str, Dimension] = {}
    constant = piece.base
    terms: list[str] = []
    for axis, (start, count, stride) in enumerate(
        zip(piece.start, piece.count, piece.strides, strict=True)
    ):
        if count == 1:
            parts.append(str(start))
            continue
        name = f"i{axis}"
        parts.append("{{" + name + "}}")
        dimensions[name] = Dimension(start=start, stop=start + count)
        constant -= start * stride
        if stride:
            terms.append(f"{name} * {stride}")
    offset = " + ".join([str(constant), *terms]) if terms else str(constant)
    key = join(path.strip("/"), "/".join(["c", *parts]))
    return GenEntry(key, piece.url, "{{" + offset + "}}", str(piece.length), dimensions)


def fit_affine(piece: TablePiece) -> AffinePiece | None:
    """The piece as evenly spaced chunks of one file, if it is one (two chunks or more)."""
    codes = piece.codes
    if codes.size < 2 or not np.all(codes == codes.flat[0]):
        return None
    code = int(codes.flat[0])
    if not 0 <= code < len(piece.urls):
        return None
    lengths = piece.lengths
    if not np.all(lengths == lengths.flat[0]):
        return None
    offsets = piece.offsets
    base = int(offsets.flat[0])
    strides = []
    predicted = np.full(offsets.shape, base, dtype=np.int64)
    for axis, extent in enumerate(offsets.shape):
        stride = int(np.take(offsets, 1, axis=axis).flat[0]) - base if extent > 1 else 0
        strides.append(stride)
        shape = [1] * offsets.ndim
        shape[axis] = extent
        predicted = predicted + (np.arange(extent, dtype=np.int64) * stride).reshape(shape)
    if not np.array_equal(predicted, offsets):
        return None
    return AffinePiece(
        piece.urls[code], base, int(lengths.flat[0]), piece.start, piece.count, tuple(strides)
    )


def _index_table(
    grid: tuple[int, ...], affine: list[AffinePiece], listed: list[TablePiece]
) -> np.ndarray:
    table = new_index_table(grid)
    for even in affine:
        offsets, lengths = even.arrays()
        box = table[_region(even.start, even.count)]
        box[..., 0] = offsets.astype(np.uint64)
        box[..., 1] = lengths.astype(np.uint64)
    for listing in listed:
        written = listing.codes != MISSING
        box = table[_region(listing.start, listing.count)]
        box[written, 0] = listing.offsets[written].astype(np.uint64)
        box[written, 1] = listing.lengths[written].astype(np.uint64)
    return table


def _region(start: tuple[int, ...], count: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(s, s + n) for s, n in zip(start, count, strict=True))


def _add_scalar_chunk(builder: RfsBuilder, path: str, piece: TablePiece) -> None:
    """The one chunk of a 0-d array (``np.nonzero`` does not see 0-d tables)."""
    code = int(piece.codes)
    if code >= len(piece.urls):
        builder.add_inline_chunk(path, (), piece.inline[code - len(piece.urls)])
    else:
        builder.add_chunk(path, (), piece.urls[code], int(piece.offsets), int(piece.lengths))


def record_local_sizes(builder: RfsBuilder, layout: VirtualChunkLayout) -> None:
    """Record the size of each local file the chunks point into (unless already recorded): a
    last chunk running past the end of its file reads as padding only where the recorded size
    proves the file ends there."""
    urls: set[str] = set()
    for piece in layout.pieces:
        urls.update([piece.url] if isinstance(piece, AffinePiece) else piece.urls)
    for url in sorted(urls):
        if "://" in url or builder.has_source(url):
            continue
        try:
            size = os.stat(url).st_size
        except OSError:
            continue  # not reachable from here: left unrecorded, so never padded
        builder.add_source(url, size=size)
