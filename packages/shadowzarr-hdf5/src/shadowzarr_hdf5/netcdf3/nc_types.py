"""netCDF-3 external types: their numpy dtypes (big-endian, as stored) and default fills."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NC_CHAR", "NcType", "nc_type"]

NC_CHAR = 2


@dataclass(frozen=True, slots=True)
class NcType:
    """One external type: its tag, the stored dtype and netCDF's default fill value."""

    code: int
    name: str
    dtype: np.dtype
    default_fill: int | float | bytes


_TYPES = {
    t.code: t
    for t in (
        NcType(1, "byte", np.dtype("i1"), -127),
        NcType(NC_CHAR, "char", np.dtype("S1"), b"\x00"),
        NcType(3, "short", np.dtype(">i2"), -32767),
        NcType(4, "int", np.dtype(">i4"), -2147483647),
        NcType(5, "float", np.dtype(">f4"), 9.9692099683868690e36),
        NcType(6, "double", np.dtype(">f8"), 9.9692099683868690e36),
        # CDF-5 (64-bit data) only
        NcType(7, "ubyte", np.dtype("u1"), 255),
        NcType(8, "ushort", np.dtype(">u2"), 65535),
        NcType(9, "uint", np.dtype(">u4"), 4294967295),
        NcType(10, "int64", np.dtype(">i8"), -9223372036854775806),
        NcType(11, "uint64", np.dtype(">u8"), 18446744073709551614),
    )
}
_CLASSIC_CODES = frozenset(range(1, 7))


def nc_type(code: int, *, cdf5: bool) -> NcType | None:
    """The type of tag ``code``, None when the format version has no such type."""
    if not cdf5 and code not in _CLASSIC_CODES:
        return None
    return _TYPES.get(code)
