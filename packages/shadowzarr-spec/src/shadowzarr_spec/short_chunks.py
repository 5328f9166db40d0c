"""How short an uncompressed chunk's bytes may be: the rule both readers and the builder share.

An uncompressed chunk (``bytes``, optionally ``transpose``) may hold fewer bytes than a whole
chunk only where every element left out lies outside the array, so that the fill value a reader
puts there is never seen (Zarr discards it). That is the chunk's bytes up to and including its
last element inside the array, in stored order: `bytes_needed`. Anything shorter would show the
fill value where the array has data, so readers refuse it (see the package README).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["bytes_needed", "stored_order"]


def stored_order(codecs: Sequence[Mapping[str, Any]], ndim: int) -> tuple[int, ...]:
    """The array axes in the order a chunk's bytes store them (``transpose`` codecs applied in
    turn); the identity without one. A malformed order is left to zarr's own checks: the
    identity is returned for it here."""
    order = tuple(range(ndim))
    for codec in codecs:
        if codec.get("name") != "transpose":
            continue
        given = (codec.get("configuration") or {}).get("order")
        if (
            not isinstance(given, list)
            or sorted(given) != list(range(ndim))
            or not all(isinstance(axis, int) and not isinstance(axis, bool) for axis in given)
        ):
            return tuple(range(ndim))
        order = tuple(order[axis] for axis in given)
    return order


def bytes_needed(
    shape: Sequence[int],
    chunk_shape: Sequence[int],
    order: Sequence[int],
    itemsize: int,
    coords: Sequence[int],
) -> int:
    """The fewest bytes chunk ``coords`` may hold: through its last element inside the array in
    stored order (0 for a chunk outside the array's grid; the whole chunk for one inside it)."""
    if len(coords) != len(shape):
        return math.prod(chunk_shape) * itemsize
    inside = [min(c, s - k * c) for s, c, k in zip(shape, chunk_shape, coords, strict=True)]
    if any(extent <= 0 for extent in inside):
        return 0
    position = 0
    for axis in order:
        position = position * chunk_shape[axis] + inside[axis] - 1
    return (position + 1) * itemsize
