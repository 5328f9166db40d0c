"""One HDF5 dataset → one Zarr array in the builder: type, attributes, layout, chunks.

Each dataset flows one way: its type plan (:mod:`.dtypes`), its storage plan
(:mod:`.storage_plans`, reading and checking only), then the references written here."""

from __future__ import annotations

import math
import posixpath
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import BuilderError, RfsBuilder, UnsupportedFeatureError
from shadowzarr_spec.metadata import VLEN_BYTES, bytes_codec
from shadowzarr_spec.nwb_convention import REFERENCE_FIELDS_ATTR

from .attributes import attribute_names, read_attributes
from .context import Options, Source
from .dtypes import TypeKind, TypePlan, convert_values, plan_type
from .filters import lzf_rewrites
from .header_reader.dataset import HeaderDataset
from .inline import string_codecs, vlen_bytes_codecs
from .layouts import add_chunked, add_contiguous, add_external, add_inline
from .native_decode import decoded_values
from .netcdf import is_netcdf_char, netcdf_attributes
from .netcdf_dimensions import netcdf_shape, padded
from .storage_plans import (
    ContiguousBlock,
    ExternalSegments,
    InlineValues,
    StoredChunks,
    VirtualSources,
    fill_value,
    plan_storage,
)
from .virtual_datasets import add_virtual

__all__ = ["add_dataset", "add_decoded"]

DTYPE_ATTR = "_DTYPE"
ENUM_ATTR = "_ENUM"


def add_dataset(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset,
    source: Source,
    options: Options,
    *,
    scalar_strings: bool = False,
) -> None:
    """Add ``dataset`` at ``path``. ``scalar_strings``: one-string arrays become scalars (the
    cached specifications of old HDMF files)."""
    plan, attributes, names = _described(dataset, path, source)
    if dataset.shape is None:  # null dataspace: no elements at all
        _add_empty(builder, path, plan, (0,), attributes, None)
        return
    shape = netcdf_shape(dataset, source) + plan.extra_shape
    if names is not None:
        names = names + [None] * len(plan.extra_shape)
    if not plan.stored:
        _add_converted(builder, path, dataset, source, plan, attributes, names, scalar_strings)
        return
    if math.prod(shape) == 0:
        _add_empty(builder, path, plan, shape, attributes, names)
        return
    _add_stored(builder, path, dataset, source, options, plan, shape, attributes, names)


def add_decoded(
    builder: RfsBuilder, path: str, dataset: h5py.Dataset | HeaderDataset, source: Source
) -> None:
    """Add ``dataset`` with every value decoded by HDF5 and held in the references: the policy
    for a small dataset whose stored bytes no codec reads (see :mod:`.unsupported`)."""
    plan, attributes, names = _described(dataset, path, source)
    if not plan.stored or dataset.shape is None:
        raise UnsupportedFeatureError(f"dataset {path!r}: its values cannot be held inline")
    shape = tuple(dataset.shape) + plan.extra_shape
    if names is not None:
        names = names + [None] * len(plan.extra_shape)
    opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
    values = as_storage(decoded_values(opened, path), plan.storage)
    chunks = opened.chunks
    chunk_shape = (
        (*chunks, *plan.extra_shape) if chunks is not None else tuple(max(1, n) for n in shape)
    )
    codecs = [bytes_codec(plan.storage)]
    fill = fill_value(opened, plan.storage)
    builder.add_array(
        path, shape=shape, data_type=plan.storage, chunk_shape=chunk_shape, codecs=codecs,
        fill_value=fill, attributes=attributes, dimension_names=names,
    )  # fmt: skip
    add_inline(
        builder, path, values, shape=shape, data_type=plan.storage, chunk_shape=chunk_shape,
        codecs=codecs, fill_value=fill,
    )  # fmt: skip


def as_storage(values: Any, storage: np.dtype) -> np.ndarray:
    """Values read by h5py in the array's stored type (records as raw bytes: a view)."""
    array = np.asarray(values)
    if storage.kind == "V" and storage.names is None and array.dtype.names is not None:
        return np.ascontiguousarray(array).view(storage)
    return array.astype(storage, copy=False)


