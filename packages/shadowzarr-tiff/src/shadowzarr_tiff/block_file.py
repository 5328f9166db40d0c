"""A read-only file over the transport's range reads, with a block cache that reads ahead
along the IFD chain, so tifffile can parse a remote TIFF in a few rounds of requests.

tifffile walks the IFDs one at a time: seek, read a few hundred bytes, seek to the next IFD.
Over a network each of those reads would be a round trip. The pages of a stack are usually
written the same way one after another, so their IFDs are evenly spaced: once three cache misses
fall at the same stride, the next IFDs are fetched ahead, in parallel, twice as many each time
the guess holds. Neighbouring blocks are merged into one request. The requests themselves
(headers, access policy, retries, If-Match, multi-range requests) are the transport's.
"""

from __future__ import annotations

import io
from collections import OrderedDict, deque
from typing import TYPE_CHECKING

from shadowzarr_store.transport import RangeSource, TransportOptions

if TYPE_CHECKING:
    from collections.abc import Sequence

    from _typeshed import WriteableBuffer
    from shadowzarr_store.transport import StatsSnapshot

__all__ = ["BlockFile"]

_IFD_MARGIN = 512  # bytes of IFD (tags and their values) expected after its start
_MIN_STRIDE = 64  # bytes: closer reads are parts of one IFD, not successive IFDs


