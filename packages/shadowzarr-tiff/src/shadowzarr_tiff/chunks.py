"""Where the bytes of every strip, tile or page of a series are in the file.

Two ways to cut a series into chunks:

* *page* chunks: an uncompressed page whose strips follow each other in the file is one chunk.
  This also reads images whose rows per strip do not divide the height, and a stack whose
  pages are evenly spaced becomes one gen entry however many pages it has.
* *block* chunks: one chunk per strip or tile, as the file stores them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import UnsupportedFeatureError

if TYPE_CHECKING:
    from tifffile import TiffPage, TiffPageSeries

__all__ = [
    "MAX_PAGE_CHUNK_BYTES",
    "SeriesChunks",
    "block_chunks",
    "block_shape",
    "page_chunks",
    "pages_are_contiguous",
    "trusts_dataoffset",
]

MAX_PAGE_CHUNK_BYTES = 64 * 2**20
"""Larger uncompressed pages are read by strips, so that reading a corner does not fetch it all."""


@dataclass(frozen=True, slots=True)
class SeriesChunks:
    """Source chunks of a series: first element in the source stack, offset and size in the file.

    ``evenly_spaced`` is (start, stride) when chunk ``i`` (one per page) is at
    ``start + i * stride``; pages not in the table are missing and read as fill values.
    """

    origins: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    evenly_spaced: tuple[int, int] | None = None


def block_shape(page: TiffPage, where: str) -> tuple[int, int, int, int, int, int]:
    """The source chunk (page, sample, depth, row, column, contiguous sample) of one strip
    or tile of ``page``."""
    _, depth, length, width, contig = page.shaped
    if page.is_tiled:
        return (1, 1, int(page.tiledepth), int(page.tilelength), int(page.tilewidth), contig)
    if depth != 1:
        raise UnsupportedFeatureError(f"{where}: strips of volumes (image depth {depth})")
    return (1, 1, 1, min(int(page.rowsperstrip) or length, length), width, contig)


def trusts_dataoffset(series: TiffPageSeries) -> bool:
    """Whether to read the series as one block from ``series.dataoffset`` without looking at
    every page, as tifffile does: for ImageJ and tifffile's own shaped files, which store
    stacks contiguously (and may hold one IFD only). tifffile's check of other series looks
    only at where each page starts, so their pages are checked strip by strip instead."""
    return series.dataoffset is not None and (
        series.is_truncated or series.kind in ("imagej", "shaped")
    )


def pages_are_contiguous(series: TiffPageSeries, page_bytes: int) -> bool:
    """Whether every present page stores its strips one after another (page chunks work)."""
    for page in series:
        if page is None:
            continue
        offsets, counts = page.dataoffsets, page.databytecounts
        if not offsets or sum(counts) != page_bytes:
            return False
        if any(offsets[i] + counts[i] != offsets[i + 1] for i in range(len(offsets) - 1)):
            return False
    return True


def page_chunks(series: TiffPageSeries, page_bytes: int, count: int) -> SeriesChunks:
    """One chunk per page, each ``page_bytes`` long (``count`` pages, more than the series
    lists when it is truncated: only the first page's IFD was written)."""
    dataoffset = series.dataoffset
    if dataoffset is not None and trusts_dataoffset(series):
        start = int(dataoffset)
        origins = np.zeros((count, 6), dtype=np.int64)
        origins[:, 0] = np.arange(count)
        offsets = start + np.arange(count, dtype=np.int64) * page_bytes
        sizes = np.full(count, page_bytes, dtype=np.int64)
        return SeriesChunks(origins, offsets, sizes, (start, page_bytes))
    present = [(index, page) for index, page in enumerate(series) if page is not None]
    origins = np.zeros((len(present), 6), dtype=np.int64)
    origins[:, 0] = [index for index, _ in present]
    offsets = np.asarray([page.dataoffsets[0] for _, page in present], dtype=np.int64)
    sizes = np.full(len(present), page_bytes, dtype=np.int64)
    return SeriesChunks(origins, offsets, sizes, _spacing(origins[:, 0], offsets, page_bytes))


def block_chunks(series: TiffPageSeries, block: tuple[int, ...], where: str) -> SeriesChunks:
    """One chunk per strip or tile of every page."""
    keyframe = series.keyframe
    separate, depth, length, width, _ = keyframe.shaped
    counts = (
        separate,
        math.ceil(depth / block[2]),
        math.ceil(length / block[3]),
        math.ceil(width / block[4]),
    )
    per_page = math.prod(counts)
    grid = np.stack(np.unravel_index(np.arange(per_page), counts), axis=1)
    local = np.zeros((per_page, 6), dtype=np.int64)
    local[:, 1] = grid[:, 0]
    local[:, 2] = grid[:, 1] * block[2]
    local[:, 3] = grid[:, 2] * block[3]
    local[:, 4] = grid[:, 3] * block[4]
    origins, offsets, sizes = [], [], []
    for index, page in enumerate(series):
        if page is None:
            continue
        if len(page.dataoffsets) != per_page:
            raise UnsupportedFeatureError(
                f"{where}: page {index} has {len(page.dataoffsets)} strips or tiles, "
                f"expected {per_page}"
            )
        page_origins = local.copy()
        page_origins[:, 0] = index
        origins.append(page_origins)
        offsets.append(np.asarray(page.dataoffsets, dtype=np.int64))
        sizes.append(np.asarray(page.databytecounts, dtype=np.int64))
    if not origins:
        empty = np.zeros(0, dtype=np.int64)
        return SeriesChunks(np.zeros((0, 6), dtype=np.int64), empty, empty)
    all_sizes = np.concatenate(sizes)
    written = all_sizes > 0  # a byte count of 0 is a strip never written: it reads as zeros
    return SeriesChunks(
        np.concatenate(origins)[written], np.concatenate(offsets)[written], all_sizes[written]
    )


def _spacing(pages: np.ndarray, offsets: np.ndarray, page_bytes: int) -> tuple[int, int] | None:
    if len(offsets) < 2 or not np.array_equal(pages, np.arange(len(pages))):
        return None
    steps = np.diff(offsets)
    stride = int(steps[0])
    if stride < page_bytes or not np.all(steps == stride):
        return None
    return int(offsets[0]), stride
