"""The grouped view: runs of small stored chunks shown to zarr as shards, so a read costs one
round trip instead of one per ``async.concurrency`` chunks.

zarr hands a store at most ``async.concurrency`` (10) chunk reads at a time, so a selection of
a thousand 1 KiB chunks costs a hundred round trips however well the store merges what is in
flight. In this view an array of many small chunks (each below ``GROUP_BELOW_BYTES`` decoded)
is shown with a chunk grid of blocks of stored chunks, each a ``sharding_indexed`` shard whose
inner chunks are the stored chunks, with the array's own codecs inside. zarr then asks for the
shard index (computed here from the references, never fetched) and for all the inner chunks it
touches in one ``get_ranges`` call, or for the whole shard in one ``get``; the store reads those
inner chunks at once, and the merger joins neighbours into a few range requests. Decoded values
are unchanged; inner chunks a selection does not touch are never read.

A shard's value, as zarr sees it, is the index (``count`` little-endian ``uint64`` pairs of
offset and length) followed by the logical bytes of its stored chunks in C order; a chunk that
is not stored has the empty marker and reads as the fill value, as it did unsharded.

Metadata and keys differ from the stored ones, so code that copies chunk bytes opens the store
with ``grouped_view=0`` (or takes `RfsStore.stored_view`).
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from shadowzarr_spec import ReferenceFileSystem, array_info

from shadowzarr_store.sharded_view import rewrite_zarr_json, sharding_codec

__all__ = [
    "AUTO_SHARD_BYTES",
    "GROUP_BELOW_BYTES",
    "MAX_INNER_CHUNKS",
    "GroupLayout",
    "GroupedView",
    "ShardIndex",
]

GROUP_BELOW_BYTES = 256 * 1024
"""Arrays whose decoded chunks are smaller than this are grouped."""
AUTO_SHARD_BYTES = 4 * 1024 * 1024
"""Decoded bytes of one shard of the view, about (``grouped_view="auto"``)."""
MAX_INNER_CHUNKS = 1024
"""Most stored chunks in one shard: its index is rebuilt from the references when first read."""
MIN_CHUNKS = 4
"""Arrays of fewer stored chunks are left as stored."""
EMPTY = (1 << 64) - 1
_SKIPPED_CODECS = frozenset({"sharding_indexed", "vlen-utf8", "vlen-bytes", "vlen_utf8"})


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """One array's view: shards of ``factors`` stored chunks of ``chunk_shape``."""

    chunk_shape: tuple[int, ...]
    grid: tuple[int, ...]
    """The stored chunk grid."""
    factors: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.factors)

    @property
    def index_bytes(self) -> int:
        return 16 * self.count

    @property
    def shard_shape(self) -> tuple[int, ...]:
        return tuple(c * f for c, f in zip(self.chunk_shape, self.factors, strict=True))

    def shard_of(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        """The shard holding stored chunk ``coords``."""
        return tuple(c // f for c, f in zip(coords, self.factors, strict=True))

    def inner_chunks(self, shard: tuple[int, ...]) -> list[tuple[int, ...] | None]:
        """The stored chunk coordinates of each inner chunk of ``shard`` in C order (None:
        outside the stored grid, or ``shard`` is not in the view's grid)."""
        if len(shard) != len(self.grid) or any(
            not 0 <= s * f < g for s, f, g in zip(shard, self.factors, self.grid, strict=True)
        ):
            return [None] * self.count
        ranges = [range(s * f, s * f + f) for s, f in zip(shard, self.factors, strict=True)]
        grid = self.grid
        return [
            coords if all(c < g for c, g in zip(coords, grid, strict=True)) else None
            for coords in itertools.product(*ranges)
        ]


@dataclass(frozen=True, slots=True)
class ShardIndex:
    """A shard's synthesized index: each inner chunk's stored key, offset and logical length."""

    keys: tuple[str | None, ...]
    offsets: tuple[int, ...]
    lengths: tuple[int, ...]
    """0 for an inner chunk that is not stored."""
    index: bytes
    total: int
    values: tuple[Any, ...] = ()
    """Each inner chunk's resolved reference (so reading it does not resolve it again)."""

    @property
    def empty(self) -> bool:
        return not any(self.lengths)

    @classmethod
    def build(
        cls, keys: list[str | None], lengths: list[int | None], values: tuple[Any, ...] = ()
    ) -> ShardIndex:
        table = np.full((len(keys), 2), EMPTY, dtype="<u8")
        position = 16 * len(keys)
        offsets: list[int] = []
        for i, length in enumerate(lengths):
            offsets.append(position)
            if length is not None:
                table[i] = (position, length)
                position += length
        return cls(
            keys=tuple(k if n is not None else None for k, n in zip(keys, lengths, strict=True)),
            offsets=tuple(offsets),
            lengths=tuple(n or 0 for n in lengths),
            index=table.tobytes(),
            total=position,
            values=values,
        )


class GroupedView:
    """Which arrays are shown grouped, and their rewritten metadata documents."""

    def __init__(self, rfs: ReferenceFileSystem, setting: int | str, skip: Any = None) -> None:
        self._rfs = rfs
        if setting == "auto":
            self._shard_bytes = AUTO_SHARD_BYTES
        elif isinstance(setting, int) and not isinstance(setting, bool) and setting > 0:
            self._shard_bytes = setting
        else:
            raise ValueError(f"grouped_view must be 'auto' or a positive size, got {setting!r}")
        self._skip = skip
        self._lock = threading.Lock()
        self._layouts: dict[str, GroupLayout | None] = {}

    def layout(self, path: str) -> GroupLayout | None:
        with self._lock:
            if path in self._layouts:
                return self._layouts[path]
        layout = self._compute(path)
        with self._lock:
            self._layouts[path] = layout
        return layout

    def _compute(self, path: str) -> GroupLayout | None:
        if self._skip is not None and self._skip(path):
            return None
        info = array_info(self._rfs, path)
        if info is None or not info.chunk_shape or not isinstance(info.data_type, str):
            return None
        if any(codec.get("name") in _SKIPPED_CODECS for codec in info.codecs):
            return None
        try:
            itemsize = np.dtype(info.data_type).itemsize
        except TypeError:
            return None
        chunk_nbytes = math.prod(info.chunk_shape) * itemsize
        grid = info.grid
        if itemsize == 0 or not 0 < chunk_nbytes < GROUP_BELOW_BYTES:
            return None
        if math.prod(grid) < MIN_CHUNKS:
            return None
        factors = _factors(grid, min(MAX_INNER_CHUNKS, self._shard_bytes // chunk_nbytes))
        if math.prod(factors) < 2:
            return None
        return GroupLayout(tuple(info.chunk_shape), tuple(grid), factors)

    def rewrite(self, key: str, data: bytes) -> bytes:
        """A ``zarr.json`` as the view shows it (grouped arrays, and consolidated entries)."""
        return rewrite_zarr_json(key, data, self._rewrite_array)

    def _rewrite_array(self, path: str, document: dict[str, Any]) -> bool:
        layout = self.layout(path)
        if layout is None:
            return False
        grid = document["chunk_grid"]["configuration"]
        document["chunk_grid"] = {
            "name": "regular",
            "configuration": {**grid, "chunk_shape": list(layout.shard_shape)},
        }
        document["codecs"] = [sharding_codec(list(layout.chunk_shape), document["codecs"])]
        return True


def _factors(grid: tuple[int, ...], budget: int) -> tuple[int, ...]:
    """Stored chunks per shard along each axis: whole rows of the trailing axes first (so a
    block of rows of every column is one shard), then as many along the leading axes as fit."""
    factors = [1] * len(grid)
    for axis in reversed(range(len(grid))):
        if budget < 2:
            break
        factors[axis] = max(1, min(grid[axis], budget))
        budget //= factors[axis]
    return tuple(factors)
