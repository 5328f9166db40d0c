"""Whole files read by URL (reference files, ``zarr.json``), kept by ETag for the process.

Opening the same remote references again (a notebook re-run, 200 stores of one file) asked the
server for the whole file every time. Here a whole-file read that came with an ETag is kept,
and the next read of that URL asks with ``If-None-Match``: a ``304 Not Modified`` answer is
the kept bytes, anything else replaces them. So a reopening costs one conditional request,
never stale bytes. The cache is bounded (`MAX_BYTES` in all, `MAX_ENTRY_BYTES` a file, least
recently used first out) and keyed by the URL and the user headers sent with it (one user's
token never answers from another's read).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["DOCUMENTS", "MAX_BYTES", "MAX_ENTRY_BYTES", "DocumentCache"]

MAX_BYTES = 64 * 1024 * 1024
MAX_ENTRY_BYTES = 16 * 1024 * 1024

type DocumentKey = tuple[str, tuple[tuple[str, str], ...]]


class DocumentCache:
    """(ETag, bytes) per key, least recently used out first; safe across threads."""

    def __init__(self, max_bytes: int = MAX_BYTES, max_entry_bytes: int = MAX_ENTRY_BYTES):
        self.max_bytes, self.max_entry_bytes = max_bytes, max_entry_bytes
        self._lock = threading.Lock()
        self._kept: OrderedDict[DocumentKey, tuple[str, bytes]] = OrderedDict()
        self._size = 0

    def get(self, key: DocumentKey) -> tuple[str, bytes] | None:
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
            return kept

    def put(self, key: DocumentKey, etag: str, data: bytes) -> None:
        with self._lock:
            self._drop(key)
            if len(data) > self.max_entry_bytes:
                return
            self._kept[key] = (etag, data)
            self._size += len(data)
            while self._size > self.max_bytes:
                self._drop(next(iter(self._kept)))

    def forget(self, key: DocumentKey) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: DocumentKey) -> None:
        old = self._kept.pop(key, None)
        if old is not None:
            self._size -= len(old[1])

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._size = 0


DOCUMENTS = DocumentCache()
