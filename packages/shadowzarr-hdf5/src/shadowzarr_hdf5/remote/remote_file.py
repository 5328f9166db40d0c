"""A read-only, seekable file object over the transport, for ``h5py.File(RemoteFile(url))``.

The transport's `RangeFile` with HDF5's read-ahead (`GrowingRuns`, remfile's rule for metadata
written in runs) and one more cache in front: the ranges prefetched for chunk indexes. Every
read fetched from the network is inspected: an index root starts a level-at-a-time prefetch of
the whole index, so h5py's node-by-node reads that follow cost nothing.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shadowzarr_store.transport import DEFAULT_MAX_GAP, GrowingRuns, RangeFile, RangeSource

from ..format.errors import Hdf5FormatError
from ..format.index_walk import drive
from ..format.superblock import Superblock
from ..format.superblock_extension import read_superblock
from ..h5py_glue import read_chunk_tables
from .prefetch import INDEX_SIGNATURES, ConnectionsAhead, RangeCache, recognise_index

if TYPE_CHECKING:
    from shadowzarr_store.transport import TransportOptions

    from ..format.chunk_index import ChunkTable

__all__ = ["ReadStats", "RemoteFile"]


@dataclass(slots=True)
class ReadStats:
    """What the file object was asked for and where the answers came from."""

    reads: int = 0
    index_hits: int = 0
    block_reads: int = 0
    prefetches: int = 0
    """Index walks started from a recognised root."""


class RemoteFile(RangeFile):
    """Read-only file object over the transport's ranges (any location) with index prefetch.

    Parameters
    ----------
    source
        A URL (``http(s)://``, ``s3://``, ``gs://``, ``az://``), a local path, or a
        `RangeSource` (which the caller then closes).
    prefetch
        Recognise chunk-index roots in reads and fetch whole indexes level by level.
    block_size, max_run_blocks
        Metadata read-ahead: block size, and the cap on blocks loaded by one miss.
    transport
        The `TransportOptions` of the `RangeSource` made for a location (headers,
        ``allowed_urls``, ``storage_options``, retries, multi-range requests…).
    whole_file_below
        A file no larger than this is read whole with the first batch: its metadata is spread
        through it, and at 200 Mbit/s 8 MiB cost about as much as 15 one-block round trips.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | RangeSource,
        *,
        prefetch: bool = True,
        block_size: int = 64 * 1024,
        max_run_blocks: int = 256,
        transport: TransportOptions | None = None,
        whole_file_below: int = 8 * 2**20,
    ) -> None:
        # The first block answers h5py's first reads and, through Content-Range, the size:
        # no separate HEAD round trip.
        started = time.monotonic()
        super().__init__(
            source,
            read_ahead=GrowingRuns(max_run_blocks),
            options=transport,
            block_size=block_size,
            head=block_size,
            cache_bytes=1 << 30,
        )
        first_round = time.monotonic() - started
        try:
            if self.size <= whole_file_below:
                self.prefetch([(0, self.size)])
        except BaseException:
            self.close()
            raise
        self._walk_indexes = prefetch
        self._ranges = RangeCache()
        self._roots: set[int] = set()
        self._ahead = ConnectionsAhead(self.source.transport.options.max_connections, first_round)
        self._superblock: Superblock | None = None
        self._lock = threading.RLock()
        self.read_stats = ReadStats()

    @property
    def fetcher(self) -> RangeSource:
        """The `RangeSource` the file reads (its ``source``)."""
        return self.source

    @property
    def superblock(self) -> Superblock:
        if self._superblock is None:
            self._superblock = read_superblock(self)
        return self._superblock

    def read_at(self, offset: int, size: int) -> bytes:
        """Bytes at ``offset`` (fewer at the end of the file), through the index ranges and the
        blocks, without moving the position h5py reads from."""
        if self.closed:
            raise ValueError("read from a closed RemoteFile")
        size = max(0, min(size, self.size - offset))
        if size == 0:
            return b""
        with self._lock:
            self.read_stats.reads += 1
            data = self._ranges.get(offset, size)
            if data is not None:
                self.read_stats.index_hits += 1
                return data
            self.read_stats.block_reads += 1
            data = super().read_at(offset, size)
            if self._walk_indexes and data[:4] in INDEX_SIGNATURES and offset not in self._roots:
                self._start_prefetch(offset, data)
            return data

    # -- RangeFetcher protocol (so index parsers can read through the caches) -----------------

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Serve ranges from the caches; fetch the rest exactly, in one concurrent batch."""
        return self._fetch(ranges, None)

    def fetch_nodes(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """`fetch_many` for the nodes of an index level: they share a request only across gaps
        no longer than the shortest node asked for, so that on a server answering one range
        per request (S3) a level moves at most twice its nodes' bytes, never the chunk data
        between nearby nodes."""
        shortest = min((n for _, n in ranges), default=0)
        return self._fetch(ranges, max(0, min(DEFAULT_MAX_GAP, shortest)))

    def expect_round(self, requests: int) -> None:
        """A round of about ``requests`` node reads is coming (the widest level of the indexes
        about to be walked): the next, narrower round opens connections for it
        (`ConnectionsAhead`)."""
        self._ahead.expect(requests)

    def _fetch(self, ranges: list[tuple[int, int]], max_gap: int | None) -> list[bytes]:
        with self._lock:
            out: list[bytes | None] = [self._cached(o, n) for o, n in ranges]
            for (offset, _), data in zip(ranges, out, strict=True):
                # Keep block-cache hits as ranges too: h5py's later reads of these nodes must
                # not look like new index roots.
                if data is not None:
                    self._ranges.add(offset, data)
            missing = [i for i, b in enumerate(out) if b is None]
            if missing:
                wanted = [ranges[i] for i in missing]
                singles = False
                if max_gap is not None:  # a level of an index
                    # Whether the server answers multi-range requests is asked beside this
                    # level, not in a round of its own before it.
                    singles = len(wanted) > 1 and self.source.probe_multi_range()
                    ahead = self._ahead.before_round(len(wanted))
                    if not self.source.transport.multi_range_known(self.source.url):
                        # (a multi-range server needs few requests)
                        self.source.warm(ahead, after=len(wanted))
                fetched = self.source.fetch_many(wanted, max_gap=max_gap, singles=singles)
                for i, (offset, _), data in zip(missing, wanted, fetched, strict=True):
                    self._ranges.add(offset, data)
                    out[i] = data
            return [b if b is not None else b"" for b in out]

    def prefetch_dataset_indexes(self, datasets: list[Any]) -> list[ChunkTable]:
        """Fetch the indexes of many datasets at once (h5py datasets or header addresses).

        Walks run in lockstep, so the rounds grow with the deepest index, not with the number
        of datasets; h5py's later index reads are then served from memory.
        """
        return read_chunk_tables(self, datasets, superblock=self.superblock)

    # -- internals ----------------------------------------------------------------------------

    def _cached(self, offset: int, size: int) -> bytes | None:
        size = max(0, min(size, self.size - offset))
        data = self._ranges.get(offset, size)
        return data if data is not None else self.peek_at(offset, size)

    def _start_prefetch(self, offset: int, data: bytes) -> None:
        walk = recognise_index(self.superblock, offset, data)
        if walk is None:
            return
        self._roots.add(offset)
        try:
            drive([walk], self.fetch_nodes)
        except Hdf5FormatError:
            # Prefetching only saves time: on bytes we do not understand, let HDF5 read alone.
            return
        self.read_stats.prefetches += 1
