"""Rows of an object-store catalog kept as small objects until its progress database holds them.

An object store has no database to commit to, so each finished asset's row is also PUT as one
object under ``catalog.rows/`` of the destination, after the asset's reference set is published
(a row object never names a half-written set). The key is ``<time>-<asset hash>.json``, so keys
sort in the order rows were written. A starting run lists the folder and merges the rows its copy
of the database has not folded in. A row object is read as hostile input: one that is not a
catalog row, not of the asset its key names, names a reference other than the one the catalog
derives for that asset, or is of an asset neither the source lists nor the catalog holds, is
ignored with a `CatalogRowWarning`.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import warnings
from collections.abc import Container
from typing import Any

from shadowzarr_catalog.paths import SUFFIXES, reference_location
from shadowzarr_catalog.table import SCHEMA, catalog_parquet

__all__ = [
    "MAX_ROW_BYTES",
    "ROWS_FOLDER",
    "CatalogRowWarning",
    "ignored",
    "is_row_key",
    "read_row_object",
    "row_object",
    "row_object_key",
]

ROWS_FOLDER = "catalog.rows"
MAX_ROW_BYTES = 16 << 20
"""A row object larger than this is not read (a row is a few kilobytes; one listing thousands of
unsupported datasets, a few megabytes)."""
STATUSES = frozenset({"ok", "partial", "refused", "failed", "skipped", "removed"})
_VERSION = "shadowzarr-catalog-row/1"
_KEY = re.compile(rf"{re.escape(ROWS_FOLDER)}/(\d{{20}})-([0-9a-f]{{16}})\.json")


class CatalogRowWarning(UserWarning):
    """A row object at a catalog's destination was ignored (not a catalog row, not of the asset
    its name says, or of an asset that is not the catalog's)."""


def _asset_hash(asset_id: str) -> str:
    return hashlib.sha256(asset_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def row_object_key(asset_id: str) -> str:
    """A new key for ``asset_id``'s row, relative to the destination."""
    return f"{ROWS_FOLDER}/{time.time_ns():020d}-{_asset_hash(asset_id)}.json"


def row_object(row: dict[str, Any]) -> bytes:
    """The object's bytes: the row as the progress database keeps it (no credentials: a row's
    asset id and source URL are redacted when the row is made, as in ``catalog.parquet``)."""
    return json.dumps({"format": _VERSION, "row": row}, sort_keys=True).encode()


def is_row_key(key: str) -> bool:
    return _KEY.fullmatch(key) is not None


def read_row_object(key: str, data: bytes, known: Container[str]) -> dict[str, Any] | None:
    """The row in ``data`` read from ``key``; None, with a warning, when it is not a valid
    catalog row of the asset the key names, or that asset is not in ``known`` (the assets the
    source lists and those the catalog holds)."""
    try:
        return _checked(key, data, known)
    except Exception as exc:  # hostile input: any fault is a reason to ignore it
        ignored(key, f"{type(exc).__name__}: {exc}")
        return None


def ignored(key: str, reason: str) -> None:
    """Warn that the object ``key`` of the rows folder is not used."""
    shown = "".join(c if c.isprintable() else "?" for c in reason[:300])
    warnings.warn(
        f"ignored {key[:200]!r} at the catalog's destination: {shown}",
        CatalogRowWarning,
        stacklevel=3,
    )


def _checked(key: str, data: bytes, known: Container[str]) -> dict[str, Any]:
    found = _KEY.fullmatch(key)
    if found is None:
        raise ValueError("not a row object's name")
    if len(data) > MAX_ROW_BYTES:
        raise ValueError(f"{len(data):,} bytes, more than a row has")
    document = json.loads(data)
    if not isinstance(document, dict) or document.get("format") != _VERSION:
        raise ValueError("not a catalog row object")
    row = document.get("row")
    if not isinstance(row, dict) or set(row) != set(SCHEMA.names):
        raise ValueError("not the catalog's columns")
    asset_id, path, reference = row["asset_id"], row["path"], row["reference"]
    if not isinstance(asset_id, str) or _asset_hash(asset_id) != found.group(2):
        raise ValueError("a row of another asset than its name says")
    if asset_id not in known:
        raise ValueError(
            f"a row of {asset_id[:100]!r}, an asset the source does not list and the catalog "
            "does not hold"
        )
    if row["status"] not in STATUSES:
        raise ValueError(f"unknown status {str(row['status'])[:40]!r}")
    if not isinstance(path, str):
        raise ValueError("a path that is not text")
    if reference is not None and reference not in {
        reference_location(path, asset_id, form) for form in SUFFIXES
    }:
        raise ValueError("a reference location other than the catalog's for this asset")
    catalog_parquet([row])  # every column of the type the catalog has
    return row
