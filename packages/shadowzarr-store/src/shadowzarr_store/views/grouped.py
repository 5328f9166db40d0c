"""The grouped view: runs of small stored chunks shown to zarr as shards, so a read costs one
round trip instead of one per ``async.concurrency`` chunks.

zarr hands a store at most ``async.concurrency`` (10) chunk reads at a time, so a selection of
a thousand 1 KiB chunks costs a hundred round trips however well the store merges what is in
flight. In this view an array of many small chunks (each below ``GROUP_BELOW_BYTES`` decoded)
is shown with a chunk grid of blocks of stored chunks, each a ``sharding_indexed`` shard whose
inner chunks are the stored chunks, with the array's own codecs inside (named
``shadowzarr.sharding_indexed`` where the inner chunks are plain slabs of the shard's first
axis: the same format, read without zarr's shard-sized copy, see `slab_shards`). zarr then
asks for the shard index (computed here from the references, never fetched) and for all the
inner chunks it touches in one ``get_ranges`` call, or for the whole shard in one ``get``; the
store reads those inner chunks at once, and the merger joins neighbours into a few range
requests. Decoded values
are unchanged; inner chunks a selection does not touch are never read.

A shard's value, as zarr sees it, is the index (``count`` little-endian ``uint64`` pairs of
offset and length) followed by the logical bytes of its stored chunks in C order; a chunk that
is not stored has the empty marker and reads as the fill value, as it did unsharded.

Uncompressed arrays (the plain ``bytes`` codec alone) whose chunks all come from one chunk
manifest go one step further: each inner chunk of a shard packs a block of stored chunks (about
``PACK_BYTES``, 1 MiB, trailing axes first), their bytes rearranged here into one C-order
block. zarr's cost is per inner chunk (tasks, indexing, scattering: about 0.1 ms each), so reading
4 KiB chunks one by one ran at a few MB/s; packed, that cost is paid once per ``PACK_BYTES``.
The price is a bounded read-ahead: a run of rows touching one stored chunk reads its pack. A
selection of scattered points or strides that picks few of a shard's elements reads only the
stored chunks it touches (`sparse_selection`, `shard_plan`), so its bytes follow what it
touches, not the number of packs.
Compressed chunks (byte codecs over ``bytes``) are packed too, decoded by the store: the view's
inner chunks are then plain ``bytes``, the stored codecs undone (``GroupLayout.decoded``).

Metadata and keys differ from the stored ones, so code that copies chunk bytes opens the store
with ``grouped_view=0`` (or takes `RfsStore.stored_view`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
from shadowzarr_spec import ReferenceFileSystem, array_info

from shadowzarr_store.views.sharded import rewrite_zarr_json, sharding_codec

__all__ = [
    "AUTO_SHARD_BYTES",
    "GROUP_BELOW_BYTES",
    "MAX_INNER_CHUNKS",
    "PACK_BYTES",
    "GroupLayout",
    "GroupedView",
    "ShardIndex",
    "StoredKeys",
]

GROUP_BELOW_BYTES = 256 * 1024
"""Arrays whose decoded chunks are smaller than this are grouped."""
AUTO_SHARD_BYTES = 4 * 1024 * 1024
"""Decoded bytes of one shard of the view, about (``grouped_view="auto"``)."""
MAX_INNER_CHUNKS = 1024
"""Most stored chunks in one shard: its index is rebuilt from the references when first read."""
MIN_CHUNKS = 4
"""Arrays of fewer stored chunks are left as stored."""
MAX_PACKED_FACTOR = 4
"""A shard of packed inner chunks may hold this many times `MAX_INNER_CHUNKS` stored chunks and
the shard size's bytes (its index is read with numpy; fewer shards are fewer waves of zarr's
``async.concurrency`` shard reads)."""
PACK_BYTES = 1024 * 1024
"""Bytes of one packed inner chunk, about: a block of stored chunks (zarr's per-chunk cost and
ours paid once per this many bytes; the read-ahead of a selection that touches one stored
chunk). Measured on a sequential read of 77 MB of 4 KiB chunks: 256 KiB packs cost 0.24 s of
CPU, 1 MiB packs 0.18 s, 4 MiB 0.17 s; fsspec's default read-ahead is 5 MB."""
EMPTY = (1 << 64) - 1
_SKIPPED_CODECS = frozenset({"sharding_indexed", "vlen-utf8", "vlen-bytes", "vlen_utf8"})


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """One array's view: shards of ``factors`` stored chunks of ``chunk_shape``, each inner
    chunk a block of ``pack`` stored chunks (all 1: the stored chunks themselves)."""

    chunk_shape: tuple[int, ...]
    grid: tuple[int, ...]
    """The stored chunk grid."""
    factors: tuple[int, ...]
    pack: tuple[int, ...] = ()
    itemsize: int = 0
    decoded: bool = False
    """Whether packs hold stored chunks decoded by the store (their byte codecs undone), so
    the view's inner chunks are plain ``bytes``."""

    @property
    def packed(self) -> tuple[int, ...]:
        return self.pack or (1,) * len(self.chunk_shape)

    @property
    def members(self) -> int:
        """Stored chunks in one inner chunk."""
        return math.prod(self.packed)

    @property
    def packs(self) -> tuple[int, ...]:
        """Inner chunks of a shard along each axis."""
        return tuple(f // p for f, p in zip(self.factors, self.packed, strict=True))

    @property
    def count(self) -> int:
        """Inner chunks of one shard."""
        return math.prod(self.packs)

    @property
    def index_bytes(self) -> int:
        return 16 * self.count

    @property
    def inner_shape(self) -> tuple[int, ...]:
        return tuple(c * p for c, p in zip(self.chunk_shape, self.packed, strict=True))

    @property
    def chunk_nbytes(self) -> int:
        return math.prod(self.chunk_shape) * self.itemsize

    @property
    def shard_shape(self) -> tuple[int, ...]:
        return tuple(c * f for c, f in zip(self.chunk_shape, self.factors, strict=True))

    def shard_of(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        """The shard holding stored chunk ``coords``."""
        return tuple(c // f for c, f in zip(coords, self.factors, strict=True))

    def inner_chunks(self, shard: tuple[int, ...]) -> list[tuple[int, ...] | None]:
        """The stored chunk coordinates of ``shard``: inner chunks in C order, and within each
        its ``members`` stored chunks in C order (None: outside the stored grid, or ``shard``
        is not in the view's grid)."""
        return [None if row[0] < 0 else tuple(row) for row in self.inner_points(shard).tolist()]

    def inner_points(self, shard: tuple[int, ...]) -> np.ndarray:
        """`inner_chunks` as an (n, ndim) array, a row of -1 for None (no object per chunk)."""
        ndim = len(self.grid)
        total = self.count * self.members
        if len(shard) != ndim or any(
            not 0 <= s * f < g for s, f, g in zip(shard, self.factors, self.grid, strict=True)
        ):
            return np.full((total, ndim), -1, dtype=np.int64)
        packs, packed = self.packs, self.packed
        # axes (pack index per axis..., member index per axis...), C order of each
        outer = np.indices(packs, dtype=np.int64).reshape(ndim, -1)
        inner = np.indices(packed, dtype=np.int64).reshape(ndim, -1)
        origin = np.array(shard, dtype=np.int64)[:, None] * np.array(self.factors)[:, None]
        points = (
            (
                origin[:, :, None]
                + outer[:, :, None] * np.array(packed)[:, None, None]
                + inner[:, None, :]
            )
            .reshape(ndim, -1)
            .T
        )
        points[(points >= np.array(self.grid)).any(axis=1)] = -1
        return np.ascontiguousarray(points)

    def pack_rows(self, pieces: Sequence[np.ndarray], into: np.ndarray | None = None) -> np.ndarray:
        """`pack_bytes` of stored chunks given as consecutive pieces of (chunks,
        `chunk_nbytes`) rows, together whole packs' members in order: each run of whole packs
        inside a piece is rearranged straight from it, and only a pack split between two
        pieces is joined first."""
        members, nbytes = self.members, self.chunk_nbytes
        count = sum(len(piece) for piece in pieces) // members
        out = np.empty((count, members * nbytes), dtype=np.uint8) if into is None else into
        done = 0  # packs written
        carry: list[np.ndarray] = []  # the first rows of a pack split between pieces
        held = 0
        for piece in pieces:
            at = 0
            if held:
                take = min(members - held, len(piece))
                carry.append(piece[:take])
                held, at = held + take, take
                if held < members:
                    continue
                joined = np.concatenate(carry).reshape(1, members, nbytes)
                self.pack_bytes(joined, out[done : done + 1])
                done, carry, held = done + 1, [], 0
            whole = (len(piece) - at) // members
            if whole:
                block = piece[at : at + whole * members].reshape(whole, members, nbytes)
                self.pack_bytes(block, out[done : done + whole])
                done, at = done + whole, at + whole * members
            if at < len(piece):
                carry, held = [piece[at:]], len(piece) - at
        if held or done != count:
            raise ValueError(f"pieces of {sum(map(len, pieces))} rows are not whole packs")
        return out

    def pack_bytes(self, members: np.ndarray, into: np.ndarray | None = None) -> np.ndarray:
        """Inner chunks from their stored chunks: ``members`` is (inner chunks, `members`,
        `chunk_nbytes`) bytes; the result (inner chunks, bytes of one) in C order, written
        into ``into`` if given (one copy, straight into the value zarr gets)."""
        count = members.shape[0]
        ndim = len(self.chunk_shape)
        # A row of a stored chunk (its last axis) stays whole in the pack: moved as one
        # element of that many bytes, numpy copies it at once (twice as fast as by bytes).
        row = np.dtype((np.void, self.chunk_shape[-1] * self.itemsize))
        blocks = members.view(row).reshape(count, *self.packed, *self.chunk_shape[:-1])
        # (count, p0, p1, .., c0, c1, ..) -> (count, p0, c0, p1, c1, .., p_last)
        order = [0]
        for axis in range(ndim):
            order += [1 + axis] + ([1 + ndim + axis] if axis < ndim - 1 else [])
        moved = blocks.transpose(order)
        if into is None:
            return np.ascontiguousarray(moved).view(np.uint8).reshape(count, -1)
        np.copyto(into.view(row).reshape(moved.shape), moved)
        return into


@dataclass(frozen=True, slots=True)
class ShardIndex:
    """A shard's synthesized index. Per stored chunk (inner chunks in C order, each its
    ``members`` stored chunks): key, resolved reference and whether it is stored; per inner
    chunk: offset and length in the shard's value."""

    keys: Sequence[str | None]
    offsets: tuple[int, ...]
    """Of each inner chunk."""
    sizes: tuple[int, ...]
    """Of each inner chunk; 0 for one none of whose stored chunks is stored."""
    index: bytes
    total: int
    values: tuple[Any, ...] = ()
    """Each stored chunk's resolved reference (so reading it does not resolve it again)."""
    members: int = 1
    entries: tuple[str, np.ndarray, np.ndarray] | None = None
    """(url, offsets, sizes) of every stored chunk straight from the chunk manifest, when that
    is where they all come from (`MISSING_CHUNK` for one not stored)."""
    stored: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Whether each stored chunk is stored (its key is not None)."""

    @property
    def empty(self) -> bool:
        return not any(self.sizes)

    @classmethod
    def build(
        cls,
        keys: Sequence[str | None],
        lengths: Sequence[int | None] | np.ndarray,
        values: tuple[Any, ...] = (),
        *,
        members: int = 1,
        inner_nbytes: int = 0,
        entries: tuple[str, np.ndarray, np.ndarray] | None = None,
    ) -> ShardIndex:
        """``lengths``: each stored chunk's logical length, None (or, as an integer array, -1)
        for one that is not stored. ``inner_nbytes``: the bytes of an inner chunk of several
        stored chunks (members > 1), present when any of them is stored. Computed with numpy:
        a shard from a chunk manifest has thousands of stored chunks."""
        if isinstance(lengths, np.ndarray):
            length = lengths.astype(np.int64, copy=False)
        else:
            length = np.array([-1 if n is None else n for n in lengths], dtype=np.int64)
        stored = length >= 0
        count = len(length) // members
        present = stored[: count * members].reshape(count, members).any(axis=1)
        if members > 1:
            size = np.where(present, inner_nbytes, 0)
        else:
            size = np.where(present, length[:count], 0)
        ends = 16 * count + np.cumsum(size, dtype=np.int64)
        starts = ends - size
        table = np.full((count, 2), EMPTY, dtype="<u8")
        table[present, 0] = starts[present]
        table[present, 1] = size[present]
        return cls(
            keys=(
                keys
                if isinstance(keys, StoredKeys)
                else tuple(k if ok else None for k, ok in zip(keys, stored.tolist(), strict=True))
            ),
            offsets=tuple(starts.tolist()),
            sizes=tuple(size.tolist()),
            index=table.tobytes(),
            total=int(ends[-1]) if count else 0,
            values=values,
            members=members,
            entries=entries,
            stored=stored,
        )


class StoredKeys(Sequence[str | None]):
    """The keys of a shard's stored chunks, each made when asked for: a shard from a chunk
    manifest has thousands, a read names a few (in errors and the per-key path)."""

    def __init__(self, prefix: str, points: np.ndarray, stored: np.ndarray) -> None:
        self._prefix, self._points, self._stored = prefix, points, stored

    def __len__(self) -> int:
        return len(self._stored)

    @overload
    def __getitem__(self, i: int) -> str | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[str | None]: ...
    def __getitem__(self, i: int | slice) -> str | list[str | None] | None:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not self._stored[i]:
            return None
        return self._prefix + "/".join(map(str, self._points[i].tolist()))


class GroupedView:
    """Which arrays are shown grouped, and their rewritten metadata documents."""

    def __init__(
        self, rfs: ReferenceFileSystem, setting: int | str, skip: Any = None, packable: Any = None
    ) -> None:
        """``skip(path)``: leave the array as stored; ``packable(path)``: how its stored chunks
        may be packed: ``"plain"`` (uncompressed), ``"decoded"`` (byte codecs the store undoes
        itself) or None. Only arrays whose every chunk comes from one chunk manifest (one file)
        are packed, so a pack's read-ahead never reaches into another source, where a
        neighbour's failure would fail a selection that does not touch it."""
        self._rfs = rfs
        if setting == "auto":
            self._shard_bytes = AUTO_SHARD_BYTES
        elif isinstance(setting, int) and not isinstance(setting, bool) and setting > 0:
            self._shard_bytes = setting
        else:
            raise ValueError(f"grouped_view must be 'auto' or a positive size, got {setting!r}")
        self._skip = skip
        self._packable = packable
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
        pack: tuple[int, ...] = ()
        kind = None
        if PACK_BYTES // chunk_nbytes >= 2:
            kind = "plain" if _uncompressed(info.codecs) else None
            if self._packable is not None:
                kind = self._packable(path)
        if kind is not None:
            # the same order as the shard's blocks (trailing axes first): stored chunks
            # neighbouring in a C-order file, so one pack is one run of bytes
            pack = _factors(grid, PACK_BYTES // chunk_nbytes)
            if math.prod(pack) < 2:
                pack = ()
        scale = MAX_PACKED_FACTOR if pack else 1
        factors = _factors(
            grid, min(MAX_INNER_CHUNKS * scale, self._shard_bytes * scale // chunk_nbytes)
        )
        if math.prod(factors) < 2:
            return None
        if pack:
            factors = tuple(
                _whole_packs(f, p, g) for f, p, g in zip(factors, pack, grid, strict=True)
            )
        decoded = bool(pack) and kind == "decoded"
        return GroupLayout(tuple(info.chunk_shape), tuple(grid), factors, pack, itemsize, decoded)

    def rewrite(self, key: str, data: bytes) -> bytes:
        """A ``zarr.json`` as the view shows it (grouped arrays, and consolidated entries)."""
        return rewrite_zarr_json(key, data, self._rewrite_array)

    def _rewrite_array(self, path: str, document: dict[str, Any]) -> bool:
        layout = self.layout(path)
        if layout is None:
            return False
        # no note in the attributes (they stay the file's, equal to h5py's): the sharding
        # codec says what this is, shards whose inner chunks are the stored chunks (or packs
        # of them byte for byte, or them decoded); `RfsStore.grouped_layout` tells the rest
        grid = document["chunk_grid"]["configuration"]
        document["chunk_grid"] = {
            "name": "regular",
            "configuration": {**grid, "chunk_shape": list(layout.shard_shape)},
        }
        # decoded packs are the stored chunks with their byte codecs undone: plain bytes
        inner = document["codecs"][:1] if layout.decoded else document["codecs"]
        document["codecs"] = [
            sharding_codec(list(layout.inner_shape), inner, list(layout.shard_shape))
        ]
        return True


def _uncompressed(codecs: Any) -> bool:
    """Whether an array's chunks are stored as plain bytes (the ``bytes`` codec alone), so
    stored chunks can be packed into larger inner chunks byte for byte."""
    return len(codecs) == 1 and isinstance(codecs[0], dict) and codecs[0].get("name") == "bytes"


def _whole_packs(factor: int, pack: int, grid: int) -> int:
    """A shard's stored chunks along one axis rounded to whole packs: up when the shard holds
    the whole axis (the last inner chunks then reach past the array's end), down otherwise."""
    if factor >= grid:
        return math.ceil(grid / pack) * pack
    return max(pack, factor // pack * pack)


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
