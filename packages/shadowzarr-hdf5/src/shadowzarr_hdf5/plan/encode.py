"""Encode values into chunk bytes held in the references (strings, references, small data).

The bytes come from zarr-python itself, writing an array with the very metadata the references
describe into memory, so whatever reads the references decodes them the same way; the common
chains (plain numbers, strings) take a direct path that produces the same bytes faster.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import zarr
from shadowzarr_spec.metadata import VLEN_BYTES, default_codecs

from ..zarr_memory import chunk_region, memory_array_store
from .direct_encode import encode_directly

__all__ = [
    "ZSTD_CODEC",
    "ZSTD_THRESHOLD",
    "encode_chunks",
    "encode_with_zarr",
    "held_inline",
    "literal_lzf",
    "lzf_literal_chunks",
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
    store = memory_array_store(
        data_type=data_type,
        fill_value=fill_value,
        shape=shape,
        chunk_shape=chunk_shape,
        codecs=codecs,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's "unstable data type" notes for raw bytes
        # The array's config is fixed when it is opened: chunks equal to the fill value are kept.
        array = zarr.open_array(
            store, mode="r+", zarr_format=3, config={"write_empty_chunks": True}
        )
        if regions is None:
            if len(shape) == 0:
                array[()] = values
            else:
                array[...] = values
        else:
            for coords in regions:
                region = chunk_region(coords, chunk_shape, shape)
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
