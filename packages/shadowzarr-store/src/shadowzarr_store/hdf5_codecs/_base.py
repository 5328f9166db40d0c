"""What the HDF5 filter codecs share: configuration parsing, the size bound, the missing library."""

from __future__ import annotations

import asyncio
import importlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from shadowzarr_spec import ChunkDecodeError, UnsupportedFeatureError
from zarr.abc.codec import BytesBytesCodec
from zarr.core.common import parse_named_configuration

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer
    from zarr.core.common import JSON

__all__ = ["DecodingCodec", "chunk_nbytes", "optional_library", "refuse"]

INSTALL_HINT = "pip install 'shadowzarr-store[codecs]'"


@dataclass(frozen=True)
class DecodingCodec(BytesBytesCodec):
    """A read-only bytes-to-bytes codec: ``decode_chunk`` runs in a worker thread."""

    codec_name: ClassVar[str]
    is_fixed_size = False

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _name, configuration = parse_named_configuration(data, cls.codec_name)
        return cls(**(configuration or {}))

    def to_dict(self) -> dict[str, JSON]:
        return {"name": self.codec_name, "configuration": self.configuration()}

    def configuration(self) -> dict[str, JSON]:
        raise NotImplementedError

    def decode_chunk(self, data: bytes, expected: int, chunk_spec: ArraySpec) -> bytes:
        raise NotImplementedError

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        expected = chunk_nbytes(chunk_spec)
        decoded = self.decode_chunk(chunk_bytes.to_bytes(), expected, chunk_spec)
        if len(decoded) != expected:
            raise refuse(self.codec_name, f"decoded {len(decoded)} bytes, not {expected}")
        return chunk_spec.prototype.buffer.from_bytes(decoded)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    async def _encode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        raise NotImplementedError(f"{self.codec_name} only decodes (HDF5 writes these chunks)")

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: ArraySpec) -> int:
        raise NotImplementedError(f"{self.codec_name} chunks vary in size")


def chunk_nbytes(chunk_spec: ArraySpec) -> int:
    """Bytes of one decoded chunk: the most any of these filters may produce."""
    itemsize = chunk_spec.dtype.to_native_dtype().itemsize
    return math.prod(chunk_spec.shape) * itemsize


def refuse(codec: str, why: str) -> ChunkDecodeError:
    return ChunkDecodeError(f"a {codec} chunk is corrupt or not for this array: {why}")


def optional_library(codec: str, module: str) -> Any:
    """The decoding library ``module``, or an error naming what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UnsupportedFeatureError(
            f"the {codec} codec needs the {module} package ({INSTALL_HINT})"
        ) from exc


def int_field(configuration: dict[str, Any], name: str) -> int:
    value = configuration[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return value
