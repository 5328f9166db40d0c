"""A remote TIFF as a file object: the transport's `RangeFile` in 1 KiB blocks, with a
read-ahead that follows the IFD chain, so tifffile can parse a remote TIFF in a few rounds.

tifffile walks the IFDs one at a time: seek, read a few hundred bytes, seek to the next IFD.
Over a network each of those reads would be a round trip. The pages of a stack are usually
written the same way one after another, so their IFDs are evenly spaced: once three cache misses
fall at the same stride, the next IFDs are fetched ahead, in parallel, twice as many each time
the guess holds. Neighbouring blocks are merged into one request (the file's rule).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from shadowzarr_store.transport import RangeFile

if TYPE_CHECKING:
    import os

    from shadowzarr_store.transport import CachedBlocks, RangeSource, TransportOptions

__all__ = ["BlockFile", "IfdStride"]

_IFD_MARGIN = 512  # bytes of IFD (tags and their values) expected after its start
_MIN_STRIDE = 64  # bytes: closer reads are parts of one IFD, not successive IFDs
_FIRST_AHEAD = 8  # IFD positions guessed in the first round of a pattern
_HISTORY = 64  # earlier reads among which a stride is looked for


class IfdStride:
    """Read-ahead along evenly spaced IFDs: on a miss, the next IFDs when the reads so far are
    evenly spaced (twice as many each time the guess holds, up to ``max_ahead``), else the
    next ``read_ahead`` bytes."""

    def __init__(self, read_ahead: int = 65536, max_ahead: int = 4096) -> None:
        self._read_ahead = read_ahead
        self._max_ahead = max_ahead
        self._reads: deque[int] = deque(maxlen=_HISTORY + 1)  # where recent reads started
        self._pattern: tuple[int, int] | None = None  # (a miss, stride) of the IFDs guessed last
        self._ahead = _FIRST_AHEAD

    def plan(self, offset: int, size: int, cache: CachedBlocks) -> list[tuple[int, int]]:
        block = cache.block_size
        first, last = offset // block, (offset + size - 1) // block
        self._reads.append(offset)
        holds = cache.holds
        if holds(first) and (first == last or all(map(holds, range(first + 1, last + 1)))):
            return []
        guesses = self._guess(offset, last, cache)
        return [(b * block, block) for b in guesses if not cache.holds(b)]

    def _guess(self, start: int, last: int, cache: CachedBlocks) -> list[int]:
        history = list(self._reads)  # the newest is ``start``
        stride = None
        if self._pattern is not None:
            anchor, known = self._pattern
            if start > anchor and (start - anchor) % known == 0:
                stride = known
        if stride is None:
            stride = _stride(history)
        self._pattern = None if stride is None else (start, stride)
        block = cache.block_size
        total_blocks = -(-cache.size // block)
        if stride is None:
            self._ahead = _FIRST_AHEAD
            ahead_blocks = max(1, self._read_ahead // block)
            return list(range(last + 1, min(last + 1 + ahead_blocks, total_blocks)))
        guesses: list[int] = []
        for step in range(1, self._ahead + 1):
            position = start + step * stride
            if position >= cache.size:
                break
            guesses.append(position // block)
            if position % block > block - _IFD_MARGIN and position // block + 1 < total_blocks:
                guesses.append(position // block + 1)  # the IFD may cross the block's end
        self._ahead = min(self._ahead * 2, self._max_ahead)
        return guesses


def _stride(history: list[int]) -> int | None:
    """The smallest stride d (at least an IFD apart) such that the newest read x has x - d and
    x - 2d among earlier reads: the spacing of the IFDs tifffile walks."""
    if len(history) < 3:
        return None
    newest = history[-1]
    earlier = set(history[:-1])
    strides = [
        newest - previous
        for previous in earlier
        if newest - previous >= _MIN_STRIDE and newest - 2 * (newest - previous) in earlier
    ]
    return min(strides, default=None)


class BlockFile(RangeFile):
    """A seekable, read-only TIFF at any location the transport reads: a `RangeFile` with the
    `IfdStride` read-ahead.

    Parameters
    ----------
    source
        A location, or a `RangeSource` (which the caller then closes).
    transport
        The `TransportOptions` of the `RangeSource` made for a location.
    block_size
        Cache granularity: every request covers whole blocks.
    read_ahead
        Bytes fetched after a cache miss that follows no pattern (headers, tag values), and
        with the first block when the file is opened.
    max_ahead
        Most IFD positions guessed in one round.
    merge_gap, max_request
        Blocks closer than ``merge_gap`` are fetched by one request of at most ``max_request``.
    cache_bytes
        Most bytes kept; the least recently used blocks are dropped.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | RangeSource,
        *,
        transport: TransportOptions | None = None,
        block_size: int = 1024,
        read_ahead: int = 65536,
        max_ahead: int = 4096,
        merge_gap: int = 16 * 1024,
        max_request: int = 16 * 2**20,
        cache_bytes: int = 256 * 2**20,
    ) -> None:
        super().__init__(
            source,
            read_ahead=IfdStride(read_ahead, max_ahead),
            options=transport,
            block_size=block_size,
            # tifffile's first read is the header: what its miss would fetch comes with the size.
            head=block_size * (1 + max(1, read_ahead // block_size)),
            merge_gap=merge_gap,
            max_request=max_request,
            cache_bytes=cache_bytes,
        )
