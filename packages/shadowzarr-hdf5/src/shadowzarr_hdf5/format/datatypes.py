"""The datatype message → the numpy type h5py would report.

Only the types whose h5py form is certain are read: IEEE floats and whole-byte integers,
fixed-length strings (null-padded or null-terminated), variable-length strings and object
references. Every other class (compounds, enums, arrays, opaque, bitfields, sequences, region
and new-style references) raises :class:`NotNative`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from .binary import uint
from .errors import NotNative

__all__ = ["Datatype", "DatatypeKind", "parse_datatype"]


class DatatypeKind(Enum):
    NUMBER = "number"
    FIXED_STRING = "fixed_string"
    VLEN_STRING = "vlen_string"
    REFERENCE = "reference"


@dataclass(frozen=True, slots=True)
class Datatype:
    kind: DatatypeKind
    dtype: np.dtype
    """h5py's numpy form with its string metadata (built here without importing h5py: the same
    ``h5py_encoding``/``vlen`` metadata ``h5py.string_dtype`` sets). References are plain
    ``object`` here; ``h5py_glue.h5py_dtype`` gives h5py's reference type."""
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
        dtype = _fixed_string_dtype("ascii" if charset == 0 else "utf-8", size)
        return Datatype(DatatypeKind.FIXED_STRING, dtype, size, null_terminated=padding == 0)
    if cls == _VLEN:
        if bits & 0x0F != 1:
            raise NotNative("variable-length sequence")
        charset = (bits >> 8) & 0x0F
        if charset not in (0, 1):
            raise NotNative("variable-length string of unknown character set")
        dtype = np.dtype("O", metadata={"vlen": bytes if charset == 0 else str})
        return Datatype(DatatypeKind.VLEN_STRING, dtype, size)
    if cls == _REFERENCE:
        if version >= 4 or bits & 0x0F != 0 or size != offset_size:
            raise NotNative("region or new-style reference")
        return Datatype(DatatypeKind.REFERENCE, np.dtype("O"), size)
    raise NotNative(f"datatype class {cls}")


def _fixed_point(data: bytes, bits: int, size: int) -> Datatype:
    if len(data) < 12 or size not in (1, 2, 4, 8) or bits & 0x06:
        raise NotNative("integer with padding or odd width")
    if uint(data, 8, 2) != 0 or uint(data, 10, 2) != 8 * size:
        raise NotNative("integer with a bit offset or partial precision")
    order = ">" if bits & 0x01 else "<"
    return Datatype(
        DatatypeKind.NUMBER, np.dtype(f"{order}{'i' if bits & 0x08 else 'u'}{size}"), size
    )


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
    return Datatype(DatatypeKind.NUMBER, np.dtype(f"{order}f{size}"), size)


def _fixed_string_dtype(encoding: str, size: int) -> np.dtype:
    return np.dtype(f"S{size}", metadata={"h5py_encoding": encoding})
