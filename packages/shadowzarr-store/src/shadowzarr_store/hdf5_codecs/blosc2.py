"""The Blosc2 filter (32026) of hdf5-blosc2, as hdf5plugin writes it: each chunk is a Blosc2
contiguous frame holding a B2ND array of the chunk's shape, whose items are typed only by size.
imagecodecs decodes the frame; the codec returns its bytes, so the array's own data type and
``bytes`` codec apply (imagecodecs' own Zarr codec would hand zarr untyped items).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from shadowzarr_store.hdf5_codecs._base import DecodingCodec, optional_library, refuse

if TYPE_CHECKING:
    from zarr.core.array_spec import ArraySpec
    from zarr.core.common import JSON

__all__ = ["Hdf5Blosc2"]


@dataclass(frozen=True)
class Hdf5Blosc2(DecodingCodec):
    """Decode chunks written by the hdf5-blosc2 filter (configuration: its cd_values)."""

    codec_name = "shadowzarr.hdf5_blosc2"
    cd_values: tuple[int, ...] = ()

    def __init__(self, *, cd_values: Any = ()) -> None:
        object.__setattr__(self, "cd_values", tuple(int(v) for v in cd_values))

    def configuration(self) -> dict[str, JSON]:
        return {"cd_values": list(self.cd_values)}

    def decode_chunk(self, data: bytes, expected: int, chunk_spec: ArraySpec) -> bytes:
        imagecodecs = optional_library(self.codec_name, "imagecodecs")
        if data[2:9] != b"b2frame":
            raise refuse(self.codec_name, "it is not a Blosc2 frame")
        declared = _frame_content_size(data)
        if declared is not None and declared > padded_bound(expected, chunk_spec):
            raise refuse(self.codec_name, f"the frame claims {declared} bytes, not {expected}")
        try:
            decoded = imagecodecs.b2nd_decode(data)
        except RuntimeError as exc:  # imagecodecs' B2ndError / Blosc2Error
            raise refuse(self.codec_name, f"Blosc2 cannot decode it: {exc}") from exc
        return np.ascontiguousarray(decoded).tobytes()


def padded_bound(expected: int, chunk_spec: ArraySpec) -> int:
    """The most bytes a frame for a chunk of ``expected`` bytes may hold: B2ND pads every axis
    of the chunk up to its own inner chunk shape, which the writer picks from the CPU's cache
    sizes (PyTables: a (13107, 10) chunk in inner chunks of (16384, 10)), so up to about twice
    per axis; the decoded array must still be exactly the chunk."""
    return (expected << max(1, len(chunk_spec.shape))) + (64 << 10)


def _frame_content_size(data: bytes) -> int | None:
    """The uncompressed size a Blosc2 frame header states, if it is where the format puts it."""
    # msgpack: fixarray, "b2frame\0" (str8), header size (int32), frame size (uint64), flags
    # (fixstr of 4), then the uncompressed size as an int64 (marker 0xd3) from byte 29.
    if len(data) < 38 or data[29] != 0xD3:
        return None
    return int.from_bytes(data[30:38], "big")
