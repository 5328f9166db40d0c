"""Zarr v3 metadata documents (``zarr.json``) for the groups and arrays a builder holds.

Numpy dtypes are turned into Zarr v3 ``data_type`` values and fill values through zarr-python's
own data type registry when it is installed, so what we write is what zarr-python reads; a small
built-in table covers the numeric types when it is not.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from shadowzarr_spec.errors import BuilderError

__all__ = [
    "VLEN_BYTES",
    "array_metadata",
    "bytes_codec",
    "default_codecs",
    "group_metadata",
    "zarr_data_type",
]

_NUMERIC_NAMES = {
    "b": {1: "bool"},
    "i": {1: "int8", 2: "int16", 4: "int32", 8: "int64"},
    "u": {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"},
    "f": {2: "float16", 4: "float32", 8: "float64"},
    "c": {8: "complex64", 16: "complex128"},
}


def group_metadata(attributes: dict[str, Any]) -> dict[str, Any]:
    return {"zarr_format": 3, "node_type": "group", "attributes": attributes}


def bytes_codec(dtype: np.dtype) -> dict[str, Any]:
    """The ``bytes`` codec for ``dtype``: endianness only matters for multi-byte numbers."""
    order = _byte_order(dtype)
    if order is None:
        return {"name": "bytes"}
    return {"name": "bytes", "configuration": {"endian": order}}


VLEN_BYTES: Final = "variable_length_bytes"
"""The data type name of arrays of variable-length byte strings (``vlen-bytes`` codec)."""


def default_codecs(dtype: np.dtype | str) -> list[dict[str, Any]]:
    if isinstance(dtype, str) and dtype == VLEN_BYTES:
        return [{"name": "vlen-bytes", "configuration": {}}]
    if (isinstance(dtype, str) and dtype == "string") or (
        isinstance(dtype, np.dtype) and dtype.kind in "OT"
    ):
        return [{"name": "vlen-utf8", "configuration": {}}]
    return [bytes_codec(np.dtype(dtype))]


def zarr_data_type(dtype: np.dtype | str, fill_value: Any) -> tuple[Any, Any]:
    """(data_type JSON, fill_value JSON) for a numpy dtype (or the name "string")."""
    if isinstance(dtype, str) and dtype == "string":
        return "string", "" if fill_value is None else str(fill_value)
    if isinstance(dtype, str) and dtype == VLEN_BYTES:
        if fill_value not in (None, b""):
            raise BuilderError("variable-length bytes arrays take no fill value but empty bytes")
        return VLEN_BYTES, ""  # base64 of no bytes
    native = np.dtype(dtype)
    try:
        zdtype = _zarr_dtype(native)
    except ImportError:
        return _builtin_data_type(native, fill_value)
    except (TypeError, ValueError) as exc:
        raise BuilderError(f"zarr-python cannot store the data type {native}: {exc}") from exc
    try:
        scalar = zdtype.default_scalar() if fill_value is None else zdtype.cast_scalar(fill_value)
        return zdtype.to_json(zarr_format=3), _plain(zdtype.to_json_scalar(scalar, zarr_format=3))
    except (TypeError, ValueError) as exc:
        raise BuilderError(f"zarr-python cannot store the data type {native}: {exc}") from exc


@functools.lru_cache(maxsize=256)
def _zarr_dtype(native: np.dtype) -> Any:
    """zarr-python's data type for a numpy dtype (matched against every registered type: slow,
    and asked once per array)."""
    from zarr.core.dtype import get_data_type_from_native_dtype

    return get_data_type_from_native_dtype(native)


def array_metadata(
    *,
    shape: Sequence[int],
    data_type: Any,
    chunk_shape: Sequence[int],
    fill_value: Any,
    codecs: list[dict[str, Any]],
    attributes: dict[str, Any],
    dimension_names: Sequence[str | None] | None,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [int(s) for s in shape],
        "data_type": data_type,
        "chunk_grid": {
            "name": "regular",
            "configuration": {"chunk_shape": [int(c) for c in chunk_shape]},
        },
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
        "attributes": attributes,
        "storage_transformers": [],
    }
    if dimension_names is not None:
        document["dimension_names"] = list(dimension_names)
    return document


def _byte_order(dtype: np.dtype) -> str | None:
    if dtype.fields:
        orders = {_byte_order(dtype.fields[name][0]) for name in dtype.names or ()} - {None}
        if len(orders) > 1:
            raise BuilderError(
                f"compound type {dtype} mixes byte orders, which Zarr cannot express"
            )
        return orders.pop() if orders else None
    if dtype.subdtype is not None:
        return _byte_order(dtype.subdtype[0])
    if dtype.kind in "SVb" or (dtype.itemsize == 1 and dtype.kind != "U"):
        return None
    if dtype.byteorder == ">":
        return "big"
    if dtype.byteorder == "<":
        return "little"
    return "little" if np.little_endian else "big"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _builtin_data_type(native: np.dtype, fill_value: Any) -> tuple[Any, Any]:
    name = _NUMERIC_NAMES.get(native.kind, {}).get(native.itemsize)
    if name is None or native.kind == "c":
        raise BuilderError(f"data type {native} needs zarr-python installed to be described")
    value = 0 if fill_value is None else fill_value
    if native.kind == "b":
        return name, bool(value)
    if native.kind == "f":
        number = float(value)
        if math.isnan(number):
            return name, "NaN"
        if math.isinf(number):
            return name, "Infinity" if number > 0 else "-Infinity"
        return name, number
    return name, int(value)
