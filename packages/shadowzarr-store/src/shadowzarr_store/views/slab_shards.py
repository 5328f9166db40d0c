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
Any other selection, and any shard whose inner chunks are missing or out of order, goes through
zarr's decode.

The format is exactly ``sharding_indexed``: the name only tells zarr to use this decoder for
the shards the store synthesizes (`sharded_view`, `grouped_view`). zarr finds it through the
``zarr.codecs`` entry point of this distribution and through the registration at import here.
Nothing else in zarr's registry or configuration changes.
"""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
from zarr.abc.store import RangeByteRequest
from zarr.codecs.bytes import BytesCodec
from zarr.codecs.sharding import ShardingCodec
from zarr.core.array_spec import ArraySpec
from zarr.core.common import parse_named_configuration
from zarr.registry import register_codec

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    from zarr.abc.store import ByteGetter
    from zarr.core.buffer import NDBuffer
    from zarr.core.common import JSON
    from zarr.core.indexing import SelectorTuple

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
        run = _row_run(selection, shard_spec.shape) if self._slabs(shard_spec) else None
        found = _ZARRS if run is None else await self._rows(byte_getter, shard_spec, *run)
        if found is _ZARRS:
            return await super()._decode_partial_single(byte_getter, selection, shard_spec)
        return found

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
