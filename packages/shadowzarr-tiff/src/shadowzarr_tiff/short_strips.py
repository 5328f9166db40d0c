"""Compressed pages whose rows per strip do not divide the height: the short last strips.

A Zarr chunk decodes to the full chunk size, but the last strip of such a page decodes to
fewer rows, so its reference alone cannot be read. Its rows are decoded once, padded with
zeros to a whole strip, compressed again with the same (lossless) compressor and kept inline;
Zarr crops the padding away. Every other strip stays a reference. This copies data into the
references, so it is done only within a byte budget, and only for lossless compressors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import imagecodecs
import numpy as np
from shadowzarr_spec import UnsupportedFeatureError

from shadowzarr_tiff.chunks import SeriesChunks

if TYPE_CHECKING:
    from tifffile import TiffPage

__all__ = ["ReadRanges", "is_short_strip_page", "split_short_strips"]

type ReadRanges = Callable[[list[tuple[int, int]]], list[bytes]]
"""Bytes of each [start, stop) range of the source file, fetched together."""


def _same(data: bytes) -> bytes:
    return data


_LOSSLESS: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {
    1: (_same, _same),  # uncompressed strips of pages not stored in one piece
    5: (imagecodecs.lzw_decode, imagecodecs.lzw_encode),
    8: (imagecodecs.zlib_decode, imagecodecs.zlib_encode),
    32946: (imagecodecs.zlib_decode, imagecodecs.zlib_encode),
    32773: (imagecodecs.packbits_decode, imagecodecs.packbits_encode),
    34925: (imagecodecs.lzma_decode, imagecodecs.lzma_encode),
    50000: (imagecodecs.zstd_decode, imagecodecs.zstd_encode),
}


def is_short_strip_page(page: TiffPage) -> bool:
    """Striped, several strips, and the rows per strip do not divide the height."""
    length = int(page.imagelength)
    rows = int(page.rowsperstrip) or length
    return not page.is_tiled and rows < length and length % rows != 0


def split_short_strips(
    page: TiffPage,
    table: SeriesChunks,
    block: tuple[int, ...],
    itemsize: int,
    read_ranges: ReadRanges,
    budget: int,
    where: str,
) -> tuple[SeriesChunks, list[tuple[np.ndarray, bytes]]]:
    """The strips that stay references, and (origin, encoded bytes) of the padded last strips."""
    rows_per_strip, length = block[3], int(page.imagelength)
    refusal = f"{where}: {rows_per_strip} rows per strip do not divide the image height {length}"
    codec = _LOSSLESS.get(int(page.compression))
    if codec is None or int(page.bitspersample) not in {8, 16, 32, 64, 128}:
        raise UnsupportedFeatureError(
            f"{refusal}, and the last strip of each page, which decodes short, is stored with "
            f"a lossy or bit-packing codec that cannot be padded"
        )
    last_start = (math.ceil(length / rows_per_strip) - 1) * rows_per_strip
    short = table.origins[:, 3] == last_start
    total = int(table.sizes[short].sum())
    if total > budget:
        raise UnsupportedFeatureError(
            f"{refusal}: the short last strips ({total} bytes) exceed max_inline_bytes "
            f"({budget}), the most data copied into the references"
        )
    decode, encode = codec
    row_bytes = block[4] * block[5] * itemsize
    expected = (length - last_start) * row_bytes
    padding = bytes(rows_per_strip * row_bytes - expected)
    ranges = [
        (int(o), int(o) + int(s))
        for o, s in zip(table.offsets[short], table.sizes[short], strict=True)
    ]
    inline = []
    for origin, data in zip(table.origins[short], read_ranges(ranges), strict=True):
        raw = bytes(decode(data))
        if len(raw) < expected:
            raise UnsupportedFeatureError(
                f"{where}: a last strip decodes to {len(raw)} bytes, expected {expected}"
            )
        inline.append((origin, bytes(encode(raw[:expected] + padding))))
    kept = ~short
    return SeriesChunks(table.origins[kept], table.offsets[kept], table.sizes[kept]), inline
