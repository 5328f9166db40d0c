"""`LatencyProxy`'s record of the requests it saw, written by its loop thread and read by the
test's thread under one lock."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["RequestLog"]


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
