"""Where the chunks of a virtual array are: boxes of the chunk grid, evenly spaced or listed.

A layout never reads data. It is a list of pieces, each covering a box of the chunk grid: an
:class:`AffinePiece` (one file, chunk offsets an affine function of the chunk coordinates, which
becomes one gen entry) or a :class:`TablePiece` (chunks listed one by one, as numpy arrays so a
million chunks stay cheap). Whole-chunk indexing, transposing and stacking act on the pieces;
a chunk covered by no piece was never written and reads as the fill value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

__all__ = ["AffinePiece", "Indices", "TablePiece", "VirtualChunkLayout"]

MISSING = -1
"""Code of a chunk never written, in :attr:`TablePiece.codes`."""

type Indices = range | np.ndarray
"""Chunk indices along one axis: a range (from a slice) or an int64 array (from a list)."""


@dataclass(frozen=True, slots=True)
class AffinePiece:
    """Chunks of a box of the grid in one file, chunk ``c`` at
    ``base + Σ (c_k - start_k) * strides_k``, ``length`` bytes each."""

    url: str
    base: int
    length: int
    start: tuple[int, ...]
    count: tuple[int, ...]
    strides: tuple[int, ...]

    def transpose(self, axes: Sequence[int]) -> AffinePiece:
        return replace(
            self,
            start=tuple(self.start[a] for a in axes),
            count=tuple(self.count[a] for a in axes),
            strides=tuple(self.strides[a] for a in axes),
        )

    def drop(self, axis: int, index: int) -> AffinePiece | None:
        position = index - self.start[axis]
        if not 0 <= position < self.count[axis]:
            return None
        return AffinePiece(
            self.url,
            self.base + position * self.strides[axis],
            self.length,
            _without(self.start, axis),
            _without(self.count, axis),
            _without(self.strides, axis),
        )

    def insert_axis(self, axis: int, coordinate: int) -> AffinePiece:
        return replace(
            self,
            start=_with(self.start, axis, coordinate),
            count=_with(self.count, axis, 1),
            strides=_with(self.strides, axis, 0),
        )

    def take(self, axis: int, indices: Indices) -> list[AffinePiece]:
        pieces = []
        for first_position, first_index, step, run in _arithmetic_runs(
            indices, self.start[axis], self.count[axis]
        ):
            pieces.append(
                AffinePiece(
                    self.url,
                    self.base + (first_index - self.start[axis]) * self.strides[axis],
                    self.length,
                    _replace_at(self.start, axis, first_position),
                    _replace_at(self.count, axis, run),
                    _replace_at(self.strides, axis, self.strides[axis] * step),
                )
            )
        return pieces

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, lengths) over the box, for listing the chunks one by one."""
        offsets = np.full(self.count, self.base, dtype=np.int64)
        for axis, (extent, stride) in enumerate(zip(self.count, self.strides, strict=True)):
            shape = [1] * len(self.count)
            shape[axis] = extent
            offsets = offsets + (np.arange(extent, dtype=np.int64) * stride).reshape(shape)
        return offsets, np.full(self.count, self.length, dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class TablePiece:
    """Chunks of a box listed one by one: ``codes`` picks a url from ``urls`` (or, from
    ``len(urls)`` on, an inline blob of ``inline``; :data:`MISSING` for none)."""

    start: tuple[int, ...]
    urls: tuple[str, ...]
    inline: tuple[bytes, ...]
    codes: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray

    @property
    def count(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.codes.shape)

    def _map(self, start: tuple[int, ...], function: object) -> TablePiece:
        return TablePiece(
            start,
            self.urls,
            self.inline,
            function(self.codes),  # type: ignore[operator]
            function(self.offsets),  # type: ignore[operator]
            function(self.lengths),  # type: ignore[operator]
        )

    def transpose(self, axes: Sequence[int]) -> TablePiece:
        return self._map(tuple(self.start[a] for a in axes), lambda a: np.transpose(a, axes))

    def drop(self, axis: int, index: int) -> TablePiece | None:
        position = index - self.start[axis]
        if not 0 <= position < self.count[axis]:
            return None
        return self._map(_without(self.start, axis), lambda a: np.take(a, position, axis=axis))

    def insert_axis(self, axis: int, coordinate: int) -> TablePiece:
        return self._map(_with(self.start, axis, coordinate), lambda a: np.expand_dims(a, axis))

    def take(self, axis: int, indices: Indices) -> list[TablePiece]:
        pieces = []
        for first_position, first_index, step, run in _arithmetic_runs(
            indices, self.start[axis], self.count[axis]
        ):
            local = first_index - self.start[axis] + step * np.arange(run)
            pieces.append(
                self._map(
                    _replace_at(self.start, axis, first_position),
                    lambda a, local=local: np.take(a, local, axis=axis),
                )
            )
        return pieces


type Piece = AffinePiece | TablePiece


@dataclass(frozen=True, slots=True)
class VirtualChunkLayout:
    """The chunks of an array whose chunk grid has shape ``grid``."""

    grid: tuple[int, ...]
    pieces: tuple[Piece, ...]

    def transpose(self, axes: Sequence[int]) -> VirtualChunkLayout:
        return VirtualChunkLayout(
            tuple(self.grid[a] for a in axes), tuple(p.transpose(axes) for p in self.pieces)
        )

    def drop(self, axis: int, index: int) -> VirtualChunkLayout:
        """Fix chunk coordinate ``index`` along ``axis`` and remove that axis."""
        pieces = (p.drop(axis, index) for p in self.pieces)
        return VirtualChunkLayout(
            _without(self.grid, axis), tuple(p for p in pieces if p is not None)
        )

    def take(self, axis: int, indices: Indices) -> VirtualChunkLayout:
        """Chunk ``indices[p]`` along ``axis`` becomes chunk ``p``."""
        pieces = [new for piece in self.pieces for new in piece.take(axis, indices)]
        return VirtualChunkLayout(_replace_at(self.grid, axis, len(indices)), tuple(pieces))

    def chunks(
        self,
    ) -> Iterator[tuple[tuple[int, ...], str, int, int] | tuple[tuple[int, ...], bytes]]:
        """Every written chunk as (coords, url, offset, length) or (coords, inline bytes)."""
        for piece in self.pieces:
            if isinstance(piece, AffinePiece):
                offsets, lengths = piece.arrays()
                for local in np.ndindex(*piece.count):
                    coords = tuple(s + i for s, i in zip(piece.start, local, strict=True))
                    yield coords, piece.url, int(offsets[local]), int(lengths[local])
                continue
            for local in np.ndindex(*piece.count):
                code = int(piece.codes[local])
                if code == MISSING:
                    continue
                coords = tuple(s + i for s, i in zip(piece.start, local, strict=True))
                if code >= len(piece.urls):
                    yield coords, piece.inline[code - len(piece.urls)]
                else:
                    yield (
                        coords,
                        piece.urls[code],
                        int(piece.offsets[local]),
                        int(piece.lengths[local]),
                    )

    @property
    def n_pieces_chunks(self) -> int:
        """How many chunk positions the pieces cover (written or not)."""
        return sum(math.prod(p.count) for p in self.pieces)


def stack_layouts(layouts: Sequence[VirtualChunkLayout], axis: int) -> VirtualChunkLayout:
    """Layouts of equal grids side by side along a new grid axis; neighbouring evenly spaced
    pieces in one file merge, so channels stored one after another stay one gen entry."""
    pieces: list[Piece] = []
    for coordinate, layout in enumerate(layouts):
        for piece in layout.pieces:
            new = piece.insert_axis(axis, coordinate)
            merged = _merge(pieces, new, axis) if isinstance(new, AffinePiece) else None
            if merged is None:
                pieces.append(new)
    grid = _with(layouts[0].grid, axis, len(layouts))
    return VirtualChunkLayout(grid, tuple(pieces))


def _merge(pieces: list[Piece], new: AffinePiece, axis: int) -> AffinePiece | None:
    """Extend a piece of ``pieces`` by ``new`` along ``axis`` when the spacing allows."""
    for position, old in enumerate(pieces):
        if not isinstance(old, AffinePiece) or old.url != new.url or old.length != new.length:
            continue
        if _without(old.start, axis) != _without(new.start, axis):
            continue
        if _without(old.count, axis) != _without(new.count, axis):
            continue
        if _without(old.strides, axis) != _without(new.strides, axis):
            continue
        if new.start[axis] != old.start[axis] + old.count[axis]:
            continue
        spacing = new.base - old.base
        if old.count[axis] > 1:
            if spacing != old.count[axis] * old.strides[axis]:
                continue
            stride = old.strides[axis]
        else:
            stride = spacing
        merged = replace(
            old,
            count=_replace_at(old.count, axis, old.count[axis] + 1),
            strides=_replace_at(old.strides, axis, stride),
        )
        pieces[position] = merged
        return merged
    return None


def _arithmetic_runs(
    indices: Indices, start: int, count: int
) -> Iterator[tuple[int, int, int, int]]:
    """Maximal runs of positions ``p`` where ``indices[p]`` falls in ``[start, start + count)``
    and steps evenly: (first position, first index, step, run length)."""
    if isinstance(indices, range):
        bounds = _range_positions(indices, start, start + count)
        if bounds:
            first, last = bounds
            yield first, indices[first], indices.step, last - first + 1
        return
    values = np.asarray(indices, dtype=np.int64)
    hit = (values >= start) & (values < start + count)
    positions = np.flatnonzero(hit)
    if positions.size == 0:
        return
    # Split where positions stop being consecutive or the step between values changes.
    run_start = 0
    n = positions.size
    while run_start < n:
        first = int(positions[run_start])
        end = run_start + 1
        step = 0
        if end < n and positions[end] == first + 1:
            step = int(values[first + 1] - values[first])
            while (
                end < n
                and positions[end] == positions[end - 1] + 1
                and values[positions[end]] - values[positions[end - 1]] == step
            ):
                end += 1
        yield first, int(values[first]), step, end - run_start
        run_start = end


def _range_positions(indices: range, low: int, high: int) -> tuple[int, int] | tuple[()]:
    """First and last positions of ``indices`` whose values lie in ``[low, high)``."""
    n = len(indices)
    if n == 0:
        return ()
    step = indices.step
    # Solve low <= indices.start + p * step < high for p in [0, n).
    if step > 0:
        first = max(0, -(-(low - indices.start) // step))
        last = min(n - 1, (high - 1 - indices.start) // step)
    else:
        first = max(0, -(-(indices.start - (high - 1)) // -step))
        last = min(n - 1, (indices.start - low) // -step)
    if first > last:
        return ()
    return first, last


def _without(values: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return values[:axis] + values[axis + 1 :]


def _with(values: tuple[int, ...], axis: int, value: int) -> tuple[int, ...]:
    return (*values[:axis], value, *values[axis:])


def _replace_at(values: tuple[int, ...], axis: int, value: int) -> tuple[int, ...]:
    return (*values[:axis], value, *values[axis + 1 :])
