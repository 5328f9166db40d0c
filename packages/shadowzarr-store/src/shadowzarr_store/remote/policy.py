"""Cache policies of remote arrays: none, memory (bounded LRU) or disk (SQLite `LocalCache`)."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shadowzarr_store.local_cache import LocalCache
from shadowzarr_store.memory_cache import MemoryCache

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["DEFAULT_CACHE_BYTES", "CachePolicy", "Caches", "make_caches"]

DEFAULT_CACHE_BYTES = 256 * 2**20


class CachePolicy(enum.StrEnum):
    """What a remote array keeps of the bytes it reads."""

    NONE = "none"
    """Nothing: every read goes to the source."""
    MEMORY = "memory"
    """Chunks in this process, bounded (default 256 MiB), least recently used out first."""
    DISK = "disk"
    """Chunks in a SQLite `LocalCache` (default 256 MiB; ``None`` = unbounded), across runs."""


@dataclass(frozen=True, slots=True)
class Caches:
    """The caches one policy gives a store."""

    policy: CachePolicy
    memory: MemoryCache | None = None
    disk: LocalCache | None = None

    @property
    def size_bytes(self) -> int:
        """Bytes currently held (the disk cache counts everything in its file)."""
        if self.disk is not None:
            return self.disk.size_bytes
        if self.memory is not None:
            return self.memory.size_bytes
        return 0

    def trim(self, target_bytes: int, max_entries: int | None = None) -> int:
        """Evict least recently used chunks toward ``target_bytes``; return how many went."""
        if target_bytes < 0:
            raise ValueError(f"target_bytes must not be negative, got {target_bytes}")
        if self.disk is not None:
            return self.disk.trim(target_bytes, max_entries)
        if self.memory is not None:
            return self.memory.trim(target_bytes, max_entries)
        return 0

    def contains(self, source: str, start: int, end: int) -> bool:
        """Whether either cache holds bytes ``[start, end)`` of ``source`` (an identity key)."""
        return bool(
            (self.memory is not None and self.memory.contains(source, start, end))
            or (self.disk is not None and self.disk.contains(source, start, end))
        )

    @property
    def max_size_bytes(self) -> int | None:
        if self.disk is not None:
            return self.disk.max_size_bytes
        if self.memory is not None:
            return self.memory.max_size_bytes
        return 0


def make_caches(
    policy: CachePolicy | str,
    max_cache_bytes: int | None = DEFAULT_CACHE_BYTES,
    cache_dir: str | os.PathLike[str] | Path | None = None,
    *,
    memory_cache: MemoryCache | None = None,
    local_cache: LocalCache | None = None,
) -> Caches:
    """Caches for ``policy``; pass existing caches to share them between arrays (per store)."""
    try:
        chosen = CachePolicy(policy)
    except ValueError:
        raise ValueError(
            f"cache={policy!r}: use 'none', 'memory' or 'disk' (or a CachePolicy)"
        ) from None
    if chosen is CachePolicy.NONE:
        return Caches(chosen)
    if chosen is CachePolicy.MEMORY:
        if max_cache_bytes is None:
            raise ValueError("a memory cache must be bounded: give max_cache_bytes in bytes")
        if memory_cache is None:
            memory_cache = MemoryCache(max_cache_bytes)
        return Caches(chosen, memory=memory_cache)
    if local_cache is None:  # (an empty LocalCache is falsy: it has a length)
        local_cache = LocalCache(
            None if cache_dir is None else os.path.join(cache_dir, "chunks"), max_cache_bytes
        )
    return Caches(chosen, disk=local_cache)
