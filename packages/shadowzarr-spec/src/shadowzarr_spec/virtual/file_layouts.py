"""Where the bytes of an array stored in a file are, for `VirtualArray`'s constructors: rows in
fixed-size records (every element's byte known), C-ordered chunks in records one after another
along an axis, or chunks listed one by one. Each shape is checked here, before anything points
into a file."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shadowzarr_spec.virtual.layout import MISSING, AffinePiece, TablePiece, VirtualChunkLayout
from shadowzarr_spec.virtual.strided import StridedBytes, default_chunk_rows

__all__ = ["block_layout", "check_offset", "listed_chunk_layout", "normal_shape", "record_bytes"]


def record_bytes(
    url: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    record_size: int,
    skip: int,
    offset: int,
    chunk_rows: int | None,
) -> StridedBytes:
    """Each row (first-axis index) of a shape of at least one axis in a record of
    ``record_size`` bytes, after ``skip`` bytes of header; the first record at ``offset``."""
    row_bytes = math.prod(shape[1:]) * dtype.itemsize
    if record_size <= 0 or skip + row_bytes > max(record_size, 0):
        raise ValueError(
            f"a row of {row_bytes} bytes after {skip} bytes of header does not fit a record "
            f"of {record_size} bytes"
        )
    positions = tuple(_c_positions(shape[1:], dtype.itemsize))
    return StridedBytes(
        url=url,
        first=offset + skip,
        row_stride=record_size,
        n_rows=shape[0],
        positions=positions,
        item_ranges=((0, dtype.itemsize),),
        # Only up to the last row's values: a file may end before the last record's tail.
        upper=offset + max(shape[0] - 1, 0) * record_size + skip + row_bytes,
        chunk_rows=_chunk_rows(chunk_rows, shape[0], record_size),
    )


def block_layout(
    url: str,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    dtype: np.dtype,
    record_size: int,
    offset: int,
    axis: int,
    skip: int,
) -> VirtualChunkLayout:
    """Records of ``record_size`` bytes from ``offset``, each holding one C-ordered chunk of
    ``chunk_shape`` after ``skip`` bytes of header, one after another along ``axis``."""
    if len(chunk_shape) != len(shape) or not 0 <= axis < max(len(shape), 1):
        raise ValueError(f"chunk shape {chunk_shape} and axis {axis} do not fit shape {shape}")
    for k, (extent, chunk) in enumerate(zip(shape, chunk_shape, strict=True)):
        if chunk <= 0 or (k != axis and chunk != extent):
            raise ValueError(
                f"blocks chunk along axis {axis} only: chunk shape {chunk_shape} must equal "
                f"the shape {shape} on every other axis"
            )
    chunk_bytes = math.prod(chunk_shape) * dtype.itemsize
    if skip + chunk_bytes > record_size:
        raise ValueError(
            f"a chunk of {chunk_bytes} bytes after {skip} bytes of header does not fit a "
            f"record of {record_size} bytes"
        )
    grid = tuple(math.ceil(s / c) for s, c in zip(shape, chunk_shape, strict=True))
    strides = tuple(record_size if k == axis else 0 for k in range(len(shape)))
    pieces: tuple[AffinePiece, ...] = ()
    if math.prod(grid):
        pieces = (AffinePiece(url, offset + skip, chunk_bytes, (0,) * len(grid), grid, strides),)
    return VirtualChunkLayout(grid, pieces)


def listed_chunk_layout(
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    chunks: Sequence[tuple[Sequence[int], str, int, int]],
) -> VirtualChunkLayout:
    """Chunks given one by one as (coords, url, offset, length); those not given are missing."""
    if len(chunk_shape) != len(shape) or any(c <= 0 for c in chunk_shape):
        raise ValueError(f"chunk shape {chunk_shape} does not fit shape {shape}")
    grid = tuple(math.ceil(s / c) for s, c in zip(shape, chunk_shape, strict=True))
    codes = np.full(grid, MISSING, dtype=np.int32)
    offsets = np.zeros(grid, dtype=np.int64)
    lengths = np.zeros(grid, dtype=np.int64)
    urls: dict[str, int] = {}
    for coords, url, offset, length in chunks:
        coords = tuple(int(c) for c in coords)
        if len(coords) != len(grid) or any(
            not 0 <= c < g for c, g in zip(coords, grid, strict=True)
        ):
            raise ValueError(f"chunk {coords} is outside the chunk grid {grid}")
        if offset < 0 or length < 0:
            raise ValueError(f"chunk {coords} has a negative offset or length")
        codes[coords] = urls.setdefault(url, len(urls))
        offsets[coords] = offset
        lengths[coords] = length
    piece = TablePiece((0,) * len(grid), tuple(urls), (), codes, offsets, lengths)
    return VirtualChunkLayout(grid, (piece,))


def normal_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` as a tuple of ints; a negative extent is a ValueError."""
    result = tuple(int(s) for s in shape)
    if any(s < 0 for s in result):
        raise ValueError(f"negative shape {result}")
    return result


def check_offset(offset: int, skip: int) -> None:
    """A ValueError for a negative ``offset`` or ``skip``."""
    if offset < 0 or skip < 0:
        raise ValueError(f"offset ({offset}) and skip ({skip}) must not be negative")


def _chunk_rows(chunk_rows: int | None, n_rows: int, record_size: int) -> int:
    if chunk_rows is None:
        return default_chunk_rows(n_rows, record_size)
    if chunk_rows <= 0:
        raise ValueError(f"chunk_rows must be positive, got {chunk_rows}")
    return int(chunk_rows)


def _c_positions(shape: Sequence[int], itemsize: int) -> list[np.ndarray]:
    """Byte offsets along each axis of a C-ordered block of ``shape``."""
    positions = []
    step = itemsize
    for extent in reversed(shape):
        positions.append(np.arange(extent, dtype=np.int64) * step)
        step *= extent
    return positions[::-1]
