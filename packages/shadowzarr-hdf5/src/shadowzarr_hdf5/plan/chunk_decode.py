"""Decode a small filtered dataset's stored chunks with the codecs its references would use.

Small datasets are inlined as plain values. Reading them through h5py needs every filter's HDF5
plugin loaded in this process; the Zarr codecs that the references name for those filters read
the same chunk bytes without any plugin, so the inlined values are what a reader of the
references would get.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import zarr
from shadowzarr_spec.keys import chunk_key

from ..context import ChunkLocations, Source
from ..zarr_memory import memory_array_store

__all__ = ["decode_stored_chunks"]


def decode_stored_chunks(
    source: Source,
    locations: ChunkLocations,
    *,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    data_type: np.dtype,
    codecs: list[dict[str, Any]],
    fill_value: Any,
) -> np.ndarray | None:
    """Every value of the array, decoded from its stored chunks; None when the chunks cannot
    be read here (no byte reader, or a chunk beyond the array)."""
    if source.read_bytes is None:
        return None
    extra = (0,) * (len(shape) - locations.coords.shape[1])
    grid = [math.ceil(s / c) for s, c in zip(shape, chunk_shape, strict=True)]
    stored: dict[str, bytes] = {}
    for coords, offset, size in zip(
        locations.coords.tolist(), locations.offsets.tolist(), locations.sizes.tolist(),
        strict=True,
    ):  # fmt: skip
        full = (*coords, *extra)
        if any(c >= g for c, g in zip(full, grid, strict=True)):
            continue  # a chunk of a shrunk dataset, outside the current extent
        stored[chunk_key("", full)] = source.read_bytes(int(offset), int(size))
    store = memory_array_store(
        data_type=data_type,
        fill_value=fill_value,
        shape=shape,
        chunk_shape=chunk_shape,
        codecs=codecs,
        chunks=stored,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's notes on unstable data types
        array = zarr.open_array(store, mode="r", zarr_format=3)
        return np.asarray(array[...])
