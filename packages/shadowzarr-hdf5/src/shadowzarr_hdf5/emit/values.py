"""Arrays whose values are held in the references: converted values (strings, references,
compounds holding them) and empty arrays."""

from __future__ import annotations

import math
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import RfsBuilder
from shadowzarr_spec.metadata import VLEN_BYTES, bytes_codec

from ..context import Source
from ..netcdf_dimensions import netcdf_shape, padded
from ..plan.types import TypeKind, TypePlan, convert_values
from ..plan.values import read_values
from .inline import add_inline, string_codecs, vlen_bytes_codecs

__all__ = ["add_converted", "add_empty", "as_storage"]


def as_storage(values: Any, storage: np.dtype) -> np.ndarray:
    """Values read by h5py in the array's stored type (records as raw bytes: a view)."""
    array = np.asarray(values)
    if storage.kind == "V" and storage.names is None and array.dtype.names is not None:
        return np.ascontiguousarray(array).view(storage)
    return array.astype(storage, copy=False)


def add_empty(
    builder: RfsBuilder,
    path: str,
    plan: TypePlan,
    shape: tuple[int, ...],
    attributes: dict[str, Any],
    names: list[str | None] | None,
) -> None:
    data_type = plan.storage if plan.stored or plan.kind is TypeKind.VLEN_SEQUENCE else "string"
    if plan.kind is TypeKind.CONVERTED_COMPOUND:
        data_type = np.dtype([("empty", "u1")])  # never read: there are no elements
    builder.add_array(
        path,
        shape=shape,
        data_type=data_type,
        chunk_shape=tuple(max(1, s) for s in shape),
        attributes=attributes,
        dimension_names=names,
    )


def add_converted(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset,
    source: Source,
    plan: TypePlan,
    attributes: dict[str, Any],
    names: list[str | None] | None,
    scalar_strings: bool,
) -> None:
    """Strings, references and compounds holding them: values converted and held inline."""
    shape = netcdf_shape(dataset, source)
    if math.prod(shape) == 0:
        add_empty(builder, path, plan, shape, attributes, names)
        return
    values = convert_values(read_values(dataset, source), plan, source.paths, dataset)
    if values.shape != shape:  # a netCDF variable on a longer unlimited dimension
        values = padded(values, shape, "" if plan.kind is TypeKind.STRING else None)
    if scalar_strings and plan.kind is TypeKind.STRING and shape == (1,):
        values, shape, names = values.reshape(()), (), None
    chunk_shape = _inline_chunks(shape)
    if plan.kind is TypeKind.CONVERTED_COMPOUND:
        data_type: Any = values.dtype
        codecs = [bytes_codec(values.dtype)]
        fill = None
    elif plan.kind is TypeKind.VLEN_SEQUENCE:
        data_type, codecs, fill = VLEN_BYTES, vlen_bytes_codecs(values, chunk_shape), None
    else:
        data_type, codecs, fill = "string", string_codecs(values, chunk_shape), ""
    builder.add_array(
        path,
        shape=shape,
        data_type=data_type,
        chunk_shape=chunk_shape,
        codecs=codecs,
        fill_value=fill,
        attributes=attributes,
        dimension_names=names,
    )
    add_inline(
        builder, path, values, shape=shape, data_type=data_type, chunk_shape=chunk_shape,
        codecs=codecs, fill_value=fill,
    )  # fmt: skip


_INLINE_CHUNK_ELEMENTS = 65536
"""Converted values (strings, references) are chunked in rows of about this many elements,
whatever the HDF5 chunking: tiny HDF5 chunks would make one reference per few strings."""


def _inline_chunks(shape: tuple[int, ...]) -> tuple[int, ...]:
    if not shape:
        return ()
    row = max(1, math.prod(shape[1:]))
    rows = min(max(1, shape[0]), max(1, _INLINE_CHUNK_ELEMENTS // row))
    return (rows, *(max(1, s) for s in shape[1:]))
