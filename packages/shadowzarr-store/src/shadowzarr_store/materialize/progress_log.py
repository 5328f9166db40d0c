"""Which regions of which arrays are written, kept beside the destination so a rerun can resume.

One small JSON document per array under :data:`PROGRESS_PREFIX` of a progress store, rewritten after
each batch and deleted when materialize finishes. A region counts as done only after its bytes are
written, so a process killed mid-write leaves that region to be written again, never skipped.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from typing import Any

from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.buffer.cpu import Buffer

__all__ = ["PROGRESS_PREFIX", "ArrayProgress", "ProgressLog"]

PROGRESS_PREFIX = ".shadowzarr-materialize/"


@dataclass(slots=True)
class ArrayProgress:
    fingerprint: str
    done: set[int] = field(default_factory=set)
    complete: bool = False


class ProgressLog:
    """Per-array progress stored as JSON keys in the destination store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @staticmethod
    def _key(path: str) -> str:
        return PROGRESS_PREFIX + (path.replace("/", "%2F") or "%root") + ".json"

    async def load(self, path: str, fingerprint: str) -> ArrayProgress:
        buffer = await self.store.get(self._key(path), prototype=default_buffer_prototype())
        if buffer is None:
            return ArrayProgress(fingerprint)
        try:
            document: dict[str, Any] = json.loads(buffer.to_bytes())
        except (ValueError, UnicodeDecodeError):
            return ArrayProgress(fingerprint)  # a torn write: start this array again
        if document.get("fingerprint") != fingerprint:
            return ArrayProgress(fingerprint)  # a different source or layout: start again
        return ArrayProgress(
            fingerprint, set(document.get("done", [])), bool(document.get("complete"))
        )

    async def save(self, path: str, progress: ArrayProgress) -> None:
        document = {
            "fingerprint": progress.fingerprint,
            "done": sorted(progress.done),
            "complete": progress.complete,
        }
        await self.store.set(self._key(path), Buffer.from_bytes(json.dumps(document).encode()))

    async def started(self) -> bool:
        async for _ in self.store.list_prefix(PROGRESS_PREFIX):
            return True
        return False

    async def clear(self) -> None:
        keys = [key async for key in self.store.list_prefix(PROGRESS_PREFIX)]
        for key in keys:
            await self.store.delete(key)
        root = getattr(self.store, "root", None)
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
