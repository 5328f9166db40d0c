"""Level-at-a-time index walks: every node of a level is known before any of them is fetched.

A walk is a generator that yields the byte ranges of one level and receives their bytes; the
driver fetches each level with one concurrent ``fetch_many``. Several walks (datasets) can be
driven in lockstep so a file with many datasets still costs rounds per index depth, not per node.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Collector", "IndexRecords", "Node", "Walk", "drive", "walk_nodes"]


@dataclass(frozen=True, slots=True)
class IndexRecords:
    """Chunk records as an index stores them; ``keys`` are interpreted by the index kind."""

    offsets: np.ndarray
    """Absolute file offsets (uint64)."""
    sizes: np.ndarray | None
    """Stored sizes (uint64), or None when the index stores none (unfiltered: chunk_bytes)."""
    masks: np.ndarray | None
    """Filter masks (uint32), or None for 0."""
    keys: np.ndarray
    """(n, k) element offsets (v1 B-tree), (n, rank) scaled offsets (v2 B-tree) or (n,) linear."""


@dataclass(slots=True)
class Collector:
    """Accumulates record arrays from the nodes of a walk."""

    offsets: list[np.ndarray] = field(default_factory=list)
    sizes: list[np.ndarray] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    keys: list[np.ndarray] = field(default_factory=list)
    has_sizes: bool = False
    key_shape: tuple[int, ...] = ()
    """Shape of one key, for the empty result (set once the index header is known)."""

    def add(
        self,
        offsets: np.ndarray,
        keys: np.ndarray,
        sizes: np.ndarray | None = None,
        masks: np.ndarray | None = None,
    ) -> None:
        n = len(offsets)
        self.offsets.append(offsets.astype(np.uint64))
        self.keys.append(keys)
        self.has_sizes |= sizes is not None
        self.sizes.append(np.zeros(n, np.uint64) if sizes is None else sizes.astype(np.uint64))
        self.masks.append(np.zeros(n, np.uint32) if masks is None else masks.astype(np.uint32))

    def finish(self) -> IndexRecords:
        if not self.offsets:
            empty = np.zeros((0, *self.key_shape), np.int64)
            return IndexRecords(np.zeros(0, np.uint64), None, None, empty)
        return IndexRecords(
            np.concatenate(self.offsets),
            np.concatenate(self.sizes) if self.has_sizes else None,
            np.concatenate(self.masks),
            np.concatenate(self.keys).astype(np.int64),
        )


@dataclass(frozen=True, slots=True)
class Node:
    """A byte range to fetch and what to do with its bytes (record them, return children)."""

    offset: int
    size: int
    expand: Callable[[bytes], list[Node]]


Walk = Generator[list[tuple[int, int]], list[bytes], IndexRecords]
FetchMany = Callable[[list[tuple[int, int]]], list[bytes]]


def walk_nodes(roots: list[Node], collector: Collector) -> Walk:
    """Fetch ``roots``, then each following level of children, one batch per level."""
    frontier = roots
    while frontier:
        blobs = yield [(node.offset, node.size) for node in frontier]
        frontier = [
            child for node, blob in zip(frontier, blobs, strict=True) for child in node.expand(blob)
        ]
    return collector.finish()


def drive[T](
    walks: list[Generator[list[tuple[int, int]], list[bytes], T]], fetch_many: FetchMany
) -> list[T]:
    """Run walks in lockstep: each round fetches the current level of every walk at once."""
    results: dict[int, T] = {}
    pending: dict[int, list[tuple[int, int]]] = {}
    for i, walk in enumerate(walks):
        try:
            pending[i] = next(walk)
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        batch = [r for needs in pending.values() for r in needs]
        blobs = fetch_many(batch) if batch else []
        start, advanced = 0, {}
        for i, needs in pending.items():
            part = blobs[start : start + len(needs)]
            start += len(needs)
            try:
                advanced[i] = walks[i].send(part)
            except StopIteration as stop:
                results[i] = stop.value
        pending = advanced
    return [results[i] for i in range(len(walks))]
