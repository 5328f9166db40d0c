"""A file's bytes as a strip of bins, each coloured by what lies in it (numpy only).

A source file can be a hundred gigabytes with hundreds of thousands of chunks, each far less
than a pixel wide; drawing them one by one would hide most of them. Instead the file is cut
into as many bins as the strip has pixels, each bin counts the bytes of every kind it holds,
and the bin shows the most specific kind present (a selected chunk always shows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Kind", "bin_coverage", "dominant_kinds"]


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of byte: a name for the legend, a colour, and its extents ``[start, end)``."""

    label: str
    color: str
    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, label: str, color: str, extents: Sequence[tuple[int, int]]) -> Kind:
        array = np.array(sorted(extents), dtype=np.int64).reshape(-1, 2)
        return cls(label, color, array[:, 0], array[:, 1])


def bin_coverage(kind: Kind, edges: np.ndarray) -> np.ndarray:
    """Bytes of ``kind`` inside each bin ``[edges[i], edges[i + 1])``."""
    if kind.starts.size == 0:
        return np.zeros(len(edges) - 1)
    covered = _covered_below(kind, edges.astype(np.float64))
    return np.diff(covered)


def _covered_below(kind: Kind, points: np.ndarray) -> np.ndarray:
    """For each point, the bytes of ``kind``'s extents below it (extents do not overlap)."""
    starts = kind.starts.astype(np.float64)
    ends = kind.ends.astype(np.float64)
    lengths = np.cumsum(ends - starts)
    before = np.concatenate([[0.0], lengths])
    index = np.searchsorted(starts, points, side="right")  # extents starting at or below
    result = before[index]
    inside = index > 0
    last = index[inside] - 1
    overshoot = np.maximum(ends[last] - points[inside], 0.0)
    result[inside] -= overshoot
    return result


def dominant_kinds(coverages: Sequence[np.ndarray]) -> np.ndarray:
    """For each bin, the index of the last (most specific) kind with any byte there; -1: none."""
    shown = np.full(len(coverages[0]), -1, dtype=int)
    for number, coverage in enumerate(coverages):
        shown[coverage > 0] = number
    return shown
