"""Attributes as the xarray engine hands them to xarray: what netCDF4-python would give.

The references' attributes follow the attribute conventions (spec README): NaN as ``"NaN"``,
bytes as ``"base64:…"``, numbers' types under ``_ATTRIBUTE_TYPES``. xarray's own Zarr backend
knows none of them, so a float32 ``scale_factor`` would decode its variable as float64 and NaN
would stay a string. Here the conventions are decoded first (`decode_attributes`), then shaped
as the netCDF readers shape them: an array of one element is that element (a numpy scalar of
its type), ``_FillValue`` is written the way xarray's Zarr backend decodes it, and an enum's
``_ENUM`` (and the enum type's name, ``_ENUM_NAME``) leave the attributes (xarray's netCDF
backends keep them in the encoding).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from shadowzarr_spec import decode_attributes

__all__ = ["ENUM_ATTR", "ENUM_NAME_ATTR", "XarrayAttributes", "xarray_attributes"]

ENUM_ATTR = "_ENUM"
ENUM_NAME_ATTR = "_ENUM_NAME"
FILL_ATTR = "_FillValue"


@dataclass(frozen=True, slots=True)
class XarrayAttributes:
    attributes: dict[str, Any]
    enum: dict[str, int] | None
    """An enum's names → values (None: not an enum)."""
    enum_name: str | None = None
    """The enum type's name, where the file names it (netCDF-4 does)."""


def xarray_attributes(stored: Mapping[str, Any], dtype: Any = None) -> XarrayAttributes:
    """The attributes of a group (``dtype`` None) or of an array of numpy type ``dtype``."""
    raw_fill = stored.get(FILL_ATTR)
    decoded = decode_attributes(stored)
    enum = decoded.pop(ENUM_ATTR, None) if dtype is not None else None
    enum_name = decoded.pop(ENUM_NAME_ATTR, None) if enum is not None else None
    out = {key: _netcdf_value(value) for key, value in decoded.items()}
    if dtype is not None and FILL_ATTR in out:
        out[FILL_ATTR] = _zarr_backend_fill(raw_fill, out[FILL_ATTR], np.dtype(dtype))
    mapping = (
        {str(k): int(v) for k, v in enum.items()}
        if isinstance(enum, dict) and all(isinstance(v, int) for v in enum.values())
        else None
    )
    named = enum_name if mapping is not None and isinstance(enum_name, str) else None
    return XarrayAttributes(out, mapping, named)


def _netcdf_value(value: Any) -> Any:
    """An array (or list) of one number or string as that element, and a list of numbers as a
    numpy array (float64 or int64: other types are recorded under ``_ATTRIBUTE_TYPES``), as
    netCDF readers give them."""
    if isinstance(value, np.ndarray) and value.shape == (1,):
        return value[0]
    if isinstance(value, list) and len(value) == 1 and not isinstance(value[0], list | dict):
        return value[0]
    if isinstance(value, list) and value and all(_is_number(v) for v in value):
        kind = np.float64 if any(isinstance(v, float) for v in value) else np.int64
        try:
            return np.asarray(value, dtype=kind)
        except OverflowError:  # an integer beyond int64: left as JSON gave it
            return value
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _zarr_backend_fill(raw: Any, value: Any, dtype: np.dtype) -> Any:
    """``_FillValue`` as xarray's Zarr backend decodes it: floats as the base64 of a
    little-endian double, integers as integers, booleans as booleans. A value already in that
    form (the netCDF generator stores it so) is kept."""
    if isinstance(raw, str) or dtype.kind not in "biuf":
        return raw
    number = np.asarray(value).reshape(-1)
    if number.size != 1:
        return raw  # not one number: xarray reports it as it would for any Zarr store
    item = number[0].item()
    if dtype.kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(item))).decode()
    if dtype.kind == "b":
        return bool(item)
    return int(item)
