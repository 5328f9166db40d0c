"""Reading a key as the sharded view shows it: a synthesized shard index, then the stored
chunk's bytes that the asked range covers (see `shadowzarr_store.views.sharded`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowzarr_spec import InlineRef
from shadowzarr_spec.keys import array_of_chunk_key
from zarr.abc.store import RangeByteRequest

from shadowzarr_store.checked_reads import read_plan
from shadowzarr_store.resolve import byte_window, finish_inline, finish_whole, plan_read

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest

    from shadowzarr_store.resolve import Resolver, SourceValue
    from shadowzarr_store.source_reader import SourceReader
    from shadowzarr_store.views.sharded import ShardedView, ShardLayout

__all__ = ["ShardedReads"]


class ShardedReads:
    """The sharded view's reads of one store, over its resolver and reader."""

    def __init__(self, view: ShardedView, resolver: Resolver, reader: SourceReader) -> None:
        self.view = view
        self._resolver = resolver
        self._reader = reader

    def layout(self, key: str) -> ShardLayout | None:
        """The view of the array of chunk ``key``; None when the view leaves it as stored."""
        split = array_of_chunk_key(key)
        return None if split is None else self.view.layout(split[0])

    async def get_in_view(
        self, key: str, value: InlineRef | SourceValue, byte_range: ByteRequest | None
    ) -> bytes | memoryview | None:
        """The value of ``key`` in the sharded view; None when the view leaves it unchanged."""
        layout = self.layout(key)
        if layout is None:
            return None
        start, end = byte_window(byte_range, layout.total)
        head = layout.index[start : min(end, layout.index_bytes)]
        if end <= layout.index_bytes:
            return head
        data_range = RangeByteRequest(
            max(start, layout.index_bytes) - layout.index_bytes, end - layout.index_bytes
        )
        body: bytes | memoryview
        if isinstance(value, InlineRef):
            body = finish_inline(key, self._resolver.layout_of_key(key), value.data, data_range)
        elif value.offset is None:
            whole, _ = await self._reader.read_whole(value.url)
            body = finish_whole(value, whole, data_range)
        else:
            body = await read_plan(self._reader, plan_read(value, data_range))
        return bytes(head) + bytes(body) if head else body