class BlockFile(io.RawIOBase):
    """A seekable, read-only binary file at ``url`` (any location the transport reads), read
    in cached blocks.

    Parameters
    ----------
    source
        A location, or a `RangeSource` (which the caller then closes).
    transport
        The `TransportOptions` of the `RangeSource` made for a location.
    block_size
        Cache granularity: every request covers whole blocks.
    read_ahead
        Bytes fetched after a cache miss that follows no pattern (headers, tag values).
    max_ahead
        Most IFD positions guessed in one round.
    merge_gap, max_request
        Blocks closer than ``merge_gap`` are fetched by one request of at most ``max_request``.
    cache_bytes
        Most bytes kept; the least recently used blocks are dropped.
    """

    def __init__(
        self,
        source: str | RangeSource,
        *,
        transport: TransportOptions | None = None,
        block_size: int = 1024,
        read_ahead: int = 65536,
        max_ahead: int = 4096,
        merge_gap: int = 16 * 1024,
        max_request: int = 16 * 2**20,
        cache_bytes: int = 256 * 2**20,
    ) -> None:
        super().__init__()
        self._owns_source = not isinstance(source, RangeSource)
        self.source = (
            source
            if isinstance(source, RangeSource)
            else RangeSource(source, transport or TransportOptions(), max_gap=0)
        )
        self.url = self.name = self.source.url
        self._block = block_size
        self._read_ahead_blocks = max(1, read_ahead // block_size)
        self._max_ahead = max_ahead
        self._merge_blocks = max(0, merge_gap // block_size)
        self._max_request_blocks = max(1, max_request // block_size)
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_blocks = max(16, cache_bytes // block_size)
        self._position = 0
        self._reads: deque[int] = deque(maxlen=64)  # where recent reads started
        self._pattern: tuple[int, int] | None = None  # (a miss, stride) of the IFDs guessed last
        self._ahead = 8
        try:
            self.size = self.source.size
        except BaseException:
            self.close()
            raise

    @property
    def etag(self) -> str | None:
        return self.source.etag

    @property
    def stats(self) -> StatsSnapshot:
        """Requests and bytes this file cost so far."""
        return self.source.stats

    @property
    def multipart_ranges(self) -> bool | None:
        """Whether the server answers multi-range requests (None: not asked yet)."""
        return self.source.transport.multi_range_known(self.url)

    # -- io.RawIOBase ------------------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self._position + offset
        elif whence == io.SEEK_END:
            position = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if position < 0:
            raise ValueError(f"negative seek position {position}")
        self._position = position
        return position

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        start = self._position
        stop = min(start + len(view), self.size)
        if stop <= start:
            return 0
        data = self.read_range(start, stop)
        view[: len(data)] = data
        self._position = start + len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed and getattr(self, "_owns_source", False):
            self.source.close()
        super().close()

    # -- reading -----------------------------------------------------------------------------
    def read_range(self, start: int, stop: int) -> bytes:
        """Bytes [start, stop), fetching the blocks that are not cached."""
        first, last = start // self._block, (stop - 1) // self._block
        wanted = range(first, last + 1)
        missing = [b for b in wanted if b not in self._cache]
        if missing:
            self._fetch_blocks(sorted(set(missing) | set(self._guess(start, last))))
        self._reads.append(start)
        parts = []
        for index in wanted:
            block = self._cache[index]
            self._cache.move_to_end(index)
            parts.append(block)
        joined = b"".join(parts)
        offset = start - first * self._block
        return joined[offset : offset + (stop - start)]

    def cached(self, start: int, stop: int) -> bool:
        """Whether bytes [start, stop) are all in the cache."""
        stop = min(stop, self.size)
        return all(
            b in self._cache for b in range(start // self._block, (stop - 1) // self._block + 1)
        )

    def prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Bring the blocks holding ``ranges`` into the cache, in as few requests as possible."""
        blocks: set[int] = set()
        for start, stop in ranges:
            stop = min(stop, self.size)
            if stop > start:
                blocks.update(range(start // self._block, (stop - 1) // self._block + 1))
        missing = sorted(b for b in blocks if b not in self._cache)
        if missing:
            self._fetch_blocks(missing)

    def trim(self, start: int, stop: int, keep: list[tuple[int, int]]) -> None:
        """Drop cached blocks inside [start, stop) that hold none of the ``keep`` ranges, so a
        walk that fetched wide windows does not push what it found out of the cache."""
        wanted: set[int] = set()
        for a, b in keep:
            if b > a:
                wanted.update(range(a // self._block, (b - 1) // self._block + 1))
        first, last = start // self._block, max(start, stop - 1) // self._block
        for block in [b for b in self._cache if first <= b <= last and b not in wanted]:
            del self._cache[block]

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Bytes of each [start, stop) range, fetched together in one round (not cached)."""
        return self.source.fetch_many([(start, stop - start) for start, stop in ranges])

    def _guess(self, start: int, last: int) -> list[int]:
        """Blocks to fetch along with a miss at ``start``: the next IFDs when the reads so far
        are evenly spaced, else the next ``read_ahead`` bytes."""
        history = [*self._reads, start]
        stride = None
        if self._pattern is not None:
            anchor, known = self._pattern
            if start > anchor and (start - anchor) % known == 0:
                stride = known
        if stride is None:
            stride = _stride(history)
        self._pattern = None if stride is None else (start, stride)
        total_blocks = (self.size + self._block - 1) // self._block
        if stride is None:
            self._ahead = 8
            return list(range(last + 1, min(last + 1 + self._read_ahead_blocks, total_blocks)))
        guesses: list[int] = []
        for step in range(1, self._ahead + 1):
            position = start + step * stride
            if position >= self.size:
                break
            block = position // self._block
            guesses.append(block)
            if position % self._block > self._block - _IFD_MARGIN and block + 1 < total_blocks:
                guesses.append(block + 1)  # the IFD may cross the block's end
        self._ahead = min(self._ahead * 2, self._max_ahead)
        return guesses

    def _fetch_blocks(self, blocks: Sequence[int]) -> None:
        runs: list[tuple[int, int]] = []
        for block in blocks:
            if block in self._cache:
                continue
            if (
                runs
                and block - runs[-1][1] <= self._merge_blocks + 1
                and block - runs[-1][0] < self._max_request_blocks
            ):
                runs[-1] = (runs[-1][0], block)
            else:
                runs.append((block, block))
        ranges = [(a * self._block, (b + 1 - a) * self._block) for a, b in runs]
        results = self.source.fetch_many(ranges)
        for (first, _), data in zip(runs, results, strict=True):
            for i in range(0, len(data), self._block):
                self._cache[first + i // self._block] = data[i : i + self._block]
        while len(self._cache) > self._cache_blocks:
            self._cache.popitem(last=False)


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
