"""Shards of the store's views whose inner chunks are slabs of the first axis, decoded without
zarr's shard-sized copy.

zarr's sharding codec decodes a shard into a freshly allocated array of the selection's
shape, copying every inner chunk into it, and the array's read then copies that array into the
caller's result. Both copies run on zarr's event-loop thread, and the fresh array's pages are
zeroed by the kernel when first touched: in a sequential read of a 77 MB recording of 4 KiB
chunks, zeroing fresh pages alone was a third of that thread's time. When the inner chunks of
a shard are whole along every axis but the first, the bytes of consecutive inner chunks stored
in order, one after the other, are the rows they hold in C order. For a selection of a run of
rows, with any slices of the other axes (a sequential read, a time window of some channels),
this codec reads the index, then those inner chunks in one read (the ones zarr reads), and
decodes them as one chunk: a view of the bytes the store returned (of just the selected columns
when fewer are asked for), so the only copy left is zarr's own into the result.
A selection that picks few scattered points of a shard reads only the byte runs of its inner
chunks that hold them (`views.sparse_selection`). Any other selection, and any shard whose inner
chunks are missing or out of order, goes through zarr's decode.

The format is exactly ``sharding_indexed``: the name only tells zarr to use this decoder for
the shards the store synthesizes (`sharded_view`, `grouped_view`). zarr finds it through the
``zarr.codecs`` entry point of this distribution and through the registration at import here.
Nothing else in zarr's registry or configuration changes.
"""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import numpy as np
from zarr.abc.store import RangeByteRequest
from zarr.codecs.bytes import BytesCodec
from zarr.codecs.sharding import ShardingCodec, _ShardingByteGetter
from zarr.core.array_spec import ArraySpec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.chunk_grids import ChunkGrid
from zarr.core.common import parse_named_configuration
from zarr.core.indexing import get_indexer
from zarr.registry import register_codec
from zarr.storage import StorePath

