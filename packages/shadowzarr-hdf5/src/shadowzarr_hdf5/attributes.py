"""HDF5 attributes → JSON values, following the unified convention.

References become ``{"_REFERENCE": {"source": ".", "path": ...}}``; bytes that are not UTF-8
and opaque values stay bytes (RfsBuilder.build stores them with the Bytes convention); NaN and
infinities stay floats (stored with the Non-Finite convention); a null dataspace becomes None;
compounds become objects keyed by field; complex numbers stay complex (stored with the Complex
convention as ``"complex:<real>,<imag>"``). Every number's numpy type and shape go under
``_ATTRIBUTE_TYPES``; the builder keeps those the JSON value loses (the Attribute Types
convention: a float32 ``scale_factor``, a one-element array).
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec.attribute_conventions import ATTRIBUTE_TYPES_KEY, attribute_type
from shadowzarr_spec.nwb_convention import SPECLOC_ATTR, reference_value
from shadowzarr_spec.region_references import REGION_REFERENCE_KEY

from .object_paths import ObjectPaths

__all__ = [
    "SKIPPED_ATTRIBUTES",
    "attribute_names",
    "bytes_or_text",
    "decoded_name",
    "dimension_names",
    "nested",
    "read_attributes",
]

logger = logging.getLogger(__name__)

SKIPPED_ATTRIBUTES = frozenset({"DIMENSION_LIST", "REFERENCE_LIST"})
"""Dimension-scale bookkeeping (references between datasets), expressed by dimension_names."""


def attribute_names(obj: h5py.HLObject) -> list[bytes]:
    """Attribute names as stored, in h5py's order (creation order when the object tracks it,
    else by name). One count and one iteration, not h5py's per-name generator."""
    oid = _holder(obj)
    count = h5py.h5a.get_num_attrs(oid)
    if not count:
        return []
    index = h5py.h5.INDEX_NAME
    if count > 1 and oid.get_create_plist().get_attr_creation_order() & _TRACKED:
        index = h5py.h5.INDEX_CRT_ORDER
    names: list[bytes] = []
    h5py.h5a.iterate(oid, lambda name, *_: names.append(name), index_type=index)
    return names


_TRACKED = h5py.h5p.CRT_ORDER_TRACKED


def _holder(obj: h5py.HLObject) -> Any:
    """The low-level id the attributes hang on (a file's are its root group's)."""
    return obj["/"].id if isinstance(obj, h5py.File) else obj.id


def read_attributes(
    obj: h5py.HLObject, paths: ObjectPaths, names: list[bytes] | None = None
) -> dict[str, Any]:
    """Every attribute of a group or dataset as JSON-ready values (``names``: from
    :func:`attribute_names`, when the caller already has them)."""
    oid = _holder(obj)
    out: dict[str, Any] = {}
    types: dict[str, Any] = {}
    for raw_name in attribute_names(obj) if names is None else names:
        name = decoded_name(raw_name)
        if name in SKIPPED_ATTRIBUTES:
            continue
        try:
            attr = h5py.h5a.open(oid, raw_name)
            shape, dtype = attr.shape, attr.dtype
            value = _object_reference_value(attr, shape, dtype, paths, name == SPECLOC_ATTR)
            if value is not _NOT_OBJECT_REFERENCES:
                out[name] = value
                continue
            value = _read_value(attr, shape, dtype)
        except (OSError, TypeError, ValueError) as exc:
            # h5py cannot read some types (e.g. vlen of compounds); keep the rest of the node.
            logger.warning("attribute %r of %s is not readable by h5py: %s", name, obj.name, exc)
            continue
        if name == SPECLOC_ATTR and isinstance(value, h5py.Reference):
            out[name] = paths(value).lstrip("/")
            continue
        out[name] = to_json(value, paths)
        typed = attribute_type(value)
        if typed is not None and isinstance(name, str):
            types[name] = typed
    return with_types(out, types)


