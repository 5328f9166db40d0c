"""Plan one dataset: read and decide everything its array needs, write nothing.

The dataset's description (type, attributes, dimension names) comes first; then its values are
placed: converted and held inline (strings, references), nowhere (an empty array), or where the
file stores them (:mod:`.storage`). The result is a `DatasetPlan` that :mod:`..emit` writes.
"""

from __future__ import annotations

import math
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.metadata import VLEN_BYTES, bytes_codec

from ..context import Options, Source
from ..header_reader.dataset import HeaderDataset
from ..native_decode import decoded_values
from ..netcdf_dimensions import netcdf_shape, padded
from .dataset_plan import DatasetPlan, InlineChunks
from .description import Description, describe_dataset
from .encode import held_inline, string_codecs, vlen_bytes_codecs
from .storage import fill_value, plan_storage
from .types import TypeKind, convert_values
from .values import as_storage, read_values

__all__ = ["plan_dataset", "plan_decoded"]


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
    described = describe_dataset(dataset, path, source)
    typed = described.type
    if dataset.shape is None:  # null dataspace: no elements at all
        return _empty(path, described, (0,), None)
    shape = netcdf_shape(dataset, source)
    names = described.names
    if typed.stored:
        shape += typed.extra_shape
        names = None if names is None else names + (None,) * len(typed.extra_shape)
        if math.prod(shape) == 0:
            return _empty(path, described, shape, names)
        return plan_storage(dataset, path, source, options, described, shape, names)
    if math.prod(shape) == 0:
        return _empty(path, described, shape, names)
    # Strings, references and compounds holding them: values converted and held inline.
    values = convert_values(read_values(dataset, source), typed, source.paths, dataset)
    if values.shape != shape:  # a netCDF variable on a longer unlimited dimension
        values = padded(values, shape, "" if typed.kind is TypeKind.STRING else None)
    if scalar_strings and typed.kind is TypeKind.STRING and shape == (1,):
        values, shape, names = values.reshape(()), (), None
    chunk_shape = _inline_chunks(shape)
    if typed.kind is TypeKind.CONVERTED_COMPOUND:
        data_type: Any = values.dtype
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
        path, shape, data_type, chunk_shape, tuple(codecs), fill, described.attributes, names,
        InlineChunks(chunks),
    )  # fmt: skip


def plan_decoded(dataset: h5py.Dataset | HeaderDataset, path: str, source: Source) -> DatasetPlan:
    """The plan of ``dataset`` with every value decoded by HDF5 and held in the references: the
    policy for a small dataset whose stored bytes no codec reads (see :mod:`..unsupported`)."""
    described = describe_dataset(dataset, path, source)
    typed = described.type
    if not typed.stored or dataset.shape is None:
        raise UnsupportedFeatureError(f"dataset {path!r}: its values cannot be held inline")
    shape = tuple(dataset.shape) + typed.extra_shape
    names = described.names
    if names is not None:
        names = names + (None,) * len(typed.extra_shape)
    opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
    values = as_storage(decoded_values(opened, path), typed.storage)
    chunks = opened.chunks
    chunk_shape = (
        (*chunks, *typed.extra_shape) if chunks is not None else tuple(max(1, n) for n in shape)
    )
    codecs = (bytes_codec(typed.storage),)
    fill = fill_value(opened, typed.storage)
    held = held_inline(
        values, shape=shape, data_type=typed.storage, chunk_shape=chunk_shape, codecs=codecs,
        fill_value=fill,
    )  # fmt: skip
    return DatasetPlan(
        path, shape, typed.storage, chunk_shape, codecs, fill, described.attributes, names,
        InlineChunks(held),
    )  # fmt: skip


def _empty(
    path: str, described: Description, shape: tuple[int, ...], names: tuple[str | None, ...] | None
) -> DatasetPlan:
    """An array without elements: metadata only."""
    typed = described.type
    data_type = typed.storage if typed.stored or typed.kind is TypeKind.VLEN_SEQUENCE else "string"
    if typed.kind is TypeKind.CONVERTED_COMPOUND:
        data_type = np.dtype([("empty", "u1")])  # never read: there are no elements
    chunk_shape = tuple(max(1, s) for s in shape)
    return DatasetPlan(
        path, shape, data_type, chunk_shape, None, None, described.attributes, names,
        InlineChunks({}),
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
