"""An optional sharded view of large uncompressed chunks, so zarr itself reads only part of one.

With the plain ``bytes`` codec zarr fetches whole chunks, even for one row. In this view each
stored chunk becomes one shard whose inner chunks are blocks of rows along the slowest stored
axis (the first, or ``order[0]`` of a ``transpose``), and whose shard index (at the start) is
computed here, never fetched: inner chunk ``j`` sits at ``16 n + j * inner_bytes``. zarr then
asks for the index and for the inner chunks it needs, and the store turns those byte ranges into
reads of just the records that hold them. The format stays standard Zarr v3 (``sharding_indexed``
with the array's own ``bytes`` / ``transpose`` codecs inside); a shard of blocks of its first
axis with plain ``bytes`` is named ``shadowzarr.sharding_indexed``, the same format read by
`shadowzarr_store.views.slab_shards.SlabShardingCodec` without zarr's shard-sized copy.

``sharded_view="auto"`` shows chunks of at least ``AUTO_MIN_CHUNK_BYTES`` in blocks of about
``AUTO_TARGET_BYTES``; an integer ``t`` shows chunks of at least ``2 t`` in blocks of about ``t``.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from shadowzarr_spec import ReferenceFileSystem, array_info, parse_json

from shadowzarr_store.views.slab_shards import SLAB_SHARDING, slab_inner_shape

__all__ = [
    "AUTO_MIN_CHUNK_BYTES",
    "AUTO_TARGET_BYTES",
    "VIEW_ATTRIBUTE",
    "ShardLayout",
    "ShardedView",
    "note_view",
]

AUTO_TARGET_BYTES = 1024 * 1024
AUTO_MIN_CHUNK_BYTES = 2 * AUTO_TARGET_BYTES
VIEW_ATTRIBUTE = "shadowzarr_view"
"""The attribute of an array shown through a view: the view's name and the stored chunk shape
and codecs (`note_view`)."""
_PLAIN_CODECS = (["bytes"], ["transpose", "bytes"])


@dataclass(frozen=True, slots=True)
class ShardLayout:
    """One array's view: ``count`` inner chunks of ``rows`` rows of ``axis``, ``inner_bytes``
    each."""

    axis: int
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

    def __init__(self, rfs: ReferenceFileSystem, setting: int | str) -> None:
        self._rfs = rfs
        if setting == "auto":
            self._target, self._min_chunk = AUTO_TARGET_BYTES, AUTO_MIN_CHUNK_BYTES
        elif isinstance(setting, int) and setting > 0:
            self._target, self._min_chunk = setting, 2 * setting
        else:
            raise ValueError(f"sharded_view must be 'auto' or a positive size, got {setting!r}")
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
        if info is None or not info.chunk_shape or not isinstance(info.data_type, str):
            return None
        names = [c.get("name") for c in info.codecs]
        if names not in _PLAIN_CODECS:
            return None
        axis = _slowest_stored_axis(info.codecs[0], len(info.chunk_shape))
        if axis is None:
            return None
        try:
            itemsize = np.dtype(info.data_type).itemsize
        except TypeError:
            return None
        if itemsize == 0:
            return None
        shape = info.chunk_shape
        row_bytes = math.prod(shape[:axis] + shape[axis + 1 :]) * itemsize
        chunk_nbytes = shape[axis] * row_bytes
        if chunk_nbytes < self._min_chunk or row_bytes == 0:
            return None
        rows = _inner_rows(shape[axis], row_bytes, self._target)
        count = shape[axis] // rows
        if count < 2:
            return None
        inner = rows * row_bytes
        table = np.empty((count, 2), dtype="<u8")
        table[:, 0] = 16 * count + np.arange(count, dtype=np.uint64) * inner
        table[:, 1] = inner
        return ShardLayout(axis, rows, count, inner, chunk_nbytes, table.tobytes())

    def rewrite(self, key: str, data: bytes) -> bytes:
        """A ``zarr.json`` as the view shows it (arrays, and consolidated entries, sharded)."""
        return rewrite_zarr_json(key, data, self._rewrite_array)

    def _rewrite_array(self, path: str, document: dict[str, Any]) -> bool:
        layout = self.layout(path)
        if layout is None:
            return False
        note_view(document, "sharded")
        shard_shape = list(document["chunk_grid"]["configuration"]["chunk_shape"])
        inner_shape = list(shard_shape)
        inner_shape[layout.axis] = layout.rows
        document["codecs"] = [sharding_codec(inner_shape, document["codecs"], shard_shape)]
        return True


def rewrite_zarr_json(
    key: str, data: bytes, rewrite_array: Callable[[str, dict[str, Any]], bool]
) -> bytes:
    """``data``, the ``zarr.json`` at ``key``, with every array document in it (the node and
    its consolidated entries) passed to ``rewrite_array(path, document)``, which changes the
    document in place and says whether it did; the bytes as they were when none changed."""
    path = key[: -len("zarr.json")].rstrip("/")
    document = parse_json(data)
    if not isinstance(document, dict):
        return data

    def visit(path: str, document: dict[str, Any]) -> bool:
        changed = document.get("node_type") == "array" and rewrite_array(path, document)
        consolidated = document.get("consolidated_metadata")
        if isinstance(consolidated, dict) and isinstance(consolidated.get("metadata"), dict):
            for child, child_document in consolidated["metadata"].items():
                if isinstance(child_document, dict):
                    changed |= visit(f"{path}/{child}" if path else child, child_document)
        return changed

    return json.dumps(document, allow_nan=True).encode() if visit(path, document) else data


def note_view(document: dict[str, Any], view: str) -> None:
    """Say in the array's attributes (`VIEW_ATTRIBUTE`) that ``document`` is a view, and
    what is stored, before ``document``'s grid and codecs are rewritten: the metadata zarr is
    shown stays honest about what it is."""
    attributes = document.get("attributes")
    document["attributes"] = {
        **(attributes if isinstance(attributes, dict) else {}),
        VIEW_ATTRIBUTE: {
            "view": view,
            "stored_chunk_shape": document["chunk_grid"]["configuration"]["chunk_shape"],
            "stored_codecs": document["codecs"],
        },
    }


def sharding_codec(
    inner_shape: list[int], codecs: list[Any], shard_shape: list[int]
) -> dict[str, Any]:
    """The ``sharding_indexed`` codec document both views show: inner chunks of
    ``inner_shape`` encoded by ``codecs``, and a plain little-endian index at the start (the
    index the store synthesizes). Shards of slabs are named for `SlabShardingCodec`, the same
    format with a decoder that skips zarr's shard-sized copy."""
    slabs = slab_inner_shape(inner_shape, shard_shape, codecs)
    return {
        "name": SLAB_SHARDING if slabs else "sharding_indexed",
        "configuration": {
            "chunk_shape": inner_shape,
            "codecs": codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "start",
        },
    }


def _slowest_stored_axis(first_codec: dict[str, Any], ndim: int) -> int | None:
    """The axis whose blocks are contiguous in storage: ``order[0]`` of a ``transpose``."""
    if first_codec.get("name") != "transpose":
        return 0
    order = first_codec.get("configuration", {}).get("order")
    if not isinstance(order, list) or sorted(order) != list(range(ndim)):
        return None
    return int(order[0])