def with_types(attributes: dict[str, Any], types: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` with the numbers' types under ``_ATTRIBUTE_TYPES`` (when there are any)."""
    if types:
        attributes[ATTRIBUTE_TYPES_KEY] = types
    return attributes


def decoded_name(name: bytes) -> Any:
    """The name as h5py gives it: UTF-8 text, or the bytes when they are not UTF-8."""
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError:
        return name


def _read_value(attr: Any, shape: tuple[int, ...] | None, dtype: np.dtype) -> Any:
    """What ``obj.attrs[name]`` returns, read through the low-level attribute."""
    if shape is None:  # a null dataspace
        return h5py.Empty(dtype)
    memory_type = h5py.h5t.py_create(dtype)
    if dtype.subdtype is not None:  # a top-level array type: numpy wants it as extra axes
        dtype, extra = dtype.subdtype
        shape = shape + extra
    array = np.zeros(shape, dtype=dtype)
    attr.read(array, mtype=memory_type)
    string = h5py.check_string_dtype(dtype)
    if string is not None and string.length is None:
        array = np.array(
            [b.decode("utf-8", "surrogateescape") for b in array.flat], dtype=dtype
        ).reshape(array.shape)
    return array[()] if array.ndim == 0 else array


_NOT_OBJECT_REFERENCES = object()


def _object_reference_value(
    attr: Any, shape: tuple[int, ...] | None, dtype: np.dtype, paths: ObjectPaths, specloc: bool
) -> Any:
    """An attribute of object references converted from the stored addresses (no object
    opened per reference); ``_NOT_OBJECT_REFERENCES`` for any other attribute, or when a
    target is not reachable by a hard link (h5py then resolves it)."""
    if dtype.kind != "O" or shape is None or h5py.check_ref_dtype(dtype) is not h5py.Reference:
        return _NOT_OBJECT_REFERENCES
    addresses = np.zeros(shape, dtype="<u8")
    try:
        attr.read(addresses, mtype=h5py.h5t.STD_REF_OBJ)
    except (OSError, TypeError, ValueError):  # e.g. a reference type HDF5 will not convert
        return _NOT_OBJECT_REFERENCES
    found = [paths.at_address(int(a)) for a in addresses.ravel()]
    if any(path is None for path in found):
        return _NOT_OBJECT_REFERENCES
    if specloc and not shape:
        return str(found[0]).lstrip("/")
    return nested([reference_value(str(path)) for path in found], shape)


def to_json(value: Any, paths: ObjectPaths) -> Any:
    """One h5py attribute value as a JSON-ready Python value."""
    if isinstance(value, h5py.Empty):
        return None
    if isinstance(value, h5py.RegionReference):
        return _region_value(value, paths)
    if isinstance(value, h5py.Reference):
        return reference_value(paths(value))
    if isinstance(value, np.ndarray):
        if value.dtype.names is not None:
            return (
                [_record(v, paths) for v in value.ravel()]
                if value.ndim
                else _record(value[()], paths)
            )
        if value.dtype.kind == "O":
            return nested([to_json(v, paths) for v in value.ravel()], value.shape)
        if value.dtype.kind == "c":
            return nested([complex(v) for v in value.ravel()], value.shape)
        if value.dtype.kind == "S":
            return nested([bytes_or_text(bytes(v)) for v in value.ravel()], value.shape)
        if value.dtype.kind == "V":
            return nested([bytes(v) for v in value.ravel()], value.shape)
        return value.tolist()
    if isinstance(value, np.void):
        if value.dtype.names is not None:
            return _record(value, paths)
        return bytes(value)
    if isinstance(value, bytes | np.bytes_):
        return bytes_or_text(bytes(value))
    if isinstance(value, complex | np.complexfloating):
        return complex(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _region_value(value: Any, paths: ObjectPaths) -> dict[str, Any]:
    """``{"_REGION_REFERENCE": {"source": ".", "path": ..., "selection": ...}}``."""
    from .region_references import region_reference

    found = region_reference(value, paths.file, paths)
    return {REGION_REFERENCE_KEY: {"source": ".", **found.to_json()}}


def _record(value: Any, paths: ObjectPaths) -> dict[str, Any]:
    return {name: to_json(value[name], paths) for name in value.dtype.names}


def bytes_or_text(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def nested(flat: list[Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [nested(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def dimension_names(
    dataset: h5py.Dataset,
    stored_names: list[bytes] | None = None,
    renamed: Callable[[h5py.Dataset], str | None] | None = None,
) -> list[str | None] | None:
    """Names from attached dimension scales (netCDF-4 dimensions) or dimension labels
    (``stored_names``: the dataset's attribute names, when the caller has them).
    ``renamed(scale)``: its dimension's name where that is not the scale's own name (a
    netCDF-4 dimension reached by several links: `Source.netcdf_dimension_of`), else None."""
    keys = set(attribute_names(dataset) if stored_names is None else stored_names)
    if not keys & _DIMENSION_ATTRIBUTES or dataset.shape is None:
        return None
    if dataset.ndim == 0:
        return None
    names: list[str | None] = []
    is_scale = h5py.h5ds.is_scale(dataset.id)
    for axis, dim in enumerate(dataset.dims):
        if is_scale and axis == 0:
            own = renamed(dataset) if renamed else None
            names.append(own or posixpath.basename(dataset.name or ""))
        elif len(dim):
            scale = dim[0]
            named = renamed(scale) if renamed else None
            names.append(named or posixpath.basename(scale.name or ""))
        else:
            names.append(dim.label or None)
    return names if any(n is not None for n in names) else None


_DIMENSION_ATTRIBUTES = frozenset({b"DIMENSION_LIST", b"DIMENSION_LABELS", b"CLASS"})
