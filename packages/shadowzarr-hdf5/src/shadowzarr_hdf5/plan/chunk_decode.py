"""Stored chunks decoded in memory through the codecs the references name, before anything is
written: the values of small filtered datasets, and a check that refuses an array rather than
let it be misread.

Small datasets are inlined as plain values. Reading them through h5py needs every filter's HDF5
plugin loaded in this process; the Zarr codecs that the references name for those filters read
the same chunk bytes without any plugin, so the inlined values are what a reader of the
references would get. Codecs outside zarr-python's own set (imagecodecs) handle HDF5's framing
differently by data type: the first chunk they read is compared with h5py's values.
"""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any

import h5py
import numpy as np
import zarr
from shadowzarr_spec import SourceError, UnsupportedFeatureError
from shadowzarr_spec.keys import chunk_key

from ..context import ChunkLocations, Source
from ..header_reader.dataset import HeaderDataset
from ..native_decode import decoded_values, load_filter_plugins
from .encode import chunk_region, memory_array_store
from .filters import FilterSpec, codecs_for

__all__ = ["small_filtered_values", "verify_first_chunk"]

logger = logging.getLogger(__name__)


def small_filtered_values(
    dataset: h5py.Dataset | HeaderDataset,
    path: str,
    source: Source,
    filters: tuple[FilterSpec, ...],
    locations: ChunkLocations,
    *,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    data_type: np.dtype,
    fill_value: Any,
) -> Any:
    """The values of a small filtered dataset (its stored chunks at ``locations``), decoded by
    the codecs its references would use, else by HDF5 with hdf5plugin's filters (never h5py's
    "can't open directory" error)."""
    read_bytes = source.read_bytes
    values: np.ndarray | None = None
    extra = (0,) * (len(shape) - locations.coords.shape[1])
    grid = [math.ceil(s / c) for s, c in zip(shape, chunk_shape, strict=True)]
    try:
        # Chunks that skipped a filter (HDF5's filter mask) decode with that filter left out.
        for mask in np.unique(locations.masks).tolist() or [0]:
            codecs = codecs_for(filters, data_type, path, skip_mask=int(mask))
            if read_bytes is None:
                break
            chosen = locations.masks == mask
            stored: dict[str, bytes] = {}
            for coords, offset, size in zip(
                locations.coords[chosen].tolist(), locations.offsets[chosen].tolist(),
                locations.sizes[chosen].tolist(), strict=True,
            ):  # fmt: skip
                full = (*coords, *extra)
                if any(c >= g for c, g in zip(full, grid, strict=True)):
                    continue  # a chunk of a shrunk dataset, outside the current extent
                stored[chunk_key("", full)] = read_bytes(int(offset), int(size))
            store = memory_array_store(
                data_type=data_type, fill_value=fill_value, shape=shape,
                chunk_shape=chunk_shape, codecs=codecs, chunks=stored,
            )  # fmt: skip
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # zarr's notes on unstable data types
                part = np.asarray(zarr.open_array(store, mode="r", zarr_format=3)[...])
            if values is None:
                values = part
                continue
            for coords in locations.coords[chosen].tolist():
                region = chunk_region((*coords, *extra), chunk_shape, shape)
                values[region] = part[region]
        else:
            return values
    except SourceError:
        raise  # the source could not be read: not a property of the dataset
    except Exception:  # any codec's failure (zlib.error, ...): HDF5 decides
        pass  # no codec reads these chunks here: HDF5 decodes them (or says it cannot)
    opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
    return decoded_values(opened, path, filters)


_CHECKED = ("imagecodecs_", "shadowzarr.")


def verify_first_chunk(
    dataset: h5py.Dataset,
    path: str,
    source: Source,
    locations: ChunkLocations,
    mask: int,
    rewrite: np.ndarray | None,
    dtype: np.dtype,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    codecs: list[dict[str, Any]],
) -> None:
    """Raise UnsupportedFeatureError when the first chunk the codecs read (its filter mask is
    ``mask``, and it is not among the LZF chunks to ``rewrite``) decodes to other values than
    h5py reads; nothing to do for zarr-python's own codecs, or without a byte reader."""
    if not any(str(c.get("name", "")).startswith(_CHECKED) for c in codecs):
        return
    read_bytes = source.read_bytes
    if read_bytes is None:
        return
    readable = locations.masks == mask
    if rewrite is not None:
        readable &= ~rewrite
    usable = np.flatnonzero(readable)
    if not usable.size:
        return
    i = int(usable[0])
    extra = (0,) * (len(shape) - dataset.ndim)
    coords = (*locations.coords[i].tolist(), *extra)
    key = "c/" + "/".join(str(int(c)) for c in coords)
    store = memory_array_store(
        data_type=dtype,
        fill_value=None,
        shape=shape,
        chunk_shape=chunk_shape,
        codecs=codecs,
        chunks={key: read_bytes(int(locations.offsets[i]), int(locations.sizes[i]))},
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
