"""HDF5 attributes → JSON values, following the unified convention.

References become ``{"_REFERENCE": {"source": ".", "path": ...}}``; bytes that are not UTF-8
and opaque values stay bytes (RfsBuilder.build stores them with the Bytes convention); NaN and
infinities stay floats (stored with the Non-Finite convention); a null dataspace becomes None;
compounds become objects keyed by field; complex numbers become ``[real, imag]``.
"""

from __future__ import annotations

import logging
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec.nwb_convention import SPECLOC_ATTR, reference_value

from .object_paths import ObjectPaths

__all__ = ["SKIPPED_ATTRIBUTES", "read_attributes"]

logger = logging.getLogger(__name__)

SKIPPED_ATTRIBUTES = frozenset({"DIMENSION_LIST", "REFERENCE_LIST"})
"""Dimension-scale bookkeeping (references between datasets), expressed by dimension_names."""


def read_attributes(obj: h5py.HLObject, paths: ObjectPaths) -> dict[str, Any]:
    """Every attribute of a group or dataset as JSON-ready values."""
    out: dict[str, Any] = {}
    for name in obj.attrs:
        if name in SKIPPED_ATTRIBUTES:
            continue
        try:
            value = obj.attrs[name]
        except (OSError, TypeError, ValueError) as exc:
            # h5py cannot read some types (e.g. vlen of compounds); keep the rest of the node.
            logger.warning("attribute %r of %s is not readable by h5py: %s", name, obj.name, exc)
            continue
        if name == SPECLOC_ATTR and isinstance(value, h5py.Reference):
            out[name] = paths(value).lstrip("/")
            continue
        out[name] = to_json(value, paths)
    return out


def to_json(value: Any, paths: ObjectPaths) -> Any:
    """One h5py attribute value as a JSON-ready Python value."""
    if isinstance(value, h5py.Empty):
        return None
    if isinstance(value, h5py.RegionReference | h5py.Reference):
        return reference_value(paths(value))
    if isinstance(value, np.ndarray):
        if value.dtype.names is not None:
            return (
                [_record(v, paths) for v in value.ravel()]
                if value.ndim
                else _record(value[()], paths)
            )
        if value.dtype.kind == "O":
            return _nested([to_json(v, paths) for v in value.ravel()], value.shape)
        if value.dtype.kind == "c":
            return _nested([[float(v.real), float(v.imag)] for v in value.ravel()], value.shape)
        if value.dtype.kind == "S":
            return _nested([_bytes_or_text(bytes(v)) for v in value.ravel()], value.shape)
        if value.dtype.kind == "V":
            return _nested([bytes(v) for v in value.ravel()], value.shape)
        return value.tolist()
    if isinstance(value, np.void):
        if value.dtype.names is not None:
            return _record(value, paths)
        return bytes(value)
    if isinstance(value, bytes | np.bytes_):
        return _bytes_or_text(bytes(value))
    if isinstance(value, complex | np.complexfloating):
        return [float(value.real), float(value.imag)]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _record(value: Any, paths: ObjectPaths) -> dict[str, Any]:
    return {name: to_json(value[name], paths) for name in value.dtype.names}


def _bytes_or_text(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _nested(flat: list[Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]
