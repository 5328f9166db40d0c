"""What a dataset's array says besides its storage: its type plan, attributes and dimension
names."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.nwb_convention import REFERENCE_FIELDS_ATTR

from ..attributes import attribute_names, read_attributes
from ..context import Source
from ..header_reader.dataset import HeaderDataset
from ..netcdf import is_netcdf_char, netcdf_attributes
from .types import TypeKind, TypePlan, plan_type

__all__ = ["Description", "describe_dataset", "dimension_names"]


DTYPE_ATTR = "_DTYPE"

ENUM_ATTR = "_ENUM"
ENUM_NAME_ATTR = "_ENUM_NAME"


@dataclass(frozen=True, slots=True)
class Description:
    """What a dataset's array says besides its storage."""

    type: TypePlan
    attributes: dict[str, Any]
    names: tuple[str | None, ...] | None
    """Dimension names of the dataset's own axes (array-type axes have none)."""


def describe_dataset(
    dataset: h5py.Dataset | HeaderDataset, path: str, source: Source
) -> Description:
    """The type plan, the attributes and the dimension names of a dataset's array."""
    if isinstance(dataset, HeaderDataset):
        stored_names, attributes = dataset.attribute_names, dict(dataset.attributes)
    else:
        stored_names = attribute_names(dataset)
        attributes = read_attributes(dataset, source.paths, stored_names)
    plan = plan_type(_numpy_type(dataset, path), path)
    if source.netcdf and is_netcdf_char(dataset.dtype):
        plan = TypePlan(TypeKind.STORED, np.dtype("S1"), (), None)
    if source.netcdf:
        attributes = netcdf_attributes(attributes, plan.storage if plan.stored else None)
    if plan.dtype_attr is not None and not source.netcdf:  # xarray would show it as metadata
        attributes[DTYPE_ATTR] = plan.dtype_attr
    if plan.reference_fields:
        attributes[REFERENCE_FIELDS_ATTR] = list(plan.reference_fields)
    if plan.enum is not None:
        attributes[ENUM_ATTR] = plan.enum
        native = not isinstance(dataset, HeaderDataset)
        name = _enum_name(dataset) if source.netcdf and native else None
        if name is not None:
            attributes[ENUM_NAME_ATTR] = name
    attributes.update(plan.attributes)
    names = dimension_names(dataset, stored_names)
    return Description(plan, attributes, None if names is None else tuple(names))


def _numpy_type(dataset: h5py.Dataset | HeaderDataset, path: str) -> np.dtype:
    try:
        return dataset.dtype
    except (ValueError, TypeError) as exc:  # no numpy type: IEEE quadruple, HDF5 time types
        raise UnsupportedFeatureError(
            f"dataset {path!r}: a data type numpy cannot represent ({exc})"
        ) from exc


def _enum_name(dataset: h5py.Dataset) -> str | None:
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


def dimension_names(
    dataset: h5py.Dataset, stored_names: list[bytes] | None = None
) -> list[str | None] | None:
    """Names from attached dimension scales (netCDF-4 dimensions) or dimension labels
    (``stored_names``: the dataset's attribute names, when the caller has them)."""
    keys = set(attribute_names(dataset) if stored_names is None else stored_names)
    if not keys & _DIMENSION_ATTRIBUTES or dataset.shape is None:
        return None
    if dataset.ndim == 0:
        return None
    names: list[str | None] = []
    is_scale = h5py.h5ds.is_scale(dataset.id)
    for axis, dim in enumerate(dataset.dims):
        if is_scale and axis == 0:
            names.append(posixpath.basename(dataset.name or ""))
        elif len(dim):
            names.append(posixpath.basename(dim[0].name or ""))
        else:
            names.append(dim.label or None)
    return names if any(n is not None for n in names) else None


_DIMENSION_ATTRIBUTES = frozenset({b"DIMENSION_LIST", b"DIMENSION_LABELS", b"CLASS"})
