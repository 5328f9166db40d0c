"""Fixed-width unsigned integers packed most significant bit first, as HDF5's scale-offset and
N-bit filters write them (each value's bits follow the previous value's, across byte edges)."""

from __future__ import annotations

import numpy as np

__all__ = ["unpack_msb_first"]

_WINDOW_BITS = 57
"""Widths up to this read each value from one 8-byte window (its first bit is at most 7 in)."""


def unpack_msb_first(data: bytes | memoryview, count: int, width: int) -> np.ndarray:
    """``count`` values of ``width`` bits (1..64) from the start of ``data``, as uint64.

    Raises ValueError when ``data`` holds fewer than ``count * width`` bits."""
    if not 0 < width <= 64:
        raise ValueError(f"a packed width of {width} bits")
    needed = -(-count * width // 8)
    if len(data) < needed:
        raise ValueError(f"{len(data)} bytes hold fewer than {count} values of {width} bits")
    padded = np.zeros(needed + 8, dtype=np.uint8)
    padded[:needed] = np.frombuffer(data, dtype=np.uint8, count=needed)
    positions = np.arange(count, dtype=np.uint64) * np.uint64(width)
    if width <= _WINDOW_BITS:
        return _extract(padded, positions, width)
    # Wider: the high (width - 32) bits, then the low 32, each from its own window.
    high = _extract(padded, positions, width - 32)
    low = _extract(padded, positions + np.uint64(width - 32), 32)
    wide: np.ndarray = (high << np.uint64(32)) | low
    return wide


def _extract(padded: np.ndarray, positions: np.ndarray, width: int) -> np.ndarray:
    """The ``width``-bit values (at most 57) whose first bits are at ``positions``."""
    index = (positions >> np.uint64(3)).astype(np.intp)
    window = np.zeros(len(positions), dtype=np.uint64)
    for k in range(8):  # the 8 bytes from each value's first byte, as a big-endian uint64
        window = (window << np.uint64(8)) | padded[index + k].astype(np.uint64)
    shift = np.uint64(64 - width) - (positions & np.uint64(7))
    return (window >> shift) & np.uint64((1 << width) - 1)
