"""Decode one stored chunk through the Zarr codecs and compare it with h5py's read.

Used for codecs outside zarr-python's own set (imagecodecs), whose handling of HDF5's framing
varies by data type: a chunk that does not decode to h5py's values means the array is refused
rather than misread.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import h5py
import numpy as np
import zarr
from shadowzarr_spec import SourceError, UnsupportedFeatureError

from ..native_decode import load_filter_plugins
from ..zarr_memory import chunk_region, memory_array_store

__all__ = ["needs_verification", "verify_chunk"]

logger = logging.getLogger(__name__)


def needs_verification(codecs: list[dict[str, Any]]) -> bool:
    return any(str(c.get("name", "")).startswith(_CHECKED) for c in codecs)


_CHECKED = ("imagecodecs_", "shadowzarr.")


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
    key = "c/" + "/".join(str(int(c)) for c in coords)
    store = memory_array_store(
        data_type=data_type,
        fill_value=None,
        shape=shape,
        chunk_shape=chunk_shape,
        codecs=codecs,
        chunks={key: read_bytes(offset, size)},
    )
    region = chunk_region(coords, chunk_shape, shape)
    own = region[: dataset.ndim]
    load_filter_plugins()
    try:
        expected = np.asarray(dataset[own] if own else dataset[()])
    except SourceError:
        raise
    except OSError:
        # HDF5 has no plugin for a filter here, so nothing to compare with: the codecs are
        # the ones the test suite checks against the filters' own plugins.
        logger.info("%s: not verified, HDF5 cannot decode its chunks here", path)
        return
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
