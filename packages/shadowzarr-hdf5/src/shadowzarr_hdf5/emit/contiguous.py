"""Slab references for a contiguous block (one gen entry) and references into external files."""

from __future__ import annotations

import math

import h5py
from shadowzarr_spec import RfsBuilder, UnsupportedFeatureError

from ..context import Options, Source
from ..plan.layout import contiguous_chunks, external_segments

__all__ = ["add_contiguous", "add_external"]


def add_contiguous(
    builder: RfsBuilder,
    path: str,
    source: Source,
    *,
    offset: int,
    url: str | None = None,
    shape: tuple[int, ...],
    itemsize: int,
    options: Options,
) -> tuple[int, ...]:
    """Slab references for a contiguous block at ``offset``; returns the chunk shape used.

    The array must have been added with the returned chunk shape: call :func:`contiguous_chunks`
    first.
    """
    chunk_shape = contiguous_chunks(shape, itemsize, options)
    if math.prod(shape) == 0:
        return chunk_shape
    if not shape:  # a scalar: one chunk keyed "c"
        builder.add_chunk(path, (), url or source.url, offset, itemsize)
        return chunk_shape
    builder.add_contiguous_chunks(
        path,
        url=url or source.url,
        start=offset,
        shape=shape,
        chunk_shape=chunk_shape,
        itemsize=itemsize,
    )
    return chunk_shape


def add_external(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset,
    source: Source,
    *,
    shape: tuple[int, ...],
    itemsize: int,
    options: Options,
) -> tuple[int, ...]:
    """References into the external files; the chunk shape is one segment (or one slab)."""
    segments = external_segments(dataset, source)
    total = math.prod(shape) * itemsize
    if len(segments) == 1 or (segments and segments[0][2] >= total):
        url, offset, _ = segments[0]
        return add_contiguous(
            builder, path, source, offset=offset, url=url, shape=shape, itemsize=itemsize,
            options=options,
        )  # fmt: skip
    row_bytes = math.prod(shape[1:]) * itemsize if shape else itemsize
    sizes = {size for _, _, size in segments[:-1]}
    if not shape or len(sizes) != 1 or next(iter(sizes)) % row_bytes:
        raise UnsupportedFeatureError(
            f"dataset {path!r}: external storage segments of sizes {sorted(sizes)} do not split "
            "into whole rows of equal count"
        )
    rows = next(iter(sizes)) // row_bytes
    chunk_shape = (rows, *shape[1:])
    for i, (url, offset, size) in enumerate(segments):
        if i * rows >= shape[0]:
            break
        builder.add_chunk(
            path, (i, *(0 for _ in shape[1:])), url, offset, min(size, rows * row_bytes)
        )
    return chunk_shape
