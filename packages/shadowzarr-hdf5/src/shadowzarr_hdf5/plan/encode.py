"""Encode values into chunk bytes held in the references (strings, references, small data),
and the in-memory zarr array that encoding and decoding share.

The bytes come from zarr-python itself, writing an array with the very metadata the references
describe into memory (`memory_array_store`), so whatever reads the references decodes them the
same way. The chains inlining uses most (plain numbers: ``bytes``; strings: ``vlen-utf8``;
variable-length bytes: ``vlen-bytes``; optionally ``zstd``) take a direct path with the very
numcodecs objects zarr-python uses, so the bytes are the same, faster: going through a zarr
Array costs milliseconds per dataset (metadata parsing, an event loop round trip), which is most
of the time generation spends on an NWB file's thousands of small datasets (tests compare the
two on random arrays). Zero-dimensional ``vlen-bytes`` arrays must go the direct way:
zarr-python 3 cannot write them (numcodecs is handed the array instead of its item).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr
from numcodecs.vlen import VLenBytes, VLenUTF8
from numcodecs.zstd import Zstd
from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_spec.metadata import VLEN_BYTES, array_metadata, default_codecs, zarr_data_type
from zarr.core.buffer import Buffer, cpu
from zarr.storage import MemoryStore

__all__ = [
    "ZSTD_CODEC",
    "ZSTD_THRESHOLD",
    "MemoryArray",
    "chunk_region",
    "encode_chunks",
    "encode_directly",
    "encode_with_zarr",
    "held_inline",
    "literal_lzf",
    "lzf_literal_chunks",
    "memory_array_store",
    "string_codecs",
    "vlen_bytes_codecs",
]

ZSTD_THRESHOLD = 4096
"""An inline chunk of strings this large or larger is compressed with zstd."""
ZSTD_CODEC: dict[str, Any] = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}


def encode_chunks(
    values: Any,
    *,
    shape: Sequence[int] | None = None,
    data_type: Any,
    chunk_shape: Sequence[int],
    codecs: list[dict[str, Any]],
    fill_value: Any,
    regions: Iterable[tuple[int, ...]] | None = None,
) -> dict[tuple[int, ...], bytes]:
    """Chunk coordinates → encoded bytes of ``values`` (an array of the full shape).

    With ``regions`` only those chunks are encoded, and ``values`` may be anything sliceable
    that spans the whole array (an h5py dataset, read one chunk at a time); ``shape`` then
    gives the array's shape. Chunks equal to the fill value are encoded too.
    """
    shape = tuple(values.shape if shape is None else shape)
    if isinstance(values, np.ndarray) and values.shape == shape:
        direct = encode_directly(
            values,
            data_type=data_type,
            chunk_shape=chunk_shape,
            codecs=codecs,
            fill_value=fill_value,
            regions=_all_chunks(shape, chunk_shape) if regions is None else regions,
        )
        if direct is not None:
            return direct
    return encode_with_zarr(
        values,
        shape=shape,
        data_type=data_type,
        chunk_shape=chunk_shape,
        codecs=codecs,
        fill_value=fill_value,
        regions=regions,
    )


def encode_with_zarr(
    values: Any,
    *,
    shape: tuple[int, ...],
    data_type: Any,
    chunk_shape: Sequence[int],
    codecs: list[dict[str, Any]],
    fill_value: Any,
    regions: Iterable[tuple[int, ...]] | None = None,
) -> dict[tuple[int, ...], bytes]:
    """:func:`encode_chunks` by writing a zarr Array in memory: any codec chain zarr knows."""
    slabs = None if regions is None else [chunk_region(c, chunk_shape, shape) for c in regions]
    store = memory_array_store(
        MemoryArray(shape, data_type, tuple(chunk_shape), codecs, fill_value)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's "unstable data type" notes for raw bytes
        # The array's config is fixed when it is opened: chunks equal to the fill value are kept.
        array = zarr.open_array(
            store, mode="r+", zarr_format=3, config={"write_empty_chunks": True}
        )
        if slabs is None:
            if len(shape) == 0:
                array[()] = values
            else:
                array[...] = values
        else:
            for region in slabs:
                array[region] = np.asarray(values[region])
    out: dict[tuple[int, ...], bytes] = {}
    for key, buffer in store._store_dict.items():
        if key == "zarr.json":
            continue
        parts = key.split("/")[1:]
        out[tuple(int(p) for p in parts)] = buffer.to_bytes()
    return out


def _all_chunks(shape: tuple[int, ...], chunk_shape: Sequence[int]) -> list[tuple[int, ...]]:
    grid = [-(-s // c) if c else 0 for s, c in zip(shape, chunk_shape, strict=True)]
    return list(itertools.product(*(range(n) for n in grid)))


def string_codecs(values: np.ndarray, chunk_shape: Sequence[int]) -> list[dict[str, Any]]:
    """vlen-utf8, plus zstd when an encoded chunk would be ``ZSTD_THRESHOLD`` bytes or more."""
    plain = default_codecs("string")
    per_chunk = math.prod(chunk_shape) if chunk_shape else 1
    # vlen-utf8 stores a 4-byte count, then a 4-byte length and the UTF-8 bytes of each item.
    largest = 0
    flat = values.ravel()
    step = max(1, per_chunk)
    for start in range(0, max(1, flat.size), step):
        part = flat[start : start + step]
        size = 4 + sum(4 + len(str(v).encode("utf-8", "surrogatepass")) for v in part)
        largest = max(largest, size)
        if largest >= ZSTD_THRESHOLD:
            return [*plain, ZSTD_CODEC]
    return plain


def vlen_bytes_codecs(values: np.ndarray, chunk_shape: Sequence[int]) -> list[dict[str, Any]]:
    """vlen-bytes, plus zstd when an encoded chunk would be ``ZSTD_THRESHOLD`` bytes or more."""
    plain = default_codecs(VLEN_BYTES)
    per_chunk = max(1, math.prod(chunk_shape) if chunk_shape else 1)
    flat = values.ravel()
    for start in range(0, max(1, flat.size), per_chunk):
        part = flat[start : start + per_chunk]
        if 4 + sum(4 + len(v) for v in part) >= ZSTD_THRESHOLD:
            return [*plain, ZSTD_CODEC]
    return plain


def held_inline(
    values: Any,
    *,
    shape: tuple[int, ...],
    data_type: Any,
    chunk_shape: tuple[int, ...],
    codecs: Sequence[dict[str, Any]],
    fill_value: Any,
) -> dict[tuple[int, ...], bytes]:
    """Every chunk of ``values`` (of ``shape``), encoded to be held in the references."""
    if math.prod(shape) == 0:
        return {}
    return encode_chunks(
        np.asarray(values).reshape(shape),
        data_type=data_type,
        chunk_shape=chunk_shape,
        codecs=list(codecs),
        fill_value=fill_value,
    )


_LITERAL_RUN = 32  # an LZF control byte below 32 copies (byte + 1) literal bytes


def literal_lzf(data: bytes) -> bytes:
    """``data`` as an LZF stream of literal runs (decodes to ``data`` with any LZF decoder)."""
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(view), _LITERAL_RUN):
        block = view[start : start + _LITERAL_RUN]
        out.append(len(block) - 1)
        out += block
    return bytes(out)


def lzf_literal_chunks(
    values: Any,
    regions: list[tuple[int, ...]],
    shape: tuple[int, ...],
    data_type: Any,
    chunk_shape: tuple[int, ...],
    codecs: list[dict[str, Any]],
    fill_value: Any,
) -> dict[tuple[int, ...], bytes]:
    """Chunks of an LZF array (``values``: anything sliceable) re-encoded as literal LZF;
    chunks of only fill value left out."""
    fill = np.asarray(
        fill_value if fill_value is not None else np.zeros((), dtype=data_type), dtype=data_type
    )
    kept = [
        coords
        for coords in regions
        if not _only_fill(np.asarray(values[chunk_region(coords, chunk_shape, shape)]), fill)
    ]
    encoded = encode_chunks(
        values, shape=shape, data_type=data_type, chunk_shape=chunk_shape,
        codecs=codecs[:-1], fill_value=fill_value, regions=kept,
    )  # fmt: skip
    return {c: literal_lzf(data) for c, data in encoded.items()}


def _only_fill(block: np.ndarray, fill: np.ndarray) -> bool:
    if block.dtype.kind == "V" or fill.dtype.kind == "V":
        # records: h5py reads them structured, the array's type is raw bytes; compare bytes
        whole = np.ascontiguousarray(block)
        return (
            whole.dtype.itemsize == fill.itemsize and whole.tobytes() == fill.tobytes() * whole.size
        )
    same = block == fill
    if block.dtype.kind in "fc":
        same |= np.isnan(block) & np.isnan(fill)
    return bool(np.all(same))


def chunk_region(
    coords: Sequence[int], chunk_shape: Sequence[int], shape: tuple[int, ...]
) -> tuple[slice, ...]:
    """The part of an array of ``shape`` that the chunk at ``coords`` covers."""
    return tuple(
        slice(c * n, min((c + 1) * n, s))
        for c, n, s in zip(coords, chunk_shape, shape, strict=True)
    )


@dataclass(frozen=True, slots=True)
class MemoryArray:
    """The metadata of one array as the references describe it, for zarr-python in memory."""

    shape: tuple[int, ...]
    data_type: Any
    chunk_shape: tuple[int, ...]
    codecs: Sequence[dict[str, Any]]
    fill_value: Any


def memory_array_store(array: MemoryArray, chunks: dict[str, bytes] | None = None) -> MemoryStore:
    """An in-memory Zarr store holding ``array`` with the metadata the references describe
    (and optionally some encoded chunks), for zarr-python to encode or decode exactly as readers
    of the references will."""
    json_type, json_fill = zarr_data_type(array.data_type, array.fill_value)
    document = array_metadata(
        shape=array.shape,
        data_type=json_type,
        chunk_shape=array.chunk_shape,
        fill_value=json_fill,
        codecs=list(array.codecs),
        attributes={},
        dimension_names=None,
    )
    contents: dict[str, Buffer] = {
        "zarr.json": cpu.Buffer.from_bytes(dumps_strict(document).encode())
    }
    for key, data in (chunks or {}).items():
        contents[key] = cpu.Buffer.from_bytes(data)
    return MemoryStore(contents)


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
