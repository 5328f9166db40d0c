"""The catalog's progress: one SQLite row per asset, committed as each asset finishes, so a run
killed at any moment loses at most the assets it was generating, and the next run knows what is
done, what changed and what failed. For an object-store catalog, whose database is a local copy,
the table ``folded`` names the row objects (`row_objects`) whose rows the copy holds."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from shadowzarr_catalog.assets import Asset

__all__ = ["STATE_FILE", "CatalogState", "identity_decides", "needs_generation"]

STATE_FILE = "catalog.sqlite"


class CatalogState:
    """The rows of one catalog, by asset id (one connection, used from one thread)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS assets ("
            "asset_id TEXT PRIMARY KEY, status TEXT NOT NULL, row TEXT NOT NULL)"
        )
        self._db.execute("CREATE TABLE IF NOT EXISTS folded (key TEXT PRIMARY KEY)")

    def rows(self) -> dict[str, dict[str, Any]]:
        found = self._db.execute("SELECT asset_id, row FROM assets ORDER BY asset_id")
        return {asset_id: json.loads(row) for asset_id, row in found}

    def asset_ids(self) -> set[str]:
        return {asset_id for (asset_id,) in self._db.execute("SELECT asset_id FROM assets")}

    def put(self, row: dict[str, Any]) -> None:
        """Record one asset's row; durable when this returns (autocommit)."""
        self._db.execute(
            "INSERT OR REPLACE INTO assets (asset_id, status, row) VALUES (?, ?, ?)",
            (row["asset_id"], row["status"], json.dumps(row, sort_keys=True)),
        )

    def fold(self, key: str, row: dict[str, Any] | None = None) -> None:
        """Record that the row object ``key`` (of an object-store catalog) is in this database,
        with its row when given, in one transaction."""
        with self._db:
            self._db.execute("BEGIN")
            if row is not None:
                self.put(row)
            self._db.execute("INSERT OR IGNORE INTO folded (key) VALUES (?)", (key,))

    def folded(self) -> set[str]:
        """The row objects this database holds."""
        return {key for (key,) in self._db.execute("SELECT key FROM folded")}

    def unfold(self, keys: list[str]) -> None:
        """Forget row objects that were deleted."""
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM folded WHERE key = ?", [(k,) for k in keys])

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database file (before it is copied elsewhere)."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self._db.close()


def needs_generation(
    asset: Asset, previous: dict[str, Any] | None, reference: str, *, retry_failed: bool = False
) -> bool:
    """New, changed (size or ETag), back after removal, wanted in another form than it was
    written in, or failed in a way worth another try (the row's ``retry``; every failure with
    ``retry_failed``). Nothing else costs a request."""
    if not identity_decides(previous, reference, retry_failed=retry_failed):
        return True
    assert previous is not None
    return (previous.get("size"), previous.get("etag")) != (asset.size, asset.etag)


def identity_decides(
    previous: dict[str, Any] | None, reference: str, *, retry_failed: bool = False
) -> bool:
    """Whether only the asset's size and ETag are left to tell if it needs generating: it has
    a row that nothing else (removal, a failure worth retrying, another form) sends back to
    work. Only such an asset of a URL list is worth a probe."""
    if previous is None or previous.get("status") == "removed":
        return False
    if previous.get("status") in ("failed", "refused") and (retry_failed or previous.get("retry")):
        return False
    return previous.get("reference") in (None, reference)
