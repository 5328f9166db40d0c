"""netCDF-4 files (HDF5 written by netCDF or h5netcdf) as xarray reads Zarr v3.

netCDF keeps its bookkeeping in HDF5 attributes (``_Netcdf4Dimid``, ``_NCProperties``, dimension
scale ``CLASS``/``NAME``) and stores dimensions without a variable as placeholder datasets; none
of that is data, and xarray would show it as variables. ``_FillValue`` is stored the way xarray's
Zarr backend reads it (floats as base64 of a little-endian double).

netCDF stores every attribute as a one-dimensional array, and netCDF readers (netCDF4-python,
h5netcdf, so xarray) hand an array of one element over as that element: ``scale_factor`` is
0.5, not [0.5]. The references do the same, so ``xr.open_zarr`` decodes as ``xr.open_dataset``
does. Only netCDF-4 files get this: h5py (and HDMF, for NWB) keep one-element arrays as arrays.

Unlimited dimensions: netCDF-C and h5netcdf give a variable on an unlimited dimension the
dimension's length (the longest extent of any variable on it), reading the rows beyond the
variable's own HDF5 extent as its fill value; HDF5 only extends each dataset as far as it was
written. The references give such a variable the dimension's length too (so xarray finds one
size per dimension): chunks past the HDF5 extent are not stored and read as the fill value, and
a chunk that straddles the extent is checked to hold the fill value past it (HDF5 initialises
new chunks with it; :func:`.plan.chunks.stored_chunks`).

Dimension scales reached by several links: netCDF-C names a dimension after the link it meets
last, in its group's link order, among the links (hard or soft) that reach the scale, and every
one of those links is a variable on that dimension (kerchunk's ``air_linked.nc``: ``lat`` and
``lat_hard`` are one object, and the dimension is ``lat_hard``). The references name it so too.
"""

from __future__ import annotations

import base64
import itertools
import posixpath
import struct
from collections.abc import Iterable
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec.attribute_conventions import ATTRIBUTE_TYPES_KEY

from .context import Source
from .object_paths import object_address, objno_address

__all__ = [
    "is_netcdf4",
    "is_netcdf_char",
    "is_placeholder_dimension",
    "netcdf_attributes",
    "netcdf_dimension_names",
    "netcdf_enum_name",
    "netcdf_shape",
    "unlimited_lengths",
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


def netcdf_enum_name(dataset: h5py.Dataset) -> str | None:
    """The name netCDF readers give a dataset's enum type (``enum_name``): netCDF-4 commits
    every enum type in a group and gives its variables a copy, so the name is that of the
    first equal committed type in the dataset's group or one above it, as netCDF-C finds it.
    None where no committed type is equal (h5py's own enums)."""
    try:
        kind = dataset.id.get_type()
        group = dataset.parent
        while True:
            for name in group:
                if group.get(name, getclass=True, getlink=True) is not h5py.HardLink:
                    continue
                if group.get(name, getclass=True) is h5py.Datatype and group[name].id == kind:
                    return str(name)
            if group.name == "/":
                return None
            group = group.parent
    except (OSError, ValueError, RuntimeError, KeyError):
        return None


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


def netcdf_dimension_names(file: h5py.File, datasets: Iterable[Any]) -> dict[int, str]:
    """Dimension scale address → the name netCDF-C gives its dimension, where that is not the
    scale's own name: the last link of the scale's group, in the group's link order (creation
    order where the group tracks it, as netCDF-C and h5py iterate), that reaches it."""
    scales: dict[int, str] = {}
    for dataset in datasets:
        opened = dataset.h5py() if hasattr(dataset, "h5py") else dataset
        try:
            if h5py.h5ds.is_scale(opened.id):
                scales[object_address(opened)] = posixpath.dirname(opened.name or "/") or "/"
        except (OSError, ValueError, RuntimeError, KeyError, TypeError):
            continue
    names: dict[int, str] = {}
    for group_path in sorted(set(scales.values())):
        try:
            group = file[group_path]
            members = list(group)
        except (OSError, ValueError, RuntimeError, KeyError, TypeError):
            continue
        for name in members:
            try:
                link = group.get(name, getlink=True)
                if not isinstance(link, h5py.HardLink | h5py.SoftLink):
                    continue
                # the object the link reaches (a soft link followed), without opening it
                info = h5py.h5g.get_objinfo(group.id, name.encode())
            except (OSError, ValueError, RuntimeError, KeyError, TypeError):
                continue  # a dangling soft link, an object HDF5 cannot open
            address = objno_address(info.objno)
            if info.type == h5py.h5g.DATASET and scales.get(address) == group_path:
                names[address] = name
    return names


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
