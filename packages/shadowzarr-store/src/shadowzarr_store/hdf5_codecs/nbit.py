"""HDF5's N-bit filter (5) on integers: each value's significant bits (``precision`` bits from
bit ``offset``) packed most significant bit first.

HDF5 hands a reader those bits converted to the memory type, sign-extended for signed types;
the codec returns them that way, so the chunk reads as h5py reads it. The configuration is the
filter's parameters for one atomic type (``cd_values``: count, "nothing packed", elements per
chunk, class 1, size, byte order (0 little, 1 big), precision, offset) and whether the integers
are signed. Compound and array types, and floats, are refused by the generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from shadowzarr_store.hdf5_codecs._base import DecodingCodec, refuse
from shadowzarr_store.hdf5_codecs.bits import unpack_msb_first

if TYPE_CHECKING:
    from zarr.core.array_spec import ArraySpec
    from zarr.core.common import JSON

__all__ = ["Hdf5Nbit"]

_ATOMIC = 1


@dataclass(frozen=True)
class Hdf5Nbit(DecodingCodec):
    """Decode integer chunks written by HDF5's N-bit filter."""

    codec_name = "shadowzarr.hdf5_nbit"
    cd_values: tuple[int, ...] = ()
    signed: bool = False

    def __init__(self, *, cd_values: Any = (), signed: Any = False) -> None:
        values = tuple(int(v) for v in cd_values)
        if len(values) != 8 or values[3] != _ATOMIC:
            raise ValueError(f"N-bit of one atomic type takes 8 cd_values, got {values}")
        object.__setattr__(self, "cd_values", values)
        object.__setattr__(self, "signed", bool(signed))

    def configuration(self) -> dict[str, JSON]:
        return {"cd_values": list(self.cd_values), "signed": self.signed}

    def decode_chunk(self, data: bytes, expected: int, chunk_spec: ArraySpec) -> bytes:
        _n, unpacked, count, _kind, size, order, precision, offset = self.cd_values
        name = self.codec_name
        if count * size != expected or size not in (1, 2, 4, 8):
            raise refuse(name, f"{count} elements of {size} bytes for a {expected}-byte chunk")
        if precision == 0 or precision + offset > size * 8:
            raise refuse(name, f"precision {precision} at offset {offset} in {size} bytes")
        if unpacked:
            if len(data) != expected:
                raise refuse(name, f"{len(data)} unpacked bytes, not {expected}")
            codes = np.frombuffer(data, dtype=f"{'<>'[order]}u{size}").astype(np.uint64)
            codes = (codes >> np.uint64(offset)) & np.uint64((1 << precision) - 1)
        else:
            try:
                codes = unpack_msb_first(data, count, precision)
            except ValueError as exc:
                raise refuse(name, str(exc)) from exc
        values = codes.astype(np.int64) if precision < 64 else codes.view(np.int64)
        if self.signed and precision < 64:
            negative = (codes >> np.uint64(precision - 1)) & np.uint64(1) == 1
            values[negative] -= np.int64(1) << np.int64(precision)
        kind = "i" if self.signed else "u"
        return values.astype(f"{'<>'[order]}{kind}{size}").tobytes()
