"""netCDF-3 attributes as netCDF4-python (so xarray) hands them over.

``char`` attributes are text (UTF-8, undecodable bytes replaced, NULs dropped, as netCDF4-python
does); numeric ones are lists, and one value is a scalar, with their numpy type and shape (``[n]``,
``[1]`` for one value) under ``_ATTRIBUTE_TYPES``, as the netCDF-4 generator records them, so a
``short`` attribute reads back as int16 and not as JSON's int64. ``_FillValue`` is written the way
xarray's Zarr backend reads it (see :func:`shadowzarr_hdf5.netcdf.xarray_fill_value`), except
on ``char`` variables, where only the array's fill value holds it.
"""

from __future__ import annotations

from typing import Any

from shadowzarr_spec.attribute_conventions import ATTRIBUTE_TYPES_KEY, attribute_type

from ..netcdf import xarray_fill_value
from .header import NcAttribute
from .nc_types import NC_CHAR, NcType

__all__ = ["FILL_VALUE", "attribute_values", "variable_fill"]

FILL_VALUE = "_FillValue"


def attribute_values(
    attributes: dict[str, NcAttribute], kind: NcType | None = None
) -> dict[str, Any]:
    """Plain values of a node's attributes; ``kind``: the variable's type (None for the root).
    A ``_FillValue`` of another type than the variable's is kept as it is."""
    out = {name: _plain(attribute) for name, attribute in attributes.items()}
    types = {
        name: recorded
        for name, attribute in attributes.items()
        if name != FILL_VALUE and (recorded := attribute_type(attribute.values)) is not None
    }
    if types:  # the builder keeps only those JSON would lose
        out[ATTRIBUTE_TYPES_KEY] = types
    if kind is not None and kind.code == NC_CHAR:
        # xarray's Zarr backend cannot decode a bytes _FillValue (it raises): the array's fill
        # value keeps it, and xarray shows the fill characters instead of masking them.
        out.pop(FILL_VALUE, None)
    elif kind is not None:
        fill, stored = variable_fill(attributes, kind)
        if stored:
            out[FILL_VALUE] = xarray_fill_value(fill, kind.dtype)
    return out


def variable_fill(attributes: dict[str, NcAttribute], kind: NcType) -> tuple[Any, bool]:
    """``(fill, from_attribute)``: the first value of ``_FillValue`` when it has the variable's
    type (netCDF requires it to), else netCDF's default fill for the type."""
    attribute = attributes.get(FILL_VALUE)
    if attribute is None or attribute.type != kind or not len(attribute.values):
        return kind.default_fill, False
    values = attribute.values
    if isinstance(values, bytes):
        return values[:1], True
    return values[0].item(), True


def _plain(attribute: NcAttribute) -> Any:
    values = attribute.values
    if isinstance(values, bytes):
        return values.decode("utf-8", "replace").replace("\x00", "")
    items = values.tolist()
    return items[0] if len(items) == 1 else items