def _numpy_type(dataset: h5py.Dataset | HeaderDataset, path: str) -> np.dtype:
    try:
        return dataset.dtype
    except (ValueError, TypeError) as exc:  # no numpy type: IEEE quadruple, HDF5 time types
        raise UnsupportedFeatureError(
            f"dataset {path!r}: a data type numpy cannot represent ({exc})"
        ) from exc


def _described(
    dataset: h5py.Dataset | HeaderDataset, path: str, source: Source
) -> tuple[TypePlan, dict[str, Any], list[str | None] | None]:
    """The storage plan, the attributes and the dimension names of a dataset's array."""
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
    attributes.update(plan.attributes)
    return plan, attributes, dimension_names(dataset, stored_names)


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


def read_whole(dataset: h5py.Dataset) -> Any:
    """``dataset[()]`` through the low-level read (h5py's selection machinery costs more than
    the read itself for the small datasets that are inlined)."""
    dtype = dataset.dtype
    shape = dataset.shape
    if shape is None or dtype.subdtype is not None:
        return dataset[()]
    values = np.zeros(shape, dtype=dtype)
    dataset.id.read(h5py.h5s.ALL, h5py.h5s.ALL, values, mtype=h5py.h5t.py_create(dtype))
    return values


def _values(dataset: h5py.Dataset | HeaderDataset, source: Source) -> Any:
    """Every value of a small dataset: from the header reader when it can, else h5py."""
    if isinstance(dataset, HeaderDataset):
        values = dataset.read_whole(lambda address: source.paths.at_address(address) is not None)
        if values is not None:
            return values
        dataset = dataset.h5py()
    return read_whole(dataset)


def _add_empty(
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


def _add_converted(
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
        _add_empty(builder, path, plan, shape, attributes, names)
        return
    values = convert_values(_values(dataset, source), plan, source.paths, dataset)
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


def _add_stored(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset,
    source: Source,
    options: Options,
    plan: TypePlan,
    shape: tuple[int, ...],
    attributes: dict[str, Any],
    names: list[str | None] | None,
) -> None:
    """Plan where the stored values are (reading and checking only), then write the plan."""
    storage = plan_storage(dataset, path, source, options, plan, shape)
    placement = storage.placement
    if isinstance(placement, VirtualSources):
        opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
        add_virtual(
            builder, path, opened, source, data_type=placement.data_type,
            fill_value=placement.fill_value, attributes=attributes, names=names,
        )  # fmt: skip
        return
    array = storage.array
    assert array is not None
    codecs = list(array.codecs)
    try:
        builder.add_array(
            path,
            shape=array.shape,
            data_type=array.data_type,
            chunk_shape=array.chunk_shape,
            codecs=codecs,
            fill_value=array.fill_value,
            attributes=attributes,
            dimension_names=names,
        )
    except BuilderError as exc:
        raise UnsupportedFeatureError(f"dataset {path!r}: {exc}") from exc
    match placement:
        case InlineValues(decoded=decoded):
            found = _values(dataset, source) if decoded is None else decoded
            values = padded(as_storage(found, array.data_type), array.shape, array.fill_value)
            add_inline(
                builder, path, values, shape=array.shape, data_type=array.data_type,
                chunk_shape=array.chunk_shape, codecs=codecs, fill_value=array.fill_value,
            )  # fmt: skip
        case ExternalSegments():
            add_external(
                builder, path, dataset, source, shape=array.shape,
                itemsize=array.data_type.itemsize, options=options,
            )  # fmt: skip
        case ContiguousBlock(offset=offset):
            if offset is not None:
                add_contiguous(
                    builder, path, source, offset=offset, shape=array.shape,
                    itemsize=array.data_type.itemsize, options=options,
                )  # fmt: skip
        case StoredChunks(locations=locations, mask=mask, has_filters=has_filters):
            chunk_bytes = math.prod(array.chunk_shape) * array.data_type.itemsize
            filtered = locations.masks == mask
            rewrite = lzf_rewrites(codecs, locations.sizes, filtered, chunk_bytes, path)
            add_chunked(
                builder, path, dataset, source, options, locations=locations, mask=mask,
                shape=array.shape, chunk_shape=array.chunk_shape, data_type=array.data_type,
                codecs=codecs, fill_value=array.fill_value, has_filters=has_filters,
                rewrite=rewrite,
            )  # fmt: skip
        case _:
            raise TypeError(f"dataset {path!r}: unexpected placement {placement!r}")
