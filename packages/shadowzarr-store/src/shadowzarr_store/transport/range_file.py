"""A seekable, read-only binary file over the transport's range reads, for libraries that want a
file object (h5py, tifffile, zipfile…) and a file that is a URL or an object in a bucket.

Such libraries read a few hundred bytes at a time; over a network each read the cache cannot
answer is a round trip. `RangeFile` keeps the file in blocks (least recently used dropped first)
and asks a read-ahead policy (`read_ahead.ReadAhead`) what else to fetch with each read; the
fetched ranges are rounded to blocks, neighbours merged by the one coalescing rule and sent in
one round. The requests (headers, access policy, retries, ``If-Match``, multi-range requests)
are the `RangeSource`'s: a file replaced while it is read raises `SourceChangedError`.
"""

from __future__ import annotations

import io
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from shadowzarr_spec import SourceError

from shadowzarr_store.transport.blocking import DEFAULT_MAX_GAP, RangeSource
from shadowzarr_store.transport.coalesce import coalesce
from shadowzarr_store.transport.locations import redact
from shadowzarr_store.transport.read_ahead import GrowingRuns

if TYPE_CHECKING:
    from collections.abc import Buffer, Callable, Iterable

    from shadowzarr_spec import SourceInfo

    from shadowzarr_store.transport.options import TransportOptions
    from shadowzarr_store.transport.read_ahead import ReadAhead
    from shadowzarr_store.transport.stats import StatsSnapshot

__all__ = ["RangeFile"]


