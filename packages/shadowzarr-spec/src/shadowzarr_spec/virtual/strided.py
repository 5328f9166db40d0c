"""Arrays whose every element sits at a computable byte of one file: contiguous blocks, records
with headers, memory-mapped views.

Element ``(i0, i1, …)`` is at ``first + i0 * row_stride + Σ positions[k][i(k+1)]``: rows (first
axis indices) are evenly spaced records, and inside a row each later axis has its own list of
byte positions. Slicing the first axis moves ``first``; slicing, listing or picking along a later
axis edits its positions. Written out, each row is one record of ``row_stride`` bytes, and the
bytes of its elements become the ``keep`` ranges of a selection (none when a row is the record).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from shadowzarr_spec.errors import NotVirtualizable
from shadowzarr_spec.model import Selection
from shadowzarr_spec.virtual.layout import AffinePiece, VirtualChunkLayout

__all__ = [
    "MAX_KEEP_RANGES",
    "TARGET_CHUNK_BYTES",
    "Records",
    "StridedBytes",
    "default_chunk_rows",
]

MAX_KEEP_RANGES = 16_384
"""Most byte ranges a selection may keep from each record before we refuse."""

TARGET_CHUNK_BYTES = 4 * 2**20
"""Stored bytes per chunk aimed at when the caller gives no chunk height (as HDF5 slabs)."""

_MAX_ELEMENTS_PER_STEP = 1 << 24


def default_chunk_rows(n_rows: int, row_stride: int) -> int:
    """Rows per chunk so a chunk reads about :data:`TARGET_CHUNK_BYTES`, at least one."""
    return max(1, min(max(n_rows, 1), TARGET_CHUNK_BYTES // max(row_stride, 1)))


@dataclass(frozen=True, slots=True)
class Records:
    """Rows written as records: ``record_size`` bytes from ``origin + row * pitch``; chunks of
    ``chunk_rows`` rows; the selection keeping the elements' bytes (None: all of them)."""

    origin: int
    record_size: int
    pitch: int
    chunk_rows: int
    selection: Selection | None


