"""Little-endian field decoding for HDF5 structures: scalars with odd widths and whole columns."""

from __future__ import annotations

import numpy as np

from .errors import Hdf5FormatError

_BYTE_WEIGHTS = (np.uint64(1) << (np.uint64(8) * np.arange(8, dtype=np.uint64))).astype(np.uint64)


def uint(buf: bytes | memoryview, pos: int, width: int) -> int:
    """Read an unsigned little-endian integer of ``width`` bytes at ``pos``."""
    if pos + width > len(buf):
        raise Hdf5FormatError(f"field at {pos} of width {width} runs past {len(buf)} bytes")
    return int.from_bytes(buf[pos : pos + width], "little")


def undefined(width: int) -> int:
    """The 'undefined address' value: all one-bits in ``width`` bytes."""
    return (1 << (8 * width)) - 1


def expect_signature(buf: bytes | memoryview, signature: bytes, where: int) -> None:
    """Fail with the address when a structure does not start with its 4-byte signature."""
    if bytes(buf[:4]) != signature:
        got = bytes(buf[:4])
        raise Hdf5FormatError(f"expected {signature!r} at address {where}, found {got!r}")


def records(buf: bytes | memoryview, start: int, count: int, size: int) -> np.ndarray:
    """View ``count`` fixed-size records starting at ``start`` as a (count, size) uint8 array."""
    end = start + count * size
    if end > len(buf):
        raise Hdf5FormatError(f"{count} records of {size} bytes at {start} exceed {len(buf)} bytes")
    return np.frombuffer(buf, dtype=np.uint8, count=count * size, offset=start).reshape(count, size)


def column(rows: np.ndarray, start: int, width: int) -> np.ndarray:
    """Decode bytes ``[start, start + width)`` of every row as little-endian uint64."""
    if width in (1, 2, 4, 8):
        raw = np.ascontiguousarray(rows[:, start : start + width])
        return raw.view(f"<u{width}").reshape(-1).astype(np.uint64)
    part = rows[:, start : start + width].astype(np.uint64)
    return (part * _BYTE_WEIGHTS[:width]).sum(axis=1, dtype=np.uint64)


def bit_width(value: int) -> int:
    """HDF5's ``H5VM_limit_enc_size``: bytes needed to encode ``value`` (at least one)."""
    return (max(value, 1).bit_length() - 1) // 8 + 1
