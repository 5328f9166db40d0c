"""Where the cache keeps the bytes of one chunk, as the store would have read them.

A chunk whose value lives in a source file is cached under ``(source identity, start, end)`` of
the range the store reads for it; export, ``cache_contains`` and ``get_chunk`` ask the cache for
exactly that range. A chunk the references hold inline, or one never written (the fill value),
needs no bytes from anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shadowzarr_store.resolve import SourceValue, plan_read

if TYPE_CHECKING:
    from shadowzarr_store.remote.policy import Caches
    from shadowzarr_store.rfs_store import RfsStore

__all__ = ["ChunkSpan", "cached_chunk_bytes", "chunk_is_cached", "chunk_span"]


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """The cache key of one chunk's source bytes."""

    identity: str
    start: int
    end: int


async def chunk_span(store: RfsStore, key: str) -> ChunkSpan | None:
    """The cached range of ``key``, or None when no source bytes stand behind it (inline, never
    written, or a selection read that the cache does not keep whole)."""
    value = await store.resolver.resolve(key)
    if not isinstance(value, SourceValue):
        return None
    if value.offset is None:
        start, end = 0, -1
    else:
        plan = plan_read(value, None)
        if plan.start != value.offset:
            return None
        start, end = plan.start, plan.end
    identity = await store.reader.identity(value.url)
    return ChunkSpan(identity, start, end)


async def cached_chunk_bytes(store: RfsStore, caches: Caches, key: str) -> bytes | None:
    """The source bytes of chunk ``key`` if a cache holds them (exactly as they were read)."""
    span = await chunk_span(store, key)
    if span is None:
        return None
    if caches.memory is not None:
        data = caches.memory.get(span.identity, span.start, span.end)
        if data is not None:
            return data
    if caches.disk is not None:
        return caches.disk.get(span.identity, span.start, span.end)
    return None


async def chunk_is_cached(store: RfsStore, caches: Caches, key: str) -> bool:
    """Whether reading ``key`` needs no request: cached, inline, or never written."""
    value = await store.resolver.resolve(key)
    if not isinstance(value, SourceValue):
        return True
    span = await chunk_span(store, key)
    return span is not None and caches.contains(span.identity, span.start, span.end)
