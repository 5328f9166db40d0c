"""What a read of a grouped view's shard takes, planned once before anything is fetched.

zarr asks a shard (`views.grouped`) for byte ranges: its index and the inner chunks a selection
touches, usually whole. `plan_shard` turns the asked ranges into a `ShardPlan`: for each range,
the bytes of the synthesized index it covers and the inner chunks it touches (and which part
of each); for narrow ranges of packed inner chunks, the stored chunks they lie in.

Narrow ranges: an inner chunk of a packed shard is a block of stored chunks rearranged into
one C-order block. zarr asks for whole inner chunks; a sparse selection asks for the few
elements it picks (`views.sparse_selection`). For those, reading the whole pack would read the
mebibyte around each point: instead each asked byte is traced to its stored chunk and its place
in it (`NarrowPlan`), only those stored chunks are read, and the answers are cut from them.
Every byte answered is a byte of a stored chunk that was read (or the fill of one never
written), never a stand-in.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from shadowzarr_store.resolve import byte_window

if TYPE_CHECKING:
    from collections.abc import Sequence

    from shadowzarr_spec.keys import ParsedKey
    from zarr.abc.store import ByteRequest

    from shadowzarr_store.array_checks import ArrayChecks
    from shadowzarr_store.views.grouped import GroupLayout, ShardIndex

__all__ = ["NARROW_SHARE", "NarrowPlan", "RangePlan", "ShardPlan", "plan_shard"]

NARROW_SHARE = 4
"""A range of at most 1 / this of its inner chunk is answered from its stored chunks."""
MAX_NARROW_ELEMENTS = 1 << 20
"""Most elements one read traces to their stored chunks (beyond: whole packs)."""


@dataclass(frozen=True, slots=True)
class RangePlan:
    """One asked range ``[start, end)`` of a shard: ``head``, the bytes of the shard's index it
    covers, then ``touched``, each inner chunk it reaches as (inner chunk, part ``[a, b)`` of
    it), in order."""

    start: int
    end: int
    head: bytes
    touched: tuple[tuple[int, int, int], ...]

    def whole(self, sizes: Sequence[int]) -> bool:
        """Whether every inner chunk touched is asked for whole (zarr's usual ask)."""
        return all((a, b) == (0, sizes[j]) for j, a, b in self.touched)


@dataclass(frozen=True, slots=True)
class NarrowPlan:
    """Which stored chunks to read (``positions`` in the shard's order, sorted), and for each
    element the narrow ranges cover (in order): the row of its stored chunk in ``positions``
    and its element offset in that chunk; per range, its elements ``[first, last)`` and the
    bytes to drop at its head and tail (ranges need not fall on element boundaries)."""

    positions: np.ndarray
    rows: np.ndarray
    within: np.ndarray
    spans: list[tuple[int, int, int, int]]


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """A read of shard ``key`` of ``path``: its ``index`` (not empty) and ``layout``, its
    array's ``checks``; ``narrow``, the stored chunks behind the ranges numbered
    ``narrow_ranges`` (read first, at once); ``ranges``, the plan of every other range (None
    where a narrow one is)."""

    key: str
    path: str
    layout: GroupLayout
    index: ShardIndex
    checks: ArrayChecks | None
    ranges: tuple[RangePlan | None, ...]
    narrow: NarrowPlan | None = None
    narrow_ranges: tuple[int, ...] = ()


def plan_shard(
    parsed: ParsedKey,
    layout: GroupLayout,
    index: ShardIndex,
    checks: ArrayChecks | None,
    byte_ranges: Sequence[ByteRequest | None],
) -> ShardPlan:
    """The plan of reading ``byte_ranges`` of shard ``parsed`` (``index`` not empty): the narrow
    ranges of packed inner chunks (`is_narrow`) from just the stored chunks they lie in, when
    they trace to at most `MAX_NARROW_ELEMENTS` elements; every other range by inner chunks."""
    windows = [byte_window(r, index.total) for r in byte_ranges]
    narrow_ranges: tuple[int, ...] = ()
    if index.members > 1:
        narrow_ranges = tuple(i for i, (a, b) in enumerate(windows) if is_narrow(index, a, b))
    narrow = _trace(layout, index, [windows[i] for i in narrow_ranges]) if narrow_ranges else None
    if narrow is None:
        narrow_ranges = ()
    chosen = set(narrow_ranges)
    ranges = tuple(
        None if i in chosen else _range_plan(index, *window) for i, window in enumerate(windows)
    )
    assert parsed.array is not None
    return ShardPlan(parsed.key, parsed.array, layout, index, checks, ranges, narrow, narrow_ranges)


def is_narrow(index: ShardIndex, start: int, end: int) -> bool:
    """Whether bytes ``[start, end)`` of a packed shard lie inside one inner chunk that holds
    stored chunks and cover at most 1 / `NARROW_SHARE` of it."""
    j = bisect.bisect_right(index.offsets, start) - 1
    if j < 0 or start < len(index.index) or end <= start:
        return False
    offset, size = index.offsets[j], index.sizes[j]
    return bool(size) and end <= offset + size and (end - start) * NARROW_SHARE <= size


def _range_plan(index: ShardIndex, start: int, end: int) -> RangePlan:
    head = index.index[start : min(end, len(index.index))]
    first = max(bisect.bisect_right(index.offsets, start) - 1, 0)
    touched = []
    for j in range(first, len(index.offsets)):
        offset, size = index.offsets[j], index.sizes[j]
        if offset >= end:
            break
        if size and offset + size > start:
            touched.append((j, max(start, offset) - offset, min(end, offset + size) - offset))
    return RangePlan(start, end, head, tuple(touched))


def _trace(
    layout: GroupLayout, index: ShardIndex, ranges: Sequence[tuple[int, int]]
) -> NarrowPlan | None:
    """The stored chunks behind narrow ``ranges`` (each `is_narrow`) of a packed shard; None
    when they cover more than `MAX_NARROW_ELEMENTS` elements."""
    itemsize = layout.itemsize
    inner = np.array([bisect.bisect_right(index.offsets, a) - 1 for a, _ in ranges], np.int64)
    starts = np.array([a for a, _ in ranges], dtype=np.int64)
    ends = np.array([b for _, b in ranges], dtype=np.int64)
    base = np.asarray(index.offsets, dtype=np.int64)[inner]
    first = (starts - base) // itemsize
    last = -(-(ends - base) // itemsize)
    counts = last - first
    total = int(counts.sum())
    if total > MAX_NARROW_ELEMENTS:
        return None
    bounds = np.concatenate(([0], np.cumsum(counts)))
    # element offsets inside each range's inner chunk, the ranges one after the other
    element = np.arange(total, dtype=np.int64) + np.repeat(first - bounds[:-1], counts)
    pack = np.repeat(inner, counts)
    place = np.unravel_index(element, layout.inner_shape)
    chunk = layout.chunk_shape
    member = np.ravel_multi_index(
        tuple(p // c for p, c in zip(place, chunk, strict=True)), layout.packed
    )
    within = np.ravel_multi_index(tuple(p % c for p, c in zip(place, chunk, strict=True)), chunk)
    positions, rows = np.unique(pack * layout.members + member, return_inverse=True)
    heads = (starts - base) - first * itemsize
    tails = last * itemsize - (ends - base)
    spans = list(
        zip(
            bounds[:-1].tolist(),
            bounds[1:].tolist(),
            heads.tolist(),
            tails.tolist(),
            strict=True,
        )
    )
    return NarrowPlan(positions, rows.ravel(), np.asarray(within, dtype=np.int64), spans)
