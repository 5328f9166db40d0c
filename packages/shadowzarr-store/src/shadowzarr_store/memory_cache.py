"""A bounded in-memory cache of source byte ranges, least recently used out first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

__all__ = ["MemoryCache"]


class MemoryCache:
    """Byte ranges of sources kept in this process, up to ``max_size_bytes`` in total.

    Parameters
    ----------
    max_size_bytes
        Bytes held at most; the least recently used ranges are dropped first. A range larger
        than the whole budget is not kept.
    """

    def __init__(self, max_size_bytes: int = 256 * 1024 * 1024) -> None:
        if max_size_bytes < 0:
            raise ValueError(f"max_size_bytes must not be negative, got {max_size_bytes}")
        self.max_size_bytes = max_size_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, int, int], bytes] = OrderedDict()
        self._size = 0

    @property
    def size_bytes(self) -> int:
        return self._size

    def get(self, source: str, start: int, end: int) -> bytes | None:
        key = (source, start, end)
        with self._lock:
            data = self._entries.get(key)
            if data is not None:
                self._entries.move_to_end(key)
            return data

    def put(self, source: str, start: int, end: int, data: bytes) -> None:
        if len(data) > self.max_size_bytes:
            return
        key = (source, start, end)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= len(old)
            self._entries[key] = data
            self._size += len(data)
            while self._size > self.max_size_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._size -= len(dropped)

    def trim(self, target_bytes: int, max_entries: int | None = None) -> int:
        """Drop least recently used ranges until at most ``target_bytes`` are held (or
        ``max_entries`` are dropped); return how many were dropped."""
        dropped = 0
        with self._lock:
            while self._entries and self._size > target_bytes:
                if max_entries is not None and dropped >= max_entries:
                    break
                _, data = self._entries.popitem(last=False)
                self._size -= len(data)
                dropped += 1
        return dropped

    def contains(self, source: str, start: int, end: int) -> bool:
        """Whether the range is held, without counting as a use."""
        with self._lock:
            return (source, start, end) in self._entries

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._size = 0

    def __getstate__(self) -> dict[str, Any]:
        return {"max_size_bytes": self.max_size_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["max_size_bytes"])  # type: ignore[misc]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryCache) and other.max_size_bytes == self.max_size_bytes

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"MemoryCache(max_size_bytes={self.max_size_bytes}, size_bytes={self._size})"
