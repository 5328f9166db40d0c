"""The record of the requests a test server saw (`LatencyProxy`, `SingleRangeServer`),
written by its loop thread and read by the test's thread under one lock, and the counters read
from it."""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["RequestCounters", "RequestLog"]


class RequestLog:
    """Counters shared between the loop thread (writer) and the test thread (reader)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_concurrent = 0

    def enter(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.log.append(entry)
            self.in_flight += 1
            self.max_concurrent = max(self.max_concurrent, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def add_bytes(self, entry: dict[str, Any], nbytes: int) -> None:
        with self.lock:
            entry["bytes"] += nbytes

    def reset(self) -> None:
        with self.lock:
            self.log.clear()
            self.max_concurrent = self.in_flight


class RequestCounters:
    """The counters of a server keeping a `RequestLog` in ``_stats`` and adding ``latency``
    seconds to each request (a mixin of `LatencyProxy` and `SingleRangeServer`)."""

    latency: float
    _stats: RequestLog

    @property
    def log(self) -> list[dict[str, Any]]:
        """One dict per request, oldest first (a snapshot).

        Keys: ``method``, ``path``, ``query``, ``headers`` (every request header, names in lower
        case), ``range`` (or ``None``), ``status`` (``None`` when the connection was dropped
        before a status), ``bytes`` (body bytes sent), ``fault`` (kind or ``None``), ``route``
        (``"proxy"``, ``"api"`` or ``"presigned"``), ``started`` (the proxy loop's clock,
        seconds), ``duration`` (seconds; ``None`` while in flight), ``dropped`` (the proxy cut
        the connection), ``client_disconnected``, ``new_connection`` (the first request of its
        connection). A request is logged when it arrives, so
        in-flight requests appear with ``status`` ``None``.
        """
        with self._stats.lock:
            return [dict(entry) for entry in self._stats.log]

    @property
    def requests(self) -> int:
        """Total number of requests received."""
        return self.count()

    @property
    def max_concurrent(self) -> int:
        """Most requests in flight at the same time."""
        with self._stats.lock:
            return self._stats.max_concurrent

    @property
    def connections(self) -> int:
        """Connections opened (their first requests seen) since the last `reset`."""
        return sum(1 for entry in self._select(None, None) if entry["new_connection"])

    def count(self, method: str | None = None, path_prefix: str | None = None) -> int:
        """Requests received, optionally only one method and/or path prefix."""
        return len(self._select(method, path_prefix))

    def round_trips(self, path_prefix: str | None = None) -> int:
        """Waves of requests: a request arriving at least ``latency / 2`` after the first of the
        current wave starts a new one, so requests sent together count once and each round
        trip a client waits for before asking again counts once more."""
        starts = sorted(entry["started"] for entry in self._select(None, path_prefix))
        waves, first = 0, None
        for start in starts:
            if first is None or start - first >= self.latency / 2:
                waves, first = waves + 1, start
        return waves

    def bytes_sent(self, path_prefix: str | None = None) -> int:
        """Body bytes sent to clients, optionally only for a path prefix."""
        return sum(entry["bytes"] for entry in self._select(None, path_prefix))

    def _select(self, method: str | None, path_prefix: str | None) -> list[dict[str, Any]]:
        prefix = None if path_prefix is None else "/" + path_prefix.lstrip("/")
        return [
            entry
            for entry in self.log
            if (method is None or entry["method"] == method.upper())
            and (prefix is None or entry["path"].startswith(prefix))
        ]

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no request is in flight (so every ``duration`` in `log` is final).

        Status and byte counts are recorded before the client can see them; only the
        bookkeeping after the last byte (``duration``) may lag behind the client.
        """
        deadline = time.monotonic() + timeout
        while True:
            with self._stats.lock:
                if self._stats.in_flight == 0:
                    return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"requests still in flight after {timeout} s")
            time.sleep(0.005)

    def reset(self) -> None:
        """Forget the log and counters (faults and assets stay)."""
        self._stats.reset()
