"""Plan one dataset: read and decide everything its array needs, write nothing.

The dataset's description comes first (type, attributes, dimension names); then its values are
placed: nowhere (an empty array), where the file stores them (:mod:`.storage`), or converted and
held inline (strings, references). The result is a `DatasetPlan` that :mod:`..emit` writes.
"""

from __future__ import annotations

import math
import os
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.metadata import VLEN_BYTES, bytes_codec
from shadowzarr_spec.nwb_convention import REFERENCE_FIELDS_ATTR

from ..attributes import attribute_names, dimension_names, read_attributes
from ..context import Options, Source
from ..header_reader.dataset import HeaderDataset
from ..native_decode import decoded_values
from ..netcdf import is_netcdf_char, netcdf_attributes, netcdf_enum_name, netcdf_shape
from ..virtual_datasets import check_sources_present
from .chunks import read_filters
from .dataset_plan import DatasetPlan, InlineChunks
from .encode import held_inline, string_codecs, vlen_bytes_codecs
from .fill_values import fill_value
from .storage import plan_storage
from .types import TypeKind, TypePlan, plan_type
from .values import as_storage, convert_values, padded, read_values

__all__ = ["plan_dataset", "plan_decoded"]

DTYPE_ATTR = "_DTYPE"
ENUM_ATTR = "_ENUM"
ENUM_NAME_ATTR = "_ENUM_NAME"

_INLINE_CHUNK_ELEMENTS = 65536
"""Converted values (strings, references) are chunked in rows of about this many elements,
whatever the HDF5 chunking: tiny HDF5 chunks would make one reference per few strings."""

type Names = tuple[str | None, ...] | None


def plan_dataset(
    dataset: h5py.Dataset | HeaderDataset,
    path: str,
    source: Source,
    options: Options,
    *,
    scalar_strings: bool = False,
) -> DatasetPlan:
    """The plan of ``dataset`` at ``path``. ``scalar_strings``: one-string arrays become
    scalars (the cached specifications of old HDMF files)."""
    typed, attributes, names = _describe(dataset, path, source)
    if dataset.shape is None:  # null dataspace: no elements at all
        shape: tuple[int, ...] = (0,)
        names = None
    else:
        shape = netcdf_shape(dataset, source)
    if typed.stored:
        shape += typed.extra_shape
        names = None if names is None else names + (None,) * len(typed.extra_shape)
    if math.prod(shape) == 0:  # metadata only
        kept = typed.stored or typed.kind is TypeKind.VLEN_SEQUENCE
        data_type = typed.storage if kept else "string"
        if typed.kind is TypeKind.CONVERTED_COMPOUND:
            data_type = np.dtype([("empty", "u1")])  # never read: there are no elements
        chunk_shape = tuple(max(1, s) for s in shape)
        return DatasetPlan(
            path, shape, data_type, chunk_shape, None, None, attributes, names, InlineChunks({})
        )
    if not typed.stored:
        # Strings, references and compounds holding them: values converted and held inline.
        scalar = scalar_strings and typed.kind is TypeKind.STRING and shape == (1,)
        chunk_shape = ()
        if shape and not scalar:
            row = max(1, math.prod(shape[1:]))
            rows = min(max(1, shape[0]), max(1, _INLINE_CHUNK_ELEMENTS // row))
            chunk_shape = (rows, *(max(1, s) for s in shape[1:]))
        values = convert_values(read_values(dataset, source), typed, source.paths, dataset)
        if values.shape != shape:  # a netCDF variable on a longer unlimited dimension
            values = padded(values, shape, "" if typed.kind is TypeKind.STRING else None)
        if scalar:
            values, shape, names = values.reshape(()), (), None
        if typed.kind is TypeKind.CONVERTED_COMPOUND:
            data_type = values.dtype
            codecs = [bytes_codec(values.dtype)]
            fill = None
        elif typed.kind is TypeKind.VLEN_SEQUENCE:
            data_type, codecs, fill = VLEN_BYTES, vlen_bytes_codecs(values, chunk_shape), None
        else:
            data_type, codecs, fill = "string", string_codecs(values, chunk_shape), ""
        chunks = held_inline(
            values, shape=shape, data_type=data_type, chunk_shape=chunk_shape, codecs=codecs,
            fill_value=fill,
        )  # fmt: skip
        return DatasetPlan(
            path, shape, data_type, chunk_shape, tuple(codecs), fill, attributes, names,
            InlineChunks(chunks),
        )  # fmt: skip
    return plan_storage(dataset, path, source, options, typed, shape, attributes, names)


def plan_decoded(dataset: h5py.Dataset | HeaderDataset, path: str, source: Source) -> DatasetPlan:
    """The plan of ``dataset`` with every value decoded by HDF5 and held in the references: the
    policy for a small dataset whose stored bytes no codec reads (see :mod:`..unsupported`)."""
    typed, attributes, names = _describe(dataset, path, source)
    if not typed.stored or dataset.shape is None:
        raise UnsupportedFeatureError(f"dataset {path!r}: its values cannot be held inline")
    shape = tuple(dataset.shape) + typed.extra_shape
    if names is not None:
        names = names + (None,) * len(typed.extra_shape)
    opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
    if opened.is_virtual:  # a missing source would read as fill values
        check_sources_present(opened, path, os.path.dirname(opened.file.filename))
    values = as_storage(decoded_values(opened, path, read_filters(opened)), typed.storage)
    chunks = opened.chunks
    chunk_shape = (
        (*chunks, *typed.extra_shape) if chunks is not None else tuple(max(1, n) for n in shape)
    )
    codecs = (bytes_codec(typed.storage),)
    fill = fill_value(opened, typed.storage, path)
    held = held_inline(
        values, shape=shape, data_type=typed.storage, chunk_shape=chunk_shape, codecs=codecs,
        fill_value=fill,
    )  # fmt: skip
    return DatasetPlan(
        path, shape, typed.storage, chunk_shape, codecs, fill, attributes, names,
        InlineChunks(held),
    )  # fmt: skip


def _describe(
    dataset: h5py.Dataset | HeaderDataset, path: str, source: Source
) -> tuple[TypePlan, dict[str, Any], Names]:
    """What a dataset's array says besides its storage: its type plan, its attributes and the
    dimension names of its own axes."""
    if isinstance(dataset, HeaderDataset):
        stored_names, attributes = dataset.attribute_names, dict(dataset.attributes)
    else:
        stored_names = attribute_names(dataset)
        attributes = read_attributes(dataset, source.paths, stored_names)
    names = dimension_names(dataset, stored_names, source.netcdf_dimension_of)
    try:
        dtype = dataset.dtype
    except (ValueError, TypeError) as exc:  # no numpy type: IEEE quadruple, HDF5 time types
        raise UnsupportedFeatureError(
            f"dataset {path!r}: a data type numpy cannot represent ({exc})"
        ) from exc
    plan = plan_type(dtype, path)
    if source.netcdf and is_netcdf_char(dtype):
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
        name = netcdf_enum_name(dataset) if source.netcdf and native else None
        if name is not None:
            attributes[ENUM_NAME_ATTR] = name
    attributes.update(plan.attributes)
    return plan, attributes, None if names is None else tuple(names)
