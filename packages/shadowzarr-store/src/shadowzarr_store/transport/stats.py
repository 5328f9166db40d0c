"""What reading has cost so far (``store.stats``), so users and benchmarks see a read's price."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields

__all__ = ["SESSION_STATS", "StatsSnapshot", "StoreStats", "counted", "counting_also"]

_ALSO: ContextVar[StoreStats | None] = ContextVar("shadowzarr_counted", default=None)


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """Counters at one moment; subtract two snapshots to get the cost of what ran in between."""

    requests: int = 0
    """Physical reads sent to sources (HTTP requests, local file reads, index chunks)."""
    bytes: int = 0
    """Bytes received from sources."""
    merged_requests: int = 0
    """Requests that served more than one chunk."""
    merged_chunks: int = 0
    """Chunks served by merged requests."""
    cache_hits: int = 0
    """Reads answered by the local or in-memory cache."""
    index_chunk_reads: int = 0
    """Manifest chunks fetched (each also counts as a request)."""
    retries: int = 0
    """Requests sent again after a transient failure."""
    url_resolutions: int = 0
    """DANDI (or ``resolve_url``) resolutions of a URL to the one actually read."""
    rounds: int = 0
    """Sequential rounds: calls asking for many ranges at once (``read_many``) that sent any."""

    def __sub__(self, other: StatsSnapshot) -> StatsSnapshot:
        return StatsSnapshot(
            **{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)}
        )


class StoreStats:
    """Thread-safe counters shared by every event loop that reads through one store.

    Everything counted also counts into `SESSION_STATS`, the process's total, unless made with
    ``session=False`` (a plan's dry run, which sends nothing).
    """

    __slots__ = ("_counts", "_lock", "_session")

    def __init__(self, *, session: bool = True) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys((f.name for f in fields(StatsSnapshot)), 0)
        self._session = session

    def add(self, **increments: int) -> None:
        self._add_own(increments)
        if self._session:
            SESSION_STATS._add_own(increments)

    def _add_own(self, increments: dict[str, int]) -> None:
        """Count into these counters only (not into the session's)."""
        with self._lock:
            for name, value in increments.items():
                self._counts[name] += value

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            return StatsSnapshot(**self._counts)

    def reset(self) -> None:
        with self._lock:
            for name in self._counts:
                self._counts[name] = 0

    def __getattr__(self, name: str) -> int:
        try:
            counts = object.__getattribute__(self, "_counts")
        except AttributeError:
            raise AttributeError(name) from None
        if name in counts:
            return counts[name]  # type: ignore[no-any-return]
        raise AttributeError(name)

    def __repr__(self) -> str:
        snapshot = self.snapshot()
        inner = ", ".join(f"{f.name}={getattr(snapshot, f.name)}" for f in fields(snapshot))
        return f"StoreStats({inner})"


SESSION_STATS = StoreStats(session=False)
"""What every store, transport and generator of this process has counted since it started (or
since ``SESSION_STATS.reset()``): the cost of a notebook session (`session_traffic`)."""


class _Tee(StoreStats):
    """Counts into a transport's own stats and into the `counted` block's as well; reads and
    resets see the transport's own only."""

    __slots__ = ("_also", "_own")

    def __init__(self, own: StoreStats, also: StoreStats) -> None:
        self._own = own
        self._also = also

    def add(self, **increments: int) -> None:
        self._own.add(**increments)  # into the session's counters once, through the own
        self._also._add_own(increments)

    def _add_own(self, increments: dict[str, int]) -> None:
        self._own._add_own(increments)
        self._also._add_own(increments)

    def snapshot(self) -> StatsSnapshot:
        return self._own.snapshot()

    def reset(self) -> None:
        self._own.reset()

    def __getattr__(self, name: str) -> int:
        return getattr(object.__getattribute__(self, "_own"), name)  # type: ignore[no-any-return]


@contextmanager
def counted(stats: StoreStats) -> Iterator[StoreStats]:
    """Count into ``stats`` as well every request of every `Transport` created inside the block
    (in this thread, and in the transport loop's tasks it starts): what one piece of work cost,
    whatever readers it opened on the way, e.g. one asset's generation in a catalog."""
    token = _ALSO.set(stats)
    try:
        yield stats
    finally:
        _ALSO.reset(token)


def counting_also(own: StoreStats) -> StoreStats:
    """``own``, or inside a `counted` block a view that also counts into that block's stats."""
    also = _ALSO.get()
    return own if also is None or also is own else _Tee(own, also)