class _Blocks:
    """The file's bytes held in blocks of ``block_size``, least recently used first."""

    def __init__(self, size: int, block_size: int, max_blocks: int) -> None:
        self.size = size
        self.block_size = block_size
        self.last_fetched: int | None = None
        self._max_blocks = max_blocks
        self._held: OrderedDict[int, bytes] = OrderedDict()
        self.holds: Callable[[int], bool] = self._held.__contains__
        """Whether block number ``block`` is held (the dict's own test: called per read)."""

    def span(self, offset: int, size: int) -> range:
        """The blocks holding bytes ``[offset, offset + size)`` (``size`` at least 1)."""
        return range(offset // self.block_size, (offset + size - 1) // self.block_size + 1)

    def get(self, offset: int, size: int) -> bytes | None:
        """The bytes, or None when a block of them is not held."""
        held, block = self._held, self.block_size
        first = offset // block
        parts = []
        for index in range(first, (offset + size - 1) // block + 1):
            data = held.get(index)
            if data is None:
                return None
            held.move_to_end(index)
            parts.append(data)
        joined = parts[0] if len(parts) == 1 else b"".join(parts)
        start = offset - first * block
        return joined[start : start + size]

    def put(self, offset: int, data: bytes) -> None:
        """Keep the blocks of ``data`` read at ``offset`` (a block boundary): whole blocks, and
        a short one only where the file ends."""
        block = self.block_size
        for i in range(0, len(data), block):
            part = data[i : i + block]
            if len(part) == block or offset + i + len(part) == self.size:
                self._held[(offset + i) // block] = part
                self._held.move_to_end((offset + i) // block)

    def drop(self, blocks: Iterable[int]) -> None:
        for block in blocks:
            self._held.pop(block, None)

    def evict(self) -> None:
        while len(self._held) > self._max_blocks:
            self._held.popitem(last=False)

    def whole(self) -> bytes | None:
        count = -(-self.size // self.block_size)
        if len(self._held) < count or any(b not in self._held for b in range(count)):
            return None
        return b"".join(self._held[b] for b in range(count))


class RangeFile(io.RawIOBase):
    """A seekable, read-only binary file at any location the transport reads, read in cached
    blocks with a pluggable read-ahead.

    Parameters
    ----------
    source
        A local path, a URL (``http(s)://``, ``s3://``, ``gs://``, ``az://``), or a
        `RangeSource` (which the caller then closes).
    read_ahead
        What to fetch along with a read (`GrowingRuns` by default; `NoReadAhead`, or a policy
        of your own: see `ReadAhead`). One policy object per file.
    options
        The `TransportOptions` of the `RangeSource` made for a location (headers,
        ``allowed_urls``, ``storage_options``, retries, multi-range requests…).
    block_size
        Cache granularity: every request covers whole blocks.
    head
        Bytes read when the file is opened (rounded up to whole blocks; default one block): the
        answer also gives the size of the file, so no separate request asks for it. 0 reads
        nothing until the first read (the size is then asked for with one byte).
    merge_gap, max_request
        Fetched blocks closer than ``merge_gap`` bytes share a request (the gap's blocks are
        kept too) of at most ``max_request`` bytes (None: no bound).
    cache_bytes
        Most bytes kept (at least 16 blocks); the least recently used blocks are dropped.

    Examples
    --------
    >>> with RangeFile("https://example.org/big.h5") as f:  # doctest: +SKIP
    ...     f.seek(1024)
    ...     header = f.read(512)
    ...     f.stats                       # StatsSnapshot(requests=…, bytes=…, rounds=…)
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | RangeSource,
        *,
        read_ahead: ReadAhead | None = None,
        options: TransportOptions | None = None,
        block_size: int = 64 * 1024,
        head: int | None = None,
        merge_gap: int = DEFAULT_MAX_GAP,
        max_request: int | None = None,
        cache_bytes: int = 256 * 2**20,
    ) -> None:
        super().__init__()
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1 byte, not {block_size}")
        self._owns_source = not isinstance(source, RangeSource)
        self.source = source if isinstance(source, RangeSource) else RangeSource(source, options)
        self.url = self.name = self.source.url
        self._policy: ReadAhead = read_ahead if read_ahead is not None else GrowingRuns()
        self._merge_gap = max(0, merge_gap)
        self._max_request = max_request
        self._cache_lock = threading.Lock()
        self._position = 0
        head = block_size if head is None else -(-max(0, head) // block_size) * block_size
        try:
            first = self.source.fetch_many([(0, head)])[0] if head else b""
            self._blocks = _Blocks(self.source.size, block_size, max(16, cache_bytes // block_size))
        except BaseException:
            self._close_source()
            raise
        if first:
            self._blocks.put(0, first)
            self._blocks.last_fetched = (len(first) - 1) // block_size

    # -- what the file is ----------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Bytes in the file."""
        return self._blocks.size

    @property
    def etag(self) -> str | None:
        return self.source.etag

    @property
    def info(self) -> SourceInfo:
        """What to record under ``sources`` (size and ETag, or a local file's identity)."""
        return self.source.info

    @property
    def stats(self) -> StatsSnapshot:
        """Requests, bytes, retries and sequential rounds this file cost so far."""
        return self.source.stats

    @property
    def multipart_ranges(self) -> bool | None:
        """Whether the server answers multi-range requests (None: not asked yet)."""
        return self.source.transport.multi_range_known(self.url)

    # -- io.RawIOBase --------------------------------------------------------------------------

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

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes from the position (all that is left when negative or None)."""
        left = max(0, self._blocks.size - self._position)
        data = self.read_at(self._position, left if size is None or size < 0 else size)
        self._position += len(data)
        return data

    def readinto(self, buffer: Buffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read_at(self._position, len(view))
        view[: len(data)] = data
        self._position += len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._close_source()
        super().close()

    def _close_source(self) -> None:
        # Also reached from __del__ of an instance whose __init__ failed half way.
        if getattr(self, "_owns_source", False) and hasattr(self, "source"):
            self.source.close()

    # -- reading through the cache -------------------------------------------------------------

    def read_at(self, offset: int, size: int) -> bytes:
        """Bytes at ``offset`` (fewer at the end of the file) through the cache and the
        read-ahead, without moving the position."""
        if self.closed:
            raise ValueError(f"read from a closed file ({redact(self.url)})")
        if offset < 0 or size < 0:
            raise ValueError(f"cannot read {size} bytes at {offset}")
        blocks = self._blocks
        size = min(size, blocks.size - offset)
        if size <= 0:
            return b""
        with self._cache_lock:
            wanted = self._policy.plan(offset, size, blocks)
            data = None if wanted else blocks.get(offset, size)
            if data is not None:
                return data  # a hit, and nothing to fetch ahead
            block = blocks.block_size
            wanted += [(b * block, block) for b in blocks.span(offset, size) if not blocks.holds(b)]
            self._fetch_blocks(wanted)
            data = blocks.get(offset, size)
            if data is None:
                raise SourceError(
                    f"{redact(self.url)}: bytes {offset}-{offset + size - 1} were not answered"
                )
            blocks.evict()
            return data

    def peek_at(self, offset: int, size: int) -> bytes | None:
        """The bytes at ``offset`` if the cache holds all of them, else None (nothing fetched)."""
        size = min(size, self.size - offset)
        if size <= 0:
            return b""
        with self._cache_lock:
            return self._blocks.get(offset, size)

    def cached(self, offset: int, size: int) -> bool:
        """Whether the cache holds every byte of the range (within the file)."""
        size = min(size, self.size - offset)
        with self._cache_lock:
            return size <= 0 or all(map(self._blocks.holds, self._blocks.span(offset, size)))

    def prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Bring the blocks of the ``(offset, size)`` ranges into the cache, in one round."""
        with self._cache_lock:
            blocks = self._blocks
            missing: set[int] = set()
            for offset, size in ranges:
                size = min(size, self.size - offset)
                if size > 0 and offset >= 0:
                    missing.update(b for b in blocks.span(offset, size) if not blocks.holds(b))
            if missing:
                self._fetch_blocks(_runs(sorted(missing), blocks.block_size))
                blocks.evict()

    def trim(self, offset: int, size: int, keep: list[tuple[int, int]]) -> None:
        """Drop the cached blocks of the range that hold none of the ``keep`` ranges, so that
        wide guesses read ahead do not push what was found out of the cache."""
        if size <= 0:
            return
        with self._cache_lock:
            blocks = self._blocks
            kept: set[int] = set()
            for start, length in keep:
                if length > 0:
                    kept.update(blocks.span(start, length))
            blocks.drop(b for b in blocks.span(offset, size) if b not in kept)

    def whole(self) -> bytes | None:
        """Every byte of the file when the cache holds all of it (a small file read whole)."""
        with self._cache_lock:
            return self._blocks.whole()

    def _fetch_blocks(self, ranges: list[tuple[int, int]]) -> None:
        """Fetch the blocks of ``ranges`` in one round, neighbours merged, and keep them."""
        blocks = self._blocks
        block = blocks.block_size
        spans = []
        for offset, size in ranges:
            start = max(0, offset) // block * block
            stop = min(blocks.size, -(-(offset + size) // block) * block)
            if stop <= start:
                continue
            if self._max_request is None or stop - start <= self._max_request:
                spans.append((start, stop))
            else:  # block by block, so that requests are filled up to max_request
                spans.extend((a, min(a + block, stop)) for a in range(start, stop, block))
        runs = coalesce(spans, self._merge_gap, self._max_request)
        if not runs:
            return
        # max_gap=-1: the runs are the requests (touching runs were split by max_request).
        answers = self.source.fetch_many([(r.start, r.end - r.start) for r in runs], max_gap=-1)
        for run, data in zip(runs, answers, strict=True):
            blocks.put(run.start, data)
        blocks.last_fetched = (runs[-1].end - 1) // block

    def __repr__(self) -> str:
        return f"{type(self).__name__}({redact(self.url)!r})"


def _runs(blocks: list[int], block_size: int) -> list[tuple[int, int]]:
    """``(offset, size)`` of each run of consecutive block numbers (sorted)."""
    runs: list[tuple[int, int]] = []
    first = previous = blocks[0]
    for index in blocks[1:]:
        if index != previous + 1:
            runs.append((first * block_size, (previous + 1 - first) * block_size))
            first = index
        previous = index
    runs.append((first * block_size, (previous + 1 - first) * block_size))
    return runs
