"""The bitshuffle filter (32008) of kiyo-masui/bitshuffle, as hdf5plugin and h5py's plugins
write it: with LZ4 or Zstd, a chunk is a 12-byte header (the decoded size, 8 bytes, and the
block size in bytes, 4 bytes, both big-endian), then for each block of elements (a multiple of
8) its compressed size (4 bytes, big-endian) and its bit-transposed, compressed bytes, then the
last ``n % 8`` elements as they are. Without compression the chunk is the transposed blocks
alone. imagecodecs does the transposition and the block decompression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shadowzarr_store.hdf5_codecs._base import DecodingCodec, optional_library, refuse

if TYPE_CHECKING:
    from zarr.core.array_spec import ArraySpec
    from zarr.core.common import JSON

__all__ = ["Hdf5Bitshuffle"]

_NONE, _LZ4, _ZSTD = 0, 2, 3
_MULTIPLE = 8


@dataclass(frozen=True)
class Hdf5Bitshuffle(DecodingCodec):
    """Decode chunks of HDF5's bitshuffle filter (configuration: its cd_values)."""

    codec_name = "shadowzarr.hdf5_bitshuffle"
    cd_values: tuple[int, ...] = ()

    def __init__(self, *, cd_values: Any = ()) -> None:
        values = tuple(int(v) for v in cd_values)
        if len(values) < 3 or values[2] <= 0:
            raise ValueError(f"bitshuffle needs cd_values with the element size, got {values}")
        if len(values) > 4 and values[4] not in (_NONE, _LZ4, _ZSTD):
            raise ValueError(f"bitshuffle compression {values[4]} is not LZ4 or Zstd")
        object.__setattr__(self, "cd_values", values)

    def configuration(self) -> dict[str, JSON]:
        return {"cd_values": list(self.cd_values)}

    def decode_chunk(self, data: bytes, expected: int, chunk_spec: ArraySpec) -> bytes:
        imagecodecs = optional_library(self.codec_name, "imagecodecs")
        itemsize = self.cd_values[2]
        compression = self.cd_values[4] if len(self.cd_values) > 4 else _NONE
        if expected % itemsize:
            raise refuse(self.codec_name, f"{expected} bytes are not {itemsize}-byte elements")
        if compression == _NONE:
            if len(data) != expected:
                raise refuse(self.codec_name, f"{len(data)} bytes, not {expected}")
            blocksize = self.cd_values[3] if len(self.cd_values) > 3 else 0
            return bytes(
                imagecodecs.bitshuffle_decode(data, itemsize=itemsize, blocksize=blocksize)
            )
        return self._blocks(imagecodecs, data, expected, itemsize, compression)

    def _blocks(
        self, imagecodecs: Any, data: bytes, expected: int, itemsize: int, compression: int
    ) -> bytes:
        name = self.codec_name
        if len(data) < 12:
            raise refuse(name, f"{len(data)} bytes, shorter than the header")
        total = int.from_bytes(data[:8], "big")
        block = int.from_bytes(data[8:12], "big") // itemsize
        if total != expected:
            raise refuse(name, f"the header claims {total} bytes, the chunk holds {expected}")
        if block <= 0 or block % _MULTIPLE:
            raise refuse(name, f"blocks of {block} elements")
        count = total // itemsize
        full, rest = divmod(count, block)
        counts = [block] * full + ([rest - rest % _MULTIPLE] if rest >= _MULTIPLE else [])
        decompress = imagecodecs.lz4_decode if compression == _LZ4 else imagecodecs.zstd_decode
        out = bytearray()
        position = 12
        for elements in counts:
            size = int.from_bytes(data[position : position + 4], "big")
            position += 4
            if size <= 0 or position + size > len(data):
                raise refuse(name, f"a block of {size} bytes past the chunk's end")
            nbytes = elements * itemsize
            try:
                plain = decompress(data[position : position + size], out=nbytes)
            except RuntimeError as exc:  # imagecodecs' Lz4Error and ZstdError
                raise refuse(name, f"a block does not decompress: {exc}") from exc
            if len(plain) != nbytes:
                raise refuse(name, f"a block decodes to {len(plain)} bytes, not {nbytes}")
            position += size
            out += imagecodecs.bitshuffle_decode(
                bytes(plain), itemsize=itemsize, blocksize=elements
            )
        leftover = (count % _MULTIPLE) * itemsize
        out += data[position : position + leftover]
        if position + leftover != len(data):
            raise refuse(name, f"{len(data) - position - leftover} bytes after the last block")
        return bytes(out)
