"""netCDF-4 unlimited dimensions: every variable on one is as long as the dimension.

netCDF-C and h5netcdf give a variable on an unlimited dimension the dimension's length (the
longest extent of any variable on it), reading the rows beyond the variable's own HDF5 extent
as its fill value; HDF5 only extends each dataset as far as it was written. The references give
such a variable the dimension's length too (so xarray finds one size per dimension): chunks
past the HDF5 extent are not stored and read as the fill value, and a chunk that straddles the
extent is checked to hold the fill value past it (HDF5 initialises new chunks with it).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import h5py
import numpy as np
import zarr
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.keys import chunk_key

from .context import ChunkLocations, Source
from .object_paths import object_address
from .zarr_memory import chunk_region, memory_array_store

__all__ = ["check_padding", "netcdf_shape", "padded", "unlimited_lengths"]


def unlimited_lengths(datasets: Iterable[Any]) -> dict[int, int]:
    """Dimension scale address → the length of its (unlimited) dimension."""
    lengths: dict[int, int] = {}
    for dataset in datasets:
        maxshape = getattr(dataset, "maxshape", None) or ()
        if dataset.shape is None or None not in maxshape:
            continue
        opened = dataset.h5py() if hasattr(dataset, "h5py") else dataset
        if h5py.h5ds.is_scale(opened.id):
            address = object_address(opened)
            lengths[address] = max(lengths.get(address, 0), int(opened.shape[0]))
        for axis, limit in enumerate(maxshape):
            if limit is not None:
                continue
            for scale in opened.dims[axis].values():
                address = object_address(scale)
                lengths[address] = max(lengths.get(address, 0), int(opened.shape[axis]))
    return lengths


def netcdf_shape(dataset: Any, source: Source) -> tuple[int, ...]:
    """The variable's shape as netCDF readers give it."""
    shape = [int(n) for n in dataset.shape]
    maxshape = dataset.maxshape or ()
    if not source.netcdf_lengths or None not in maxshape:
        return tuple(shape)
    opened = dataset.h5py() if hasattr(dataset, "h5py") else dataset
    is_scale = h5py.h5ds.is_scale(opened.id)
    for axis, limit in enumerate(maxshape):
        if limit is not None:
            continue
        scales = [object_address(opened)] if is_scale and axis == 0 else []
        scales += [object_address(s) for s in opened.dims[axis].values()]
        for address in scales:
            shape[axis] = max(shape[axis], source.netcdf_lengths.get(address, 0))
    return tuple(shape)


def padded(values: np.ndarray, shape: tuple[int, ...], fill: Any) -> np.ndarray:
    """``values`` (the HDF5 extent) padded to ``shape`` with the fill value."""
    if values.shape == shape:
        return values
    out = np.full(shape, fill if fill is not None else np.zeros((), values.dtype)[()],
                  dtype=values.dtype)  # fmt: skip
    out[tuple(slice(0, n) for n in values.shape)] = values
    return out


def check_padding(
    path: str,
    source: Source,
    locations: ChunkLocations,
    *,
    extent: tuple[int, ...],
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    data_type: np.dtype,
    codecs: list[dict[str, Any]],
    fill_value: Any,
) -> None:
    """Raise when a chunk straddling the HDF5 extent holds anything but fill past it."""
    if extent == shape or source.read_bytes is None:
        return
    extra = (0,) * (len(shape) - locations.coords.shape[1])
    fill = np.asarray(fill_value if fill_value is not None else 0).astype(data_type)
    for coords, offset, size in zip(
        locations.coords.tolist(), locations.offsets.tolist(), locations.sizes.tolist(),
        strict=True,
    ):  # fmt: skip
        full = (*coords, *extra)
        region = chunk_region(full, chunk_shape, shape)
        if all(r.stop <= e for r, e in zip(region, extent, strict=True)):
            continue  # inside the extent
        if any(r.start >= e for r, e in zip(region, extent, strict=True)):
            continue  # wholly past it: not referenced (stale if stored)
        store = memory_array_store(
            data_type=data_type, fill_value=fill_value, shape=shape, chunk_shape=chunk_shape,
            codecs=codecs, chunks={chunk_key("", full): source.read_bytes(int(offset), int(size))},
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = np.asarray(zarr.open_array(store, mode="r", zarr_format=3)[region])
        inside = tuple(slice(0, max(0, e - r.start)) for r, e in zip(region, extent, strict=True))
        beyond = np.ones(values.shape, dtype=bool)
        beyond[inside] = False
        same = values[beyond] == fill
        if values.dtype.kind in "fc":
            same |= np.isnan(values[beyond]) & np.isnan(fill)
        if not np.all(same):
            raise UnsupportedFeatureError(
                f"dataset {path!r}: a chunk holds other values than the fill value past the "
                "HDF5 extent, where netCDF readers give the fill value"
            )
