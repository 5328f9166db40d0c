"""Byte-range fetching: the protocol every reader here uses, range coalescing, and a local fetcher.

Index nodes of a file written in pieces lie scattered between chunks, so a fetcher must ask for
many exact ranges at once (concurrently) and merge two ranges only when the gap between them
costs less than one more request.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .errors import SourceChangedError, SourceError, SourceNotFoundError

__all__ = [
    "DEFAULT_MAX_GAP",
    "FetchStats",
    "LocalRangeFetcher",
    "RangeFetcher",
    "Run",
    "coalesce",
    "split_run",
]

DEFAULT_MAX_GAP = 16 * 1024
"""Merge ranges closer than this: ~ bandwidth x RTT / requests in flight (25 MB/s, 20 ms, 32)."""


@dataclass(slots=True)
class FetchStats:
    """Counters of what a fetcher asked the source for."""

    requests: int = 0
    """Range requests issued (one per coalesced run), retries excluded."""
    bytes: int = 0
    """Bytes received."""
    rounds: int = 0
    """Sequential rounds: calls of ``fetch_many`` that issued at least one request."""
    retries: int = 0
    """Requests repeated after a transient failure."""


@runtime_checkable
class RangeFetcher(Protocol):
    """Fetches byte ranges of one file; ``fetch_many`` issues its requests concurrently."""

    @property
    def size(self) -> int:
        """Total size of the file in bytes."""
        ...

    @property
    def etag(self) -> str | None:
        """The source's ETag (or an equivalent version tag), when it has one."""
        ...

    @property
    def stats(self) -> FetchStats:
        """Request, byte and round counters."""
        ...

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Return the bytes of each ``(offset, size)``, clipped at the end of the file."""
        ...


@dataclass(frozen=True, slots=True)
class Run:
    """A contiguous byte range that serves one or more requested ranges."""

    start: int
    end: int
    members: tuple[int, ...]
    """Positions, in the caller's list, of the ranges this run covers."""


def coalesce(ranges: list[tuple[int, int]], max_gap: int = DEFAULT_MAX_GAP) -> list[Run]:
    """Group ranges into runs, merging neighbours whose gap is at most ``max_gap`` bytes."""
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    runs: list[Run] = []
    start = end = -1
    members: list[int] = []
    for i in order:
        offset, size = ranges[i]
        if members and offset - end <= max_gap:
            end = max(end, offset + size)
            members.append(i)
            continue
        if members:
            runs.append(Run(start, end, tuple(members)))
        start, end, members = offset, offset + size, [i]
    if members:
        runs.append(Run(start, end, tuple(members)))
    return runs


def split_run(
    run: Run, data: bytes, ranges: list[tuple[int, int]], out: list[bytes | None]
) -> None:
    """Cut a fetched run back into the requested ranges (shorter at the end of the file)."""
    view = memoryview(data)
    for i in run.members:
        offset, size = ranges[i]
        lo = offset - run.start
        out[i] = bytes(view[lo : lo + size])


class LocalRangeFetcher:
    """Reads ranges of a local file with ``os.pread``; counts requests like the HTTP fetcher."""

    def __init__(self, path: str | os.PathLike[str], max_gap: int = DEFAULT_MAX_GAP) -> None:
        self._path = os.fspath(path)
        try:
            self._fd = os.open(self._path, os.O_RDONLY)
        except FileNotFoundError as exc:
            raise SourceNotFoundError(f"no such file: {self._path}") from exc
        info = os.fstat(self._fd)
        self._size = info.st_size
        self._etag = f"{info.st_mtime_ns:x}-{info.st_size:x}"
        self._max_gap = max_gap
        self._stats = FetchStats()

    @property
    def size(self) -> int:
        return self._size

    @property
    def etag(self) -> str | None:
        return self._etag

    @property
    def stats(self) -> FetchStats:
        return self._stats

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        if self._fd < 0:
            raise SourceError(f"{self._path} is closed")
        if os.fstat(self._fd).st_size != self._size:
            raise SourceChangedError(f"{self._path} changed size while being read")
        out: list[bytes | None] = [None] * len(ranges)
        runs = coalesce(ranges, self._max_gap)
        for run in runs:
            data = os.pread(self._fd, run.end - run.start, run.start)
            self._stats.requests += 1
            self._stats.bytes += len(data)
            split_run(run, data, ranges, out)
        if runs:
            self._stats.rounds += 1
        return [b if b is not None else b"" for b in out]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> LocalRangeFetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
