"""netCDF-4 files (HDF5 written by netCDF or h5netcdf) as xarray reads Zarr v3.

netCDF keeps its bookkeeping in HDF5 attributes (``_Netcdf4Dimid``, ``_NCProperties``, dimension
scale ``CLASS``/``NAME``) and stores dimensions without a variable as placeholder datasets; none
of that is data, and xarray would show it as variables. ``_FillValue`` is stored the way xarray's
Zarr backend reads it (floats as base64 of a little-endian double).

netCDF stores every attribute as a one-dimensional array, and netCDF readers (netCDF4-python,
h5netcdf, so xarray) hand an array of one element over as that element: ``scale_factor`` is
0.5, not [0.5]. The references do the same, so ``xr.open_zarr`` decodes as ``xr.open_dataset``
does. Only netCDF-4 files get this: h5py (and HDMF, for NWB) keep one-element arrays as arrays.
"""

from __future__ import annotations

import base64
import itertools
import struct
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec.attribute_conventions import ATTRIBUTE_TYPES_KEY

__all__ = [
    "is_netcdf4",
    "is_netcdf_char",
    "is_placeholder_dimension",
    "netcdf_attributes",
    "xarray_fill_value",
]

_BOOKKEEPING = frozenset(
    {"_Netcdf4Dimid", "_Netcdf4Coordinates", "_NCProperties", "_nc3_strict", "CLASS", "NAME"}
)
_PLACEHOLDER = "This is a netCDF dimension but not a netCDF variable"


def is_netcdf4(file: h5py.File) -> bool:
    """Written by netCDF-4 (or h5netcdf): ``_NCProperties`` on the root, or, for netCDF-C
    before 4.4.1 (which wrote no ``_NCProperties``), netCDF's bookkeeping attributes on the
    root group's first datasets."""
    if "_NCProperties" in file.attrs or "_nc3_strict" in file.attrs:
        return True
    for name in itertools.islice(file.id.__iter__(), _NETCDF_SCAN):
        if file.id.links.get_info(name).type != h5py.h5l.TYPE_HARD:
            continue
        if h5py.h5g.get_objinfo(file.id, name).type != h5py.h5g.DATASET:
            continue  # (nothing opened in h5py: the header reader may answer for the rest)
        if any(h5py.h5a.exists(file.id, mark, obj_name=name) for mark in _NETCDF_MARKS):
            return True
    return False


_NETCDF_SCAN = 32
"""Root members looked at for netCDF's marks: a netCDF file's dimensions and variables all
carry them, so a few suffice."""
_NETCDF_MARKS = (b"_Netcdf4Dimid", b"_Netcdf4Coordinates")


def is_netcdf_char(dtype: np.dtype) -> bool:
    """netCDF ``char`` (one-byte fixed strings): kept as bytes, which xarray joins into strings
    along the last dimension as it does reading the file."""
    return dtype.kind == "S" and dtype.itemsize == 1 and dtype.names is None


def is_placeholder_dimension(dataset: h5py.Dataset) -> bool:
    name = dataset.attrs.get("NAME")
    if isinstance(name, bytes | np.bytes_):
        name = bytes(name).decode("utf-8", "replace")
    return isinstance(name, str) and name.startswith(_PLACEHOLDER)


def netcdf_attributes(attributes: dict[str, Any], dtype: np.dtype | None) -> dict[str, Any]:
    out = {k: _unwrapped(v) for k, v in attributes.items() if k not in _BOOKKEEPING}
    if "_FillValue" in out and dtype is not None:
        out["_FillValue"] = xarray_fill_value(out["_FillValue"], dtype)
        types = out.get(ATTRIBUTE_TYPES_KEY)
        if isinstance(types, dict):  # stored as xarray's Zarr backend reads it, not as a number
            out[ATTRIBUTE_TYPES_KEY] = {k: v for k, v in types.items() if k != "_FillValue"}
    return out


def _unwrapped(value: Any) -> Any:
    """A one-element list as its element (h5netcdf's and netCDF4-python's rule)."""
    if isinstance(value, list) and len(value) == 1 and not isinstance(value[0], list):
        return value[0]
    return value


def xarray_fill_value(value: Any, dtype: np.dtype) -> Any:
    """``_FillValue`` as xarray's Zarr backend decodes it for an array of ``dtype``."""
    if dtype.kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
    if dtype.kind in "iu":
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    return value
