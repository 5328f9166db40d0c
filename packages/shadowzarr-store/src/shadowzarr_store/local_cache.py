"""LocalCache: source byte ranges kept on disk in SQLite, shared safely by several processes.

Entries are keyed by the source's identity (URL plus ETag or size, a local file's stamp too, so a
changed file never hits old entries) and the byte range. Each entry carries a checksum: a damaged
entry is a miss, and a damaged database file is reported with a warning and rebuilt, never a source
of wrong bytes.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from shadowzarr_spec.signed_urls import recorded_location

from shadowzarr_store.transport.locations import redact

__all__ = [
    "CacheDamagedWarning",
    "CacheUnavailableWarning",
    "LocalCache",
    "cache_location",
    "default_cache_dir",
]

_FILE_NAME = "chunks.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    source TEXT NOT NULL,
    start INTEGER NOT NULL,
    stop INTEGER NOT NULL,
    data BLOB NOT NULL,
    nbytes INTEGER NOT NULL,
    checksum BLOB NOT NULL,
    last_used REAL NOT NULL,
    UNIQUE (source, start, stop)
);
CREATE INDEX IF NOT EXISTS chunks_by_use ON chunks (last_used);
"""
_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


class CacheDamagedWarning(UserWarning):
    """The cache file was damaged and has been rebuilt empty."""


class CacheUnavailableWarning(UserWarning):
    """The cache could not be used (locked for too long, disk full); reads go to the sources."""