from shadowzarr_store.merge import bounded_gaps
from shadowzarr_store.views.sparse_selection import (
    SPARSE_GAP,
    element_runs,
    picks_points,
    sparse_enough,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    from zarr.abc.store import ByteGetter
    from zarr.core.buffer import Buffer, NDBuffer
    from zarr.core.common import JSON
    from zarr.core.indexing import Indexer, SelectorTuple

__all__ = ["SLAB_SHARDING", "SlabShardingCodec", "slab_inner_shape"]

SLAB_SHARDING = "shadowzarr.sharding_indexed"
"""The codec name the views give shards whose inner chunks are slabs (see `slab_inner_shape`)."""


def slab_inner_shape(inner_shape: list[int], shard_shape: list[int], codecs: list[Any]) -> bool:
    """Whether a view's shard of ``shard_shape`` in inner chunks of ``inner_shape`` encoded by
    ``codecs`` (their documents) can be decoded as one chunk: the plain ``bytes`` codec alone,
    and inner chunks whole along every axis but the first."""
    return (
        len(codecs) == 1
        and isinstance(codecs[0], dict)
        and codecs[0].get("name") == "bytes"
        and _slab_shapes(inner_shape, shard_shape)
    )


def _slab_shapes(inner_shape: Sequence[int], shard_shape: Sequence[int]) -> bool:
    """Whether inner chunks of ``inner_shape`` are whole along every axis of a shard of
    ``shard_shape`` but the first, and tile that one."""
    return (
        len(inner_shape) == len(shard_shape) >= 1
        and tuple(inner_shape[1:]) == tuple(shard_shape[1:])
        and inner_shape[0] > 0
        and shard_shape[0] % inner_shape[0] == 0
    )


class SlabShardingCodec(ShardingCodec):
    """``sharding_indexed`` with a run of rows of a shard of slabs decoded as one chunk;
    everything else as zarr's `ShardingCodec` does it. (Not re-decorated as a dataclass: that
    would replace the parent's parsing ``__init__``.)"""

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _, configuration = parse_named_configuration(data, SLAB_SHARDING)
        return cls(**configuration)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, JSON]:
        return {**super().to_dict(), "name": SLAB_SHARDING}

    async def _decode_partial_single(
        self, byte_getter: ByteGetter, selection: SelectorTuple, shard_spec: ArraySpec
    ) -> NDBuffer | None:
        if self._slabs(shard_spec):
            run = _row_run(selection, shard_spec.shape)
            if run is not None:
                found = await self._rows(byte_getter, shard_spec, *run)
                if found is not _ZARRS:
                    return found
            elif picks_points(selection):
                return await self._points(byte_getter, selection, shard_spec)
        return await super()._decode_partial_single(byte_getter, selection, shard_spec)

    async def _points(
        self, byte_getter: ByteGetter, selection: SelectorTuple, shard_spec: ArraySpec
    ) -> NDBuffer | None:
        """A selection of points or strides: when it picks few of the shard's elements, only
        the byte runs holding them (`views.sparse_selection`), its reads joined across small
        gaps only; else zarr's decode."""
        indexer = get_indexer(
            selection,
            shape=shard_spec.shape,
            chunk_grid=ChunkGrid.from_sizes(shard_spec.shape, self.chunk_shape),
        )
        if not sparse_enough(indexer, shard_spec.shape):
            return await super()._decode_partial_single(byte_getter, selection, shard_spec)
        itemsize = shard_spec.dtype.to_native_dtype().itemsize
        projections = list(indexer)
        plan: dict[tuple[int, ...], np.ndarray | None] = {}
        for coords, chunk_selection, _, _ in projections:
            key = tuple(int(c) for c in coords)
            if key not in plan:
                plan[key] = element_runs(indexer, chunk_selection, self.chunk_shape, itemsize)
        with bounded_gaps(SPARSE_GAP):
            if not isinstance(byte_getter, StorePath) or all(r is None for r in plan.values()):
                return await super()._decode_partial_single(byte_getter, selection, shard_spec)
            return await self._read_points(
                byte_getter, selection, shard_spec, indexer, projections, plan
            )

    async def _read_points(
        self,
        byte_getter: StorePath,
        selection: SelectorTuple,
        shard_spec: ArraySpec,
        indexer: Indexer,
        projections: list[Any],
        plan: dict[tuple[int, ...], np.ndarray | None],
    ) -> NDBuffer | None:
        """The index, then in one `get_ranges` each planned inner chunk's runs (or the whole
        of it), decoded by zarr's inner pipeline. A ranged inner chunk's bytes outside its runs
        are zeros: zarr copies only the picked elements out of it."""
        per_shard = tuple(s // c for s, c in zip(shard_spec.shape, self.chunk_shape, strict=True))
        count = math.prod(per_shard)
        prototype = default_buffer_prototype()
        head = await byte_getter.get(
            prototype=prototype, byte_range=RangeByteRequest(0, 16 * count)
        )
        if head is None:
            return None  # no shard: the fill
        raw = head.as_numpy_array().view(np.uint8)
        if raw.ndim != 1 or len(raw) != 16 * count:
            return await super()._decode_partial_single(byte_getter, selection, shard_spec)
        table = raw.view("<u8").reshape(count, 2)
        inner = math.prod(self.chunk_shape) * shard_spec.dtype.to_native_dtype().itemsize
        asks: list[RangeByteRequest] = []
        parts: list[tuple[tuple[int, ...], np.ndarray | None, int, int]] = []
        for coords, runs in plan.items():
            offset, length = (int(v) for v in table[int(np.ravel_multi_index(coords, per_shard))])
            if offset == _EMPTY and length == _EMPTY:
                continue  # not stored: zarr reads the fill
            first = len(asks)
            if runs is None or length != inner:
                asks.append(RangeByteRequest(offset, offset + length))
                runs = None
            else:
                asks += [RangeByteRequest(offset + a, offset + b) for a, b in runs.tolist()]
            parts.append((coords, runs, first, len(asks)))
        answers: list[Buffer | None] = [None] * len(asks)
        async for group in byte_getter.store.get_ranges(
            byte_getter.path, asks, prototype=prototype, max_gap_bytes=SPARSE_GAP
        ):
            for i, found in group:
                answers[i] = found
        shard_dict: dict[tuple[int, ...], Buffer] = {}
        for coords, runs, first, last in parts:
            got = answers[first:last]
            if any(found is None for found in got):
                return None  # the shard vanished while it was read, as zarr takes it
            if runs is None:
                shard_dict[coords] = cast("Buffer", got[0])
                continue
            block = np.zeros(inner, dtype=np.uint8)
            for (a, b), found in zip(runs.tolist(), got, strict=True):
                data = cast("Buffer", found).as_numpy_array().view(np.uint8)
                if len(data) != b - a:  # a short answer: zarr's decode, and its error
                    return await super()._decode_partial_single(byte_getter, selection, shard_spec)
                block[a:b] = data
            shard_dict[coords] = prototype.buffer.from_array_like(block)
        out = shard_spec.prototype.nd_buffer.empty(
            shape=indexer.shape,
            dtype=shard_spec.dtype.to_native_dtype(),
            order=shard_spec.order,
        )
        chunk_spec = self._get_chunk_spec(shard_spec)
        await self._get_inner_pipeline(shard_spec).read(
            [
                (_ShardingByteGetter(shard_dict, coords), chunk_spec, chunk_sel, out_sel, done)
                for coords, chunk_sel, out_sel, done in projections
            ],
            out,
        )
        if hasattr(indexer, "sel_shape"):
            return out.reshape(indexer.sel_shape)
        return out

    async def _rows(
        self,
        byte_getter: ByteGetter,
        shard_spec: ArraySpec,
        start: int,
        stop: int,
        rest: tuple[slice, ...],
    ) -> NDBuffer | Literal[_Fallback.ZARRS] | None:
        """Rows ``[start, stop)`` of a shard, and ``rest`` of its other axes, viewed in the bytes
        of the inner chunks holding those rows when they lie in order one after the other (one
        read after the index; the same inner chunks zarr reads): else `_ZARRS`, zarr's decode
        (a missing inner chunk reads as the fill there)."""
        rows = self.chunk_shape[0]
        count = shard_spec.shape[0] // rows
        inner = math.prod(self.chunk_shape) * shard_spec.dtype.to_native_dtype().itemsize
        prototype = shard_spec.prototype
        head = await byte_getter.get(
            prototype=prototype, byte_range=RangeByteRequest(0, 16 * count)
        )
        if head is None:
            return None  # no shard: the fill
        first, last = start // rows, -(-stop // rows)
        table = head.as_numpy_array().view(np.uint8)
        if not inner or table.ndim != 1 or len(table) != 16 * count:
            return _ZARRS
        span = table.view("<u8").reshape(count, 2)[first:last]
        offset = int(span[0, 0])
        if not (
            bool((span[:, 1] == inner).all())
            and bool((span[:, 0] == offset + inner * np.arange(len(span), dtype=np.uint64)).all())
        ):
            return _ZARRS
        size = len(span) * inner
        data = await byte_getter.get(
            prototype=prototype, byte_range=RangeByteRequest(offset, offset + size)
        )
        if data is None or len(data) != size:
            return _ZARRS
        spec = ArraySpec(
            shape=(len(span) * rows, *shard_spec.shape[1:]),
            dtype=shard_spec.dtype,
            fill_value=shard_spec.fill_value,
            config=shard_spec.config,
            prototype=prototype,
        )
        codec = self.codecs[0]
        assert isinstance(codec, BytesCodec)  # `_slabs` holds it
        (array,) = await codec.decode([(data, spec)])
        assert array is not None
        return array[(slice(start - first * rows, stop - first * rows), *rest)]

    def _slabs(self, shard_spec: ArraySpec) -> bool:
        """`slab_inner_shape` again at read time: metadata naming this codec may come from a
        reference file, not from the views."""
        return (
            len(self.codecs) == 1
            and isinstance(self.codecs[0], BytesCodec)
            and len(self.index_codecs) == 1
            and isinstance(self.index_codecs[0], BytesCodec)
            and self.index_codecs[0].endian in ("little", None)
            and getattr(self.index_location, "value", self.index_location) == "start"
            and _slab_shapes(self.chunk_shape, shard_spec.shape)
        )


_EMPTY = (1 << 64) - 1
"""Offset and length of an inner chunk that is not stored, in a shard index."""


class _Fallback(enum.Enum):
    ZARRS = enum.auto()


_ZARRS: Final = _Fallback.ZARRS
"""`SlabShardingCodec._rows` cannot view the selection: zarr's own decode reads it."""


def _row_run(
    selection: SelectorTuple, shape: tuple[int, ...]
) -> tuple[int, int, tuple[slice, ...]] | None:
    """``(start, stop, rest)`` when ``selection`` is a run of rows of a ``shape`` array (step 1)
    and slices ``rest`` of its other axes; else None (integers, arrays, masks, strides along the
    first axis: zarr's decode)."""
    if not (isinstance(selection, tuple) and len(selection) == len(shape) >= 1):
        return None
    slices = tuple(s for s in selection if isinstance(s, slice))
    if len(slices) != len(selection):
        return None
    start, stop, step = slices[0].indices(shape[0])
    if step != 1 or stop <= start:
        return None
    return start, stop, slices[1:]


register_codec(SLAB_SHARDING, SlabShardingCodec)
