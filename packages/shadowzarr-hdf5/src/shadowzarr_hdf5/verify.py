"""Decode one stored chunk through the Zarr codecs and compare it with h5py's read.

Used for codecs outside zarr-python's own set (imagecodecs), whose handling of HDF5's framing
varies by data type: a chunk that does not decode to h5py's values means the array is refused
rather than misread.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import h5py
import numpy as np
import zarr
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_spec.metadata import array_metadata, zarr_data_type
from zarr.core.buffer import cpu
from zarr.storage import MemoryStore

__all__ = ["needs_verification", "verify_chunk"]


def needs_verification(codecs: list[dict[str, Any]]) -> bool:
    return any(str(c.get("name", "")).startswith("imagecodecs_") for c in codecs)


def verify_chunk(
    dataset: h5py.Dataset,
    path: str,
    *,
    read_bytes: Callable[[int, int], bytes],
    coords: Sequence[int],
    offset: int,
    size: int,
    data_type: np.dtype,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    codecs: list[dict[str, Any]],
) -> None:
    """Raise UnsupportedFeatureError when the chunk at ``coords`` decodes to other values."""
    json_type, json_fill = zarr_data_type(data_type, None)
    document = array_metadata(
        shape=shape,
        data_type=json_type,
        chunk_shape=chunk_shape,
        fill_value=json_fill,
        codecs=codecs,
        attributes={},
        dimension_names=None,
    )
    key = "c/" + "/".join(str(int(c)) for c in coords)
    store = MemoryStore(
        {
            "zarr.json": cpu.Buffer.from_bytes(dumps_strict(document).encode()),
            key: cpu.Buffer.from_bytes(read_bytes(offset, size)),
        }
    )
    region = tuple(
        slice(c * n, min((c + 1) * n, s))
        for c, n, s in zip(coords, chunk_shape, shape, strict=True)
    )
    own = region[: dataset.ndim]
    expected = np.asarray(dataset[own] if own else dataset[()])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = zarr.open_array(store, mode="r", zarr_format=3)[region]
    except Exception as exc:
        raise UnsupportedFeatureError(
            f"dataset {path!r}: the codecs {[c['name'] for c in codecs]} fail on its chunks: {exc}"
        ) from exc
    if expected.tobytes() != np.asarray(actual).astype(expected.dtype).tobytes():
        raise UnsupportedFeatureError(
            f"dataset {path!r}: the codecs {[c['name'] for c in codecs]} decode its chunks to "
            "other values than HDF5's filters"
        )
