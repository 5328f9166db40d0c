"""Adaptive read-ahead blocks for the metadata that is not an index (headers, heaps, groups).

Like remfile: a miss loads a run of blocks that grows ×1.7 while misses are sequential and
shrinks ×1/1.7 otherwise, at least the blocks the read needs, at most ``max_run_blocks``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..format.byte_source import RangeFetcher

__all__ = ["BlockCache"]

_GROWTH = 1.7


class BlockCache:
    def __init__(
        self,
        fetcher: RangeFetcher,
        size: int,
        block_size: int = 64 * 1024,
        max_run_blocks: int = 256,
        max_bytes: int = 1 << 30,
    ) -> None:
        self._fetcher = fetcher
        self._size = size
        self.block_size = block_size
        self._max_run = max_run_blocks
        self._max_blocks = max(1, max_bytes // block_size)
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._run = 1.0
        self._last_loaded = -2

    def get(self, offset: int, size: int) -> bytes | None:
        """Cached bytes of the range, or None if any block of it is missing."""
        first, last = self._span(offset, size)
        parts = []
        for block in range(first, last + 1):
            data = self._blocks.get(block)
            if data is None:
                return None
            self._blocks.move_to_end(block)
            parts.append(data)
        joined = parts[0] if len(parts) == 1 else b"".join(parts)
        lo = offset - first * self.block_size
        return joined[lo : lo + size]

    def read(self, offset: int, size: int) -> bytes:
        """The bytes of the range, loading missing blocks with one request."""
        cached = self.get(offset, size)
        if cached is not None:
            return cached
        first, last = self._span(offset, size)
        missing = next(b for b in range(first, last + 1) if b not in self._blocks)
        grow = missing == self._last_loaded + 1
        self._run = min(self._max_run, self._run * _GROWTH) if grow else max(1, self._run / _GROWTH)
        count = max(round(self._run), last - missing + 1)
        # Stop early at a block already held beyond what this read needs.
        for block in range(last + 1, missing + count):
            if block in self._blocks:
                count = block - missing
                break
        start = missing * self.block_size
        end = min(self._size, (missing + count) * self.block_size)
        (data,) = self._fetcher.fetch_many([(start, end - start)])
        for i in range(count):
            chunk = data[i * self.block_size : (i + 1) * self.block_size]
            if chunk:
                self._blocks[missing + i] = chunk
        self._last_loaded = missing + count - 1
        while len(self._blocks) > self._max_blocks:
            self._blocks.popitem(last=False)
        result = self.get(offset, size)
        assert result is not None
        return result

    def load_rest(self) -> None:
        """Load every block not held yet with one batch (for files small enough to read whole)."""
        missing = [b for b in range(-(-self._size // self.block_size)) if b not in self._blocks]
        if not missing:
            return
        ranges = [
            (b * self.block_size, min(self.block_size, self._size - b * self.block_size))
            for b in missing
        ]
        for block, data in zip(missing, self._fetcher.fetch_many(ranges), strict=True):
            if data:
                self._blocks[block] = data
        self._last_loaded = missing[-1]

    def whole(self) -> bytes | None:
        """The whole file when every block is held (a file read whole), else None."""
        count = -(-self._size // self.block_size)
        if len(self._blocks) < count or any(b not in self._blocks for b in range(count)):
            return None
        return b"".join(self._blocks[b] for b in range(count))

    def add_head(self, data: bytes) -> None:
        """Store the first bytes of the file (fetched before the size was known)."""
        for i in range(len(data) // self.block_size + 1):
            block = data[i * self.block_size : (i + 1) * self.block_size]
            full = len(block) == self.block_size or (i * self.block_size + len(block) == self._size)
            if block and full:
                self._blocks[i] = block
        self._last_loaded = max(self._blocks, default=-2)

    def _span(self, offset: int, size: int) -> tuple[int, int]:
        return offset // self.block_size, (offset + max(size, 1) - 1) // self.block_size
