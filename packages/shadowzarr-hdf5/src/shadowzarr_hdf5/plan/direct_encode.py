"""Encode inline chunks without building a zarr Array, for the codec chains inlining uses most.

Going through a zarr Array costs milliseconds per dataset (metadata parsing, an event loop round
trip), which is most of the time generation spends on an NWB file's thousands of small
datasets. Plain numbers (the ``bytes`` codec), strings (``vlen-utf8``) and variable-length
bytes (``vlen-bytes``), optionally ``zstd``, are encoded here with the very numcodecs objects
zarr-python uses, so the bytes are the same; anything else returns None and goes through zarr
(tests compare the two on random arrays). Zero-dimensional ``vlen-bytes`` arrays must come
here: zarr-python 3 cannot write them (numcodecs is handed the array instead of its item).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numcodecs.vlen import VLenBytes, VLenUTF8
from numcodecs.zstd import Zstd
from shadowzarr_spec.metadata import VLEN_BYTES

from ..zarr_memory import chunk_region

__all__ = ["encode_directly"]

_VLEN_UTF8 = VLenUTF8()
_VLEN_BYTES = VLenBytes()


def encode_directly(
    values: np.ndarray,
    *,
    data_type: Any,
    chunk_shape: Sequence[int],
    codecs: list[dict[str, Any]],
    fill_value: Any,
    regions: Iterable[tuple[int, ...]],
) -> dict[tuple[int, ...], bytes] | None:
    """Chunk coordinates → bytes, or None when this chain is left to zarr-python."""
    encode = _chunk_encoder(values, data_type, codecs, fill_value)
    if encode is None:
        return None
    out: dict[tuple[int, ...], bytes] = {}
    for coords in regions:
        out[tuple(coords)] = encode(_padded_chunk(values, coords, chunk_shape, encode.fill))
    return out


class _Encoder:
    """One chunk (padded to the full chunk shape) → its stored bytes."""

    def __init__(self, fill: Any, steps: list[Any]) -> None:
        self.fill = fill
        self._steps = steps

    def __call__(self, chunk: np.ndarray) -> bytes:
        data: Any = chunk
        for step in self._steps:
            data = step(data)
        return bytes(data)


def _chunk_encoder(
    values: np.ndarray, data_type: Any, codecs: list[dict[str, Any]], fill_value: Any
) -> _Encoder | None:
    names = [c.get("name") for c in codecs]
    if isinstance(data_type, str) and data_type == "string":
        if names == ["vlen-utf8"] or names == ["vlen-utf8", "zstd"]:
            steps: list[Any] = [_vlen_utf8]
            if names[-1] == "zstd":
                steps.append(_zstd(codecs[-1]))
            return _Encoder("" if fill_value is None else str(fill_value), steps)
        return None
    if isinstance(data_type, str) and data_type == VLEN_BYTES:
        if names == ["vlen-bytes"] or names == ["vlen-bytes", "zstd"]:
            steps = [_vlen_bytes]
            if names[-1] == "zstd":
                steps.append(_zstd(codecs[-1]))
            return _Encoder(b"" if fill_value is None else bytes(fill_value), steps)
        return None
    if isinstance(data_type, str):
        return None
    dtype = np.dtype(data_type)
    if names != ["bytes"] or dtype.kind not in "biuf" or dtype.subdtype is not None:
        return None
    if values.dtype != dtype:
        return None
    endian = codecs[0].get("configuration", {}).get("endian", "little")
    stored = dtype.newbyteorder("<" if endian == "little" else ">")
    fill = np.zeros((), dtype) if fill_value is None else np.asarray(fill_value, dtype=dtype)
    return _Encoder(fill, [lambda chunk: np.ascontiguousarray(chunk, dtype=stored).tobytes()])


def _vlen_utf8(chunk: np.ndarray) -> Any:
    """numcodecs' bytearray, like `_vlen_bytes`."""
    return _VLEN_UTF8.encode(np.ascontiguousarray(chunk.astype(object)))


def _vlen_bytes(chunk: np.ndarray) -> Any:
    """numcodecs' bytearray (the encoder takes ``bytes`` of the last step)."""
    return _VLEN_BYTES.encode(np.ascontiguousarray(chunk.astype(object)).reshape(-1))


def _zstd(codec: dict[str, Any]) -> Any:
    config = codec.get("configuration", {})
    compressor = Zstd(level=int(config.get("level", 0)), checksum=bool(config.get("checksum")))
    return compressor.encode


def _padded_chunk(
    values: np.ndarray, coords: Sequence[int], chunk_shape: Sequence[int], fill: Any
) -> np.ndarray:
    """The chunk's values, padded with the fill value to the full chunk shape as zarr does."""
    if values.ndim == 0:
        return values.reshape(())
    part = values[chunk_region(coords, chunk_shape, values.shape)]
    if part.shape == tuple(chunk_shape):
        return part
    padded = np.full(tuple(chunk_shape), fill, dtype=part.dtype)
    padded[tuple(slice(0, s) for s in part.shape)] = part
    return padded
