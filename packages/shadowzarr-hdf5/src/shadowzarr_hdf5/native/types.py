"""Datatype and dataspace messages → the numpy type and shape h5py would report.

Only the types whose h5py form is certain are read: IEEE floats and whole-byte integers,
fixed-length strings (null-padded or null-terminated), variable-length strings and object
references. Every other class (compounds, enums, arrays, opaque, bitfields, sequences, region
and new-style references) raises :class:`NotNative`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import h5py
import numpy as np

from ..remote.binary import uint
from .errors import NotNative

__all__ = ["Datatype", "Kind", "parse_dataspace", "parse_datatype"]


class Kind(Enum):
    NUMBER = "number"
    FIXED_STRING = "fixed_string"
    VLEN_STRING = "vlen_string"
    REFERENCE = "reference"


@dataclass(frozen=True, slots=True)
class Datatype:
    kind: Kind
    dtype: np.dtype
    """h5py's numpy form (with its string and reference metadata)."""
    size: int
    """Bytes per element as stored."""
    null_terminated: bool = False
    """Fixed strings: HDF5 cuts them at the first null when converting to h5py's type."""


_FIXED, _FLOAT, _STRING, _REFERENCE, _VLEN = 0, 1, 3, 7, 9

# (precision, exponent location, exponent size, mantissa location, mantissa size, bias, sign)
_IEEE = {
    2: (16, 10, 5, 0, 10, 15, 15),
    4: (32, 23, 8, 0, 23, 127, 31),
    8: (64, 52, 11, 0, 52, 1023, 63),
}


def parse_datatype(data: bytes, offset_size: int) -> Datatype:
    """Decode a datatype message (or an attribute's embedded datatype)."""
    if len(data) < 8:
        raise NotNative("datatype message too short")
    cls, version = data[0] & 0x0F, data[0] >> 4
    bits = data[1] | (data[2] << 8) | (data[3] << 16)
    size = uint(data, 4, 4)
    if cls == _FIXED:
        return _fixed_point(data, bits, size)
    if cls == _FLOAT:
        return _floating(data, bits, size)
    if cls == _STRING:
        padding, charset = bits & 0x0F, (bits >> 4) & 0x0F
        if padding not in (0, 1) or charset not in (0, 1) or size < 1:
            raise NotNative("space-padded or unusual fixed string")
        dtype = h5py.string_dtype("ascii" if charset == 0 else "utf-8", size)
        return Datatype(Kind.FIXED_STRING, dtype, size, null_terminated=padding == 0)
    if cls == _VLEN:
        if bits & 0x0F != 1:
            raise NotNative("variable-length sequence")
        charset = (bits >> 8) & 0x0F
        if charset not in (0, 1):
            raise NotNative("variable-length string of unknown character set")
        dtype = h5py.string_dtype("ascii" if charset == 0 else "utf-8")
        return Datatype(Kind.VLEN_STRING, dtype, size)
    if cls == _REFERENCE:
        if version >= 4 or bits & 0x0F != 0 or size != offset_size:
            raise NotNative("region or new-style reference")
        return Datatype(Kind.REFERENCE, h5py.ref_dtype, size)
    raise NotNative(f"datatype class {cls}")


def _fixed_point(data: bytes, bits: int, size: int) -> Datatype:
    if len(data) < 12 or size not in (1, 2, 4, 8) or bits & 0x06:
        raise NotNative("integer with padding or odd width")
    if uint(data, 8, 2) != 0 or uint(data, 10, 2) != 8 * size:
        raise NotNative("integer with a bit offset or partial precision")
    order = ">" if bits & 0x01 else "<"
    return Datatype(Kind.NUMBER, np.dtype(f"{order}{'i' if bits & 0x08 else 'u'}{size}"), size)


def _floating(data: bytes, bits: int, size: int) -> Datatype:
    if len(data) < 20 or size not in _IEEE or bits & 0x40 or bits & 0x0E:
        raise NotNative("non-IEEE floating point")
    layout = (
        uint(data, 10, 2), data[12], data[13], data[14], data[15], uint(data, 16, 4),
        (bits >> 8) & 0xFF,
    )  # fmt: skip
    if uint(data, 8, 2) != 0 or layout != _IEEE[size] or (bits >> 4) & 0x03 != 2:
        raise NotNative("floating point with a non-IEEE layout")
    order = ">" if bits & 0x01 else "<"
    return Datatype(Kind.NUMBER, np.dtype(f"{order}f{size}"), size)


def parse_dataspace(
    data: bytes, length_size: int
) -> tuple[tuple[int, ...] | None, tuple[int | None, ...] | None]:
    """``(shape, maxshape)`` as h5py reports them; ``(None, None)`` for a null dataspace;
    ``None`` in ``maxshape`` marks an unlimited axis. (``remote.object_header.parse_dataspace``
    answers a different question, the geometry a chunk index was built for, and reads any
    all-ones width as unlimited.)"""
    if len(data) < 4:
        raise NotNative("dataspace message too short")
    version, rank, flags = data[0], data[1], data[2]
    if version == 1:
        pos = 8
    elif version == 2:
        pos = 4
        if data[3] == 2:
            return None, None
    else:
        raise NotNative(f"dataspace version {version}")
    if version == 1 and flags & 0x02:
        raise NotNative("dataspace with a permutation")
    ln = length_size
    shape = tuple(uint(data, pos + i * ln, ln) for i in range(rank))
    if not flags & 0x01:
        return shape, shape
    # HDF5 reads an all-ones field into its 8-byte size: only the 8-byte form means unlimited.
    unlimited = (1 << 64) - 1
    raw = (uint(data, pos + (rank + i) * ln, ln) for i in range(rank))
    return shape, tuple(None if v == unlimited else v for v in raw)
