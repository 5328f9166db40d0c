"""An optional sharded view of large uncompressed chunks, so zarr itself reads only part of one.

With the plain ``bytes`` codec zarr fetches whole chunks, even for one row. In this view each
stored chunk becomes one shard whose inner chunks are blocks of rows along the first axis, and
whose shard index (at the start) is computed here, never fetched: inner chunk ``j`` sits at
``16 n + j * inner_bytes``. zarr then asks for the index and for the inner chunks it needs, and
the store turns those byte ranges into reads of just the records that hold them. Metadata stays
standard Zarr v3 (``sharding_indexed`` with ``bytes`` codecs), so any zarr reader decodes it.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from shadowzarr_spec import ReferenceFileSystem, array_info, parse_json

__all__ = ["ShardLayout", "ShardedView"]


@dataclass(frozen=True, slots=True)
class ShardLayout:
    """One array's view: ``count`` inner chunks of ``rows`` rows, ``inner_bytes`` each."""

    rows: int
    count: int
    inner_bytes: int
    chunk_nbytes: int
    index: bytes

    @property
    def index_bytes(self) -> int:
        return 16 * self.count

    @property
    def total(self) -> int:
        return self.index_bytes + self.chunk_nbytes


def _inner_rows(first: int, row_bytes: int, target: int) -> int:
    """The largest divisor of ``first`` whose block of rows fits ``target`` bytes (at least 1)."""
    best = 1
    for candidate in range(1, math.isqrt(first) + 1):
        if first % candidate:
            continue
        for rows in (candidate, first // candidate):
            if rows * row_bytes <= target and rows > best:
                best = rows
    return best


class ShardedView:
    """Which arrays are shown sharded, and their rewritten metadata documents."""

    def __init__(self, rfs: ReferenceFileSystem, target_bytes: int) -> None:
        self._rfs = rfs
        self._target = target_bytes
        self._lock = threading.Lock()
        self._layouts: dict[str, ShardLayout | None] = {}

    def layout(self, path: str) -> ShardLayout | None:
        with self._lock:
            if path in self._layouts:
                return self._layouts[path]
        layout = self._compute(path)
        with self._lock:
            self._layouts[path] = layout
        return layout

    def _compute(self, path: str) -> ShardLayout | None:
        info = array_info(self._rfs, path)
        if (
            info is None
            or not info.chunk_shape
            or [c.get("name") for c in info.codecs] != ["bytes"]
        ):
            return None
        if not isinstance(info.data_type, str):
            return None
        try:
            itemsize = np.dtype(info.data_type).itemsize
        except TypeError:
            return None
        if itemsize == 0:
            return None
        row_bytes = math.prod(info.chunk_shape[1:]) * itemsize
        chunk_nbytes = info.chunk_shape[0] * row_bytes
        if chunk_nbytes < 2 * self._target or row_bytes == 0:
            return None
        rows = _inner_rows(info.chunk_shape[0], row_bytes, self._target)
        count = info.chunk_shape[0] // rows
        if count < 2:
            return None
        inner = rows * row_bytes
        table = np.empty((count, 2), dtype="<u8")
        table[:, 0] = 16 * count + np.arange(count, dtype=np.uint64) * inner
        table[:, 1] = inner
        return ShardLayout(rows, count, inner, chunk_nbytes, table.tobytes())

    def rewrite(self, key: str, data: bytes) -> bytes:
        """A ``zarr.json`` as the view shows it (arrays, and consolidated entries, sharded)."""
        path = key[: -len("zarr.json")].rstrip("/")
        document = parse_json(data)
        if not isinstance(document, dict):
            return data
        changed = self._rewrite_node(path, document)
        return json.dumps(document, allow_nan=True).encode() if changed else data

    def _rewrite_node(self, path: str, document: dict[str, Any]) -> bool:
        changed = False
        if document.get("node_type") == "array":
            layout = self.layout(path)
            if layout is not None:
                chunk_shape = document["chunk_grid"]["configuration"]["chunk_shape"]
                document["codecs"] = [
                    {
                        "name": "sharding_indexed",
                        "configuration": {
                            "chunk_shape": [layout.rows, *chunk_shape[1:]],
                            "codecs": document["codecs"],
                            "index_codecs": [
                                {"name": "bytes", "configuration": {"endian": "little"}}
                            ],
                            "index_location": "start",
                        },
                    }
                ]
                changed = True
        consolidated = document.get("consolidated_metadata")
        if isinstance(consolidated, dict) and isinstance(consolidated.get("metadata"), dict):
            for child, child_document in consolidated["metadata"].items():
                if isinstance(child_document, dict):
                    child_path = f"{path}/{child}" if path else child
                    changed |= self._rewrite_node(child_path, child_document)
        return changed
