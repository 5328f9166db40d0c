"""HDF5's scale-offset filter (6): integers minus their chunk minimum, floats scaled by 10^D and
rounded, packed in as few bits as the chunk's range needs; a fill value gets the all-ones code.

A stored chunk starts with a 21-byte header: the bit width (4 bytes, little-endian), the size
of the minimum (1 byte), the minimum (8 bytes, little-endian: an integer, or a float's bytes),
8 unused bytes. The values follow, most significant bit first. The configuration is the
filter's own 20 parameters (``cd_values``): scale type, scale factor, elements per chunk, class
(0 integer, 1 float), size, sign, byte order (0 little, 1 big), fill defined, the fill's bytes.
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

__all__ = ["Hdf5ScaleOffset"]

_HEADER = 21
_INTEGER, _FLOAT = 0, 1
_DSCALE = 0


@dataclass(frozen=True)
class Hdf5ScaleOffset(DecodingCodec):
    """Decode chunks written by HDF5's scale-offset filter (configuration: its cd_values)."""

    codec_name = "shadowzarr.hdf5_scaleoffset"
    cd_values: tuple[int, ...] = ()

    def __init__(self, *, cd_values: Any = ()) -> None:
        values = tuple(int(v) for v in cd_values)
        if len(values) != 20:
            raise ValueError(f"scale-offset takes 20 cd_values, got {len(values)}")
        object.__setattr__(self, "cd_values", values)

    def configuration(self) -> dict[str, JSON]:
        return {"cd_values": list(self.cd_values)}

    def decode_chunk(self, data: bytes, expected: int, chunk_spec: ArraySpec) -> bytes:
        scale_type, scale_factor, count, kind, size, signed, order, fill_defined = self.cd_values[
            :8
        ]
        name = self.codec_name
        if count * size != expected or size not in (1, 2, 4, 8):
            raise refuse(name, f"{count} elements of {size} bytes for a {expected}-byte chunk")
        if kind == _INTEGER and max(scale_factor, 0) == size * 8:
            return data  # the filter leaves data at full precision untouched
        if kind == _FLOAT and scale_type != _DSCALE:
            raise refuse(name, f"float scale type {scale_type} (HDF5 writes only D-scaling)")
        if len(data) < _HEADER:
            raise refuse(name, f"{len(data)} bytes, shorter than the header")
        width = int.from_bytes(data[:4], "little")
        minimum = int.from_bytes(data[5 : 5 + min(8, data[4])], "little")
        if width > size * 8:
            raise refuse(name, f"{width}-bit codes for {size}-byte values")
        body = memoryview(data)[_HEADER:]
        stored = np.dtype(f"{'<>'[order]}{'uif'[kind * 2] if kind else 'ui'[signed]}{size}")
        if width == size * 8:
            if len(body) < expected:
                raise refuse(name, f"{len(body)} bytes of full-precision values, not {expected}")
            return bytes(body[:expected])
        try:
            codes = (
                unpack_msb_first(body, count, width) if width else np.zeros(count, dtype=np.uint64)
            )
        except ValueError as exc:
            raise refuse(name, str(exc)) from exc
        all_ones = np.uint64((1 << width) - 1)
        fill = b"".join(v.to_bytes(4, "little") for v in self.cd_values[8:])[:size]
        if kind == _INTEGER:
            mask = np.uint64((1 << (size * 8)) - 1) if size < 8 else np.uint64(2**64 - 1)
            values = (codes + np.uint64(minimum)) & mask
            if fill_defined:
                values[codes == all_ones] = np.uint64(int.from_bytes(fill, "little"))
            return bytes(values.astype(f"{'<>'[order]}u{size}").tobytes())
        native = np.dtype(f"<f{size}")
        low = np.frombuffer(minimum.to_bytes(8, "little")[:size], dtype=native)[0]
        signed_codes = codes.astype(np.int64)  # below 2**(8 * size - 1): never negative
        scale = np.power(native.type(10.0), native.type(scale_factor))
        floats = signed_codes.astype(native) / scale + low
        if fill_defined:
            floats[codes == all_ones] = np.frombuffer(fill, dtype=native)[0]
        return bytes(floats.astype(stored).tobytes())
