"""One array in zarr-python's memory store, with the very metadata the references describe, and
the region one chunk covers: what encoding inline chunks, decoding stored ones and checking a
first chunk share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_spec.metadata import array_metadata, zarr_data_type
from zarr.core.buffer import Buffer, cpu
from zarr.storage import MemoryStore

__all__ = ["chunk_region", "memory_array_store"]


def chunk_region(
    coords: Sequence[int], chunk_shape: Sequence[int], shape: tuple[int, ...]
) -> tuple[slice, ...]:
    """The part of an array of ``shape`` that the chunk at ``coords`` covers."""
    return tuple(
        slice(c * n, min((c + 1) * n, s))
        for c, n, s in zip(coords, chunk_shape, shape, strict=True)
    )


def memory_array_store(
    *,
    data_type: Any,
    fill_value: Any,
    shape: tuple[int, ...],
    chunk_shape: Sequence[int],
    codecs: list[dict[str, Any]],
    chunks: dict[str, bytes] | None = None,
) -> MemoryStore:
    """An in-memory Zarr store holding one array with the metadata the references describe
    (and optionally some encoded chunks), for zarr-python to encode or decode exactly as readers
    of the references will."""
    json_type, json_fill = zarr_data_type(data_type, fill_value)
    document = array_metadata(
        shape=shape,
        data_type=json_type,
        chunk_shape=chunk_shape,
        fill_value=json_fill,
        codecs=codecs,
        attributes={},
        dimension_names=None,
    )
    contents: dict[str, Buffer] = {
        "zarr.json": cpu.Buffer.from_bytes(dumps_strict(document).encode())
    }
    for key, data in (chunks or {}).items():
        contents[key] = cpu.Buffer.from_bytes(data)
    return MemoryStore(contents)