def default_cache_dir() -> Path:
    """``$SHADOWZARR_CACHE_DIR`` or ``~/.shadowzarr/cache``."""
    configured = os.environ.get("SHADOWZARR_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".shadowzarr" / "cache"


def cache_location(url: str) -> str:
    """``url`` as cache keys name it: without user info and signing parameters (two presigned
    URLs of one object share its entries; the ETag and size recorded beside still guard them),
    other credential-like query values masked. Nothing secret is written to a cache file."""
    return redact(recorded_location(url))


def _checksum(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return not isinstance(exc, sqlite3.OperationalError)
    return (code & 0xFF) in _DAMAGE_CODES


class LocalCache:
    """A persistent cache of source byte ranges in ``directory/chunks.sqlite3``.

    Parameters
    ----------
    directory
        Where the cache lives (default: `default_cache_dir`).
    max_size_bytes
        Bytes of cached data kept at most (None: no limit); least recently used entries go first.
    busy_timeout
        Seconds to wait for another process's write before reading without the cache.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        max_size_bytes: int | None = None,
        busy_timeout: float = 30.0,
    ) -> None:
        if max_size_bytes is not None and max_size_bytes < 0:
            raise ValueError(f"max_size_bytes must not be negative, got {max_size_bytes}")
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.max_size_bytes = max_size_bytes
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._warned = False

    @property
    def path(self) -> Path:
        return self.directory / _FILE_NAME

    # -- connection ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        self._pid = os.getpid()
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            connection = self._open()
            row = connection.execute("PRAGMA quick_check").fetchone()
            if row is None or row[0] != "ok":
                connection.close()
                raise sqlite3.DatabaseError(f"quick_check: {row}")
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and not _is_damage(exc):
                raise
            self._report_and_remove(exc)
            connection = self._open()
        self._connection = connection
        return connection

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            connection.close()
            raise
        return connection

    def _report_and_remove(self, exc: BaseException) -> None:
        warnings.warn(
            f"the shadowzarr cache {self.path} is damaged ({exc}); rebuilding it empty",
            CacheDamagedWarning,
            stacklevel=4,
        )
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def _run(self, operation: str, *args: Any) -> Any:
        """Run one operation, rebuilding the file once if it turns out damaged."""
        with self._lock:
            for attempt in range(2):
                try:
                    return getattr(self, operation)(self._connect(), *args)
                except sqlite3.DatabaseError as exc:
                    if not _is_damage(exc) or attempt:
                        raise
                    self._report_and_remove(exc)
        return None

    # -- operations ---------------------------------------------------------------------------

    def get(self, source: str, start: int, end: int) -> bytes | None:
        """The cached bytes ``[start, end)`` of ``source``, or None (also when SQLite is busy)."""
        try:
            return self._run("_get", source, start, end)  # type: ignore[no-any-return]
        except sqlite3.OperationalError as exc:
            self._unavailable(exc)
            return None

    def put(self, source: str, start: int, end: int, data: bytes) -> None:
        """Keep ``data`` as bytes ``[start, end)`` of ``source``, evicting old entries to fit.

        A cache that cannot be written (locked for too long, disk full) never fails a read.
        """
        try:
            self._run("_put", source, start, end, bytes(data))
        except sqlite3.OperationalError as exc:
            self._unavailable(exc)

    def _unavailable(self, exc: sqlite3.OperationalError) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"the shadowzarr cache {self.path} is unavailable ({exc}); reading without it",
                CacheUnavailableWarning,
                stacklevel=3,
            )

    def clear(self) -> None:
        self._run("_clear")

    def trim(self, target_bytes: int, max_entries: int | None = None) -> int:
        """Delete least recently used entries until at most ``target_bytes`` are kept (or
        ``max_entries`` are deleted); return how many were deleted."""
        return self._run("_trim", target_bytes, max_entries)  # type: ignore[no-any-return]

    def contains(self, source: str, start: int, end: int) -> bool:
        """Whether the range is cached (checksums are checked on reads, not here)."""
        return bool(self._run("_contains", source, start, end))

    def forget_source(self, url: str) -> None:
        """Delete everything read from ``url``, under every version (ETag, size) it had.

        Entries are keyed by a source identity ``<url>\\0<etag>\\0<size>``, so a refresh that
        learns of a new version can drop the old bytes without knowing the old ETag."""
        self._run("_forget", cache_location(url))

    @property
    def size_bytes(self) -> int:
        return self._run("_size")  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return self._run("_count")  # type: ignore[no-any-return]

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    @staticmethod
    def _get(connection: sqlite3.Connection, source: str, start: int, end: int) -> bytes | None:
        row = connection.execute(
            "SELECT rowid, data, checksum FROM chunks WHERE source = ? AND start = ? AND stop = ?",
            (source, start, end),
        ).fetchone()
        if row is None:
            return None
        rowid, data, checksum = row
        if _checksum(data) != checksum:
            connection.execute("DELETE FROM chunks WHERE rowid = ?", (rowid,))
            return None
        connection.execute("UPDATE chunks SET last_used = ? WHERE rowid = ?", (time.time(), rowid))
        return bytes(data)

    def _put(
        self, connection: sqlite3.Connection, source: str, start: int, end: int, data: bytes
    ) -> None:
        if self.max_size_bytes is not None and len(data) > self.max_size_bytes:
            return
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(
                "INSERT OR REPLACE INTO chunks (source, start, stop, data, nbytes, checksum, "
                "last_used) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (source, start, end, data, len(data), _checksum(data), time.time()),
            )
            if self.max_size_bytes is not None:
                self._evict(connection, self.max_size_bytes)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    @staticmethod
    def _evict(connection: sqlite3.Connection, limit: int) -> None:
        (total,) = connection.execute("SELECT COALESCE(SUM(nbytes), 0) FROM chunks").fetchone()
        if total <= limit:
            return
        doomed: list[tuple[int]] = []
        for rowid, nbytes in connection.execute(
            "SELECT rowid, nbytes FROM chunks ORDER BY last_used, rowid"
        ):
            if total <= limit:
                break
            doomed.append((rowid,))
            total -= nbytes
        connection.executemany("DELETE FROM chunks WHERE rowid = ?", doomed)

    @staticmethod
    def _forget(connection: sqlite3.Connection, url: str) -> None:
        escaped = url.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        connection.execute(
            "DELETE FROM chunks WHERE source LIKE ? ESCAPE '\\'", (escaped + "\x00%",)
        )

    @staticmethod
    def _trim(connection: sqlite3.Connection, target: int, max_entries: int | None) -> int:
        connection.execute("BEGIN IMMEDIATE")
        try:
            (total,) = connection.execute("SELECT COALESCE(SUM(nbytes), 0) FROM chunks").fetchone()
            doomed: list[tuple[int]] = []
            for rowid, nbytes in connection.execute(
                "SELECT rowid, nbytes FROM chunks ORDER BY last_used, rowid"
            ):
                if total <= target or (max_entries is not None and len(doomed) >= max_entries):
                    break
                doomed.append((rowid,))
                total -= nbytes
            connection.executemany("DELETE FROM chunks WHERE rowid = ?", doomed)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        return len(doomed)

    @staticmethod
    def _contains(connection: sqlite3.Connection, source: str, start: int, end: int) -> bool:
        row = connection.execute(
            "SELECT 1 FROM chunks WHERE source = ? AND start = ? AND stop = ?",
            (source, start, end),
        ).fetchone()
        return row is not None

    @staticmethod
    def _clear(connection: sqlite3.Connection) -> None:
        connection.execute("DELETE FROM chunks")

    @staticmethod
    def _size(connection: sqlite3.Connection) -> int:
        return int(connection.execute("SELECT COALESCE(SUM(nbytes), 0) FROM chunks").fetchone()[0])

    @staticmethod
    def _count(connection: sqlite3.Connection) -> int:
        return int(connection.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    # -- pickling and equality ----------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "max_size_bytes": self.max_size_bytes,
            "busy_timeout": self.busy_timeout,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LocalCache)
            and other.directory == self.directory
            and other.max_size_bytes == self.max_size_bytes
        )

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"LocalCache({str(self.directory)!r}, max_size_bytes={self.max_size_bytes})"