@dataclass(frozen=True, slots=True, eq=False)
class StridedBytes:
    """A strided view of one file (see the module docstring).

    ``item_ranges`` are the bytes of one element relative to its position, in order (one range
    unless a structured element skips bytes). ``upper`` is the end of the bytes known to exist
    (a record running past it could be cut short by the end of the file).
    """

    url: str
    first: int
    row_stride: int
    n_rows: int
    positions: tuple[np.ndarray, ...]
    item_ranges: tuple[tuple[int, int], ...]
    upper: int
    chunk_rows: int

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n_rows, *(len(p) for p in self.positions))

    @property
    def empty(self) -> bool:
        return self.n_rows == 0 or any(len(p) == 0 for p in self.positions)

    # -- geometry ----------------------------------------------------------------------------
    def row_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts relative to ``first``, lengths) of one row's bytes in C order, merged."""
        starts = np.array([a for a, _ in self.item_ranges], dtype=np.int64)
        lengths = np.array([b - a for a, b in self.item_ranges], dtype=np.int64)
        starts, lengths = _merge_ranges(starts, lengths)
        for positions in reversed(self.positions):
            if positions.size * starts.size > _MAX_ELEMENTS_PER_STEP:
                raise NotVirtualizable(
                    f"the elements of one row of this {self.shape} array lie in more than "
                    f"{MAX_KEEP_RANGES} separate byte ranges; a selection cannot keep them"
                )
            starts = (positions[:, None] + starts[None, :]).ravel()
            lengths = np.tile(lengths, positions.size)
            starts, lengths = _merge_ranges(starts, lengths)
        if starts.size > MAX_KEEP_RANGES:
            raise NotVirtualizable(
                f"the elements of one row lie in {starts.size} separate byte ranges, more than "
                f"the {MAX_KEEP_RANGES} a selection may keep from each record"
            )
        return starts, lengths

    def records(self) -> Records:
        """How rows become records: where the first starts, how long each is, and the
        selection; checks that rows do not overlap."""
        starts, lengths = self.row_ranges()
        if starts.size == 0:
            origin = self.first
            return Records(origin, self.row_stride, self.row_stride, self.chunk_rows, None)
        low = int(starts.min())
        high = int((starts + lengths).max())
        if high - low > self.row_stride:
            raise NotVirtualizable(
                f"one row's elements span {high - low} bytes, more than the {self.row_stride} "
                "bytes from one row to the next, so rows cannot be read as separate records"
            )
        # Records of row_stride bytes that end where each row's last element ends, so the last
        # record is never cut short by the end of the file (a reader would drop it); before the
        # start of the file they cannot begin. When the records then run past the known bytes,
        # and always for one row per chunk, a chunk is just the span of its row's elements.
        origin = max(0, self.first + high - self.row_stride)
        fits = origin + self.n_rows * self.row_stride <= self.upper
        if fits and self.chunk_rows > 1:
            record_size, chunk_rows = self.row_stride, self.chunk_rows
        else:
            origin, record_size, chunk_rows = self.first + low, high - low, 1
        keep = tuple(
            (int(s) + self.first - origin, int(s + n) + self.first - origin)
            for s, n in zip(starts, lengths, strict=True)
        )
        selection = None if keep == ((0, record_size),) else Selection(record_size, keep)
        return Records(origin, record_size, self.row_stride, chunk_rows, selection)

    def to_layout(self) -> tuple[VirtualChunkLayout, Selection | None, tuple[int, ...]]:
        """(layout, selection, chunk shape): slabs of records, one gen entry."""
        records = self.records()
        later = [len(p) for p in self.positions]
        rows = records.chunk_rows
        grid = (math.ceil(self.n_rows / rows), *(1 if n else 0 for n in later))
        chunk_shape = (rows, *(max(1, n) for n in later))
        if self.empty:
            return VirtualChunkLayout(grid, ()), records.selection, chunk_shape
        strides = (rows * records.pitch, *(0 for _ in later))
        # A short last chunk holds only the rows there are: never bytes past the last row,
        # which may be past the end of the file (readers refuse such a reference).
        last_rows = self.n_rows - (grid[0] - 1) * rows
        whole = grid[0] if last_rows == rows else grid[0] - 1
        pieces = []
        if whole:
            length = (rows - 1) * records.pitch + records.record_size
            count = (whole, *grid[1:])
            pieces.append(
                AffinePiece(self.url, records.origin, length, (0,) * len(grid), count, strides)
            )
        if whole < grid[0]:
            pieces.append(
                AffinePiece(
                    self.url,
                    records.origin + whole * strides[0],
                    (last_rows - 1) * records.pitch + records.record_size,
                    (whole, *(0 for _ in later)),
                    (1, *grid[1:]),
                    strides,
                )
            )
        return VirtualChunkLayout(grid, tuple(pieces)), records.selection, chunk_shape

    # -- indexing ----------------------------------------------------------------------------
    def slice_rows(self, start: int, stop: int) -> StridedBytes:
        shift = start * self.row_stride
        n_rows = max(0, stop - start)
        return replace(
            self,
            first=self.first + shift,
            n_rows=n_rows,
            chunk_rows=max(1, min(self.chunk_rows, n_rows)),
        )

    def take_later(self, axis: int, indices: np.ndarray) -> StridedBytes:
        """``axis`` counts from 1 (the first later axis)."""
        positions = list(self.positions)
        positions[axis - 1] = positions[axis - 1][indices]
        return replace(self, positions=tuple(positions))

    def pick_later(self, axis: int, index: int) -> StridedBytes:
        positions = list(self.positions)
        shift = int(positions.pop(axis - 1)[index])
        return replace(self, first=self.first + shift, positions=tuple(positions))

    def pick_row(self, index: int) -> StridedBytes | None:
        """Row ``index`` as an array whose rows are its second axis, when that axis steps
        evenly forward; None otherwise (the caller makes the row one chunk)."""
        if not self.positions:
            return None
        axis_positions = self.positions[0]
        rest = replace(self, positions=self.positions[1:])
        if axis_positions.size >= 2:
            steps = np.diff(axis_positions)
            stride = int(steps[0])
            if stride <= 0 or not np.all(steps == stride):
                return None
        else:
            starts, lengths = rest.row_ranges()
            span = int((starts + lengths).max() - starts.min()) if starts.size else 0
            stride = max(span, 1)
        candidate = replace(
            rest,
            first=self.first + index * self.row_stride + int(axis_positions[0])
            if axis_positions.size
            else self.first + index * self.row_stride,
            row_stride=stride,
            n_rows=int(axis_positions.size),
            chunk_rows=default_chunk_rows(int(axis_positions.size), stride),
        )
        try:
            candidate.records()
        except NotVirtualizable:
            return None
        return candidate


def _merge_ranges(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Join ranges where one ends exactly where the next (in order) begins."""
    if starts.size <= 1:
        return starts, lengths
    breaks = np.flatnonzero(starts[1:] != starts[:-1] + lengths[:-1]) + 1
    heads = np.concatenate([[0], breaks])
    return starts[heads], np.add.reduceat(lengths, heads)
