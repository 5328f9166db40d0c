"""H5Z-ZFP (filter 32013, LLNL's ZFP filter, written by hdf5plugin): its chunks are zfp streams
without their header, which the filter keeps in the dataset's cd_values (after a first word
naming the filter and zfp versions). The codec puts the header back in front of the chunk, bit
for bit (96 bits, or 148 when the mode is a 64-bit expert mode), and imagecodecs decodes the
whole stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from shadowzarr_store.hdf5_codecs._base import DecodingCodec, optional_library, refuse

if TYPE_CHECKING:
    from zarr.core.array_spec import ArraySpec
    from zarr.core.common import JSON

__all__ = ["Hdf5Zfp"]

_MAGIC_META_BITS = 32 + 52
_SHORT_MODE_BITS, _LONG_MODE_BITS = 12, 64
_LONG_MODE_MARK = (1 << _SHORT_MODE_BITS) - 1


@dataclass(frozen=True)
class Hdf5Zfp(DecodingCodec):
    """Decode chunks written by H5Z-ZFP (configuration: the filter's cd_values)."""

    codec_name = "shadowzarr.hdf5_zfp"
    cd_values: tuple[int, ...] = ()

    def __init__(self, *, cd_values: Any = ()) -> None:
        values = tuple(int(v) for v in cd_values)
        if len(values) < 4:
            raise ValueError(f"H5Z-ZFP keeps its header in at least 4 cd_values, got {values}")
        object.__setattr__(self, "cd_values", values)

    def configuration(self) -> dict[str, JSON]:
        return {"cd_values": list(self.cd_values)}

    def header(self) -> tuple[int, int]:
        """The zfp header (an integer, least significant bit first) and its length in bits."""
        words = np.array(self.cd_values[1:], dtype="<u4").tobytes()
        value = int.from_bytes(words, "little")
        mode = (value >> _MAGIC_META_BITS) & _LONG_MODE_MARK
        bits = _MAGIC_META_BITS + (_LONG_MODE_BITS if mode == _LONG_MODE_MARK else _SHORT_MODE_BITS)
        if bits > len(words) * 8 or words[:3] != b"zfp":
            raise refuse(self.codec_name, "its cd_values hold no zfp header")
        return value & ((1 << bits) - 1), bits

    def elements(self) -> int:
        """How many values the header says a chunk holds (its field's dimensions)."""
        header, _bits = self.header()
        meta = header >> 32
        dims = ((meta >> 2) & 3) + 1
        width = {1: 48, 2: 24, 3: 16, 4: 12}[dims]
        sizes = meta >> 4
        count = 1
        for axis in range(dims):
            count *= ((sizes >> (axis * width)) & ((1 << width) - 1)) + 1
        return count

    def decode_chunk(self, data: bytes, expected: int, chunk_spec: ArraySpec) -> bytes:
        imagecodecs = optional_library(self.codec_name, "imagecodecs")
        itemsize = chunk_spec.dtype.to_native_dtype().itemsize
        if self.elements() * itemsize != expected:  # checked before zfp allocates the field
            raise refuse(self.codec_name, f"its header holds {self.elements()} values")
        header, bits = self.header()
        if bits % 8 == 0:
            stream = header.to_bytes(bits // 8, "little") + data
        else:
            joined = header | (int.from_bytes(data, "little") << bits)
            stream = joined.to_bytes(-(-(bits + 8 * len(data)) // 8), "little")
        stream += b"\0" * (-len(stream) % 8 + 8)  # zfp reads whole 64-bit words
        try:
            decoded = imagecodecs.zfp_decode(stream)
        except RuntimeError as exc:  # imagecodecs' ZfpError
            raise refuse(self.codec_name, f"zfp cannot decode it: {exc}") from exc
        native = chunk_spec.dtype.to_native_dtype()
        if decoded.nbytes != expected or decoded.dtype.kind != native.kind:
            raise refuse(self.codec_name, f"it decodes to {decoded.dtype} {decoded.shape}")
        return np.ascontiguousarray(decoded).astype(native.newbyteorder("<")).tobytes()
