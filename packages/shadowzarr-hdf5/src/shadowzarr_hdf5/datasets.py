"""One HDF5 dataset → one Zarr array in the builder: type, attributes, layout, chunks."""

from __future__ import annotations

import math
import posixpath
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import BuilderError, ChunkDecodeError, RfsBuilder, UnsupportedFeatureError
from shadowzarr_spec.metadata import VLEN_BYTES, bytes_codec
from shadowzarr_spec.nwb_convention import REFERENCE_FIELDS_ATTR

from .attributes import attribute_names, read_attributes
from .chunk_decode import decode_stored_chunks
from .context import ChunkLocations, Options, Source
from .dtypes import TypeKind, TypePlan, convert_values, plan_type
from .filters import codecs_for, lzf_rewrites, overcompressed, read_filters
from .header_reader.dataset import HeaderDataset
from .inline import chunk_region, string_codecs, vlen_bytes_codecs
from .layouts import (
    add_chunked,
    add_contiguous,
    add_external,
    add_inline,
    chunk_locations,
    common_mask,
    contiguous_chunks,
    external_chunk_shape,
    storage_layout,
)
from .native_decode import decoded_values
from .netcdf import is_netcdf_char, netcdf_attributes
from .netcdf_dimensions import check_padding, netcdf_shape, padded
from .verify import needs_verification, verify_chunk
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
    fill = _fill_value(opened, plan.storage)
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


def _described(
    dataset: h5py.Dataset | HeaderDataset, path: str, source: Source
) -> tuple[TypePlan, dict[str, Any], list[str | None] | None]:
    """The storage plan, the attributes and the dimension names of a dataset's array."""
    if isinstance(dataset, HeaderDataset):
        stored_names, attributes = dataset.attribute_names, dict(dataset.attributes)
    else:
        stored_names = attribute_names(dataset)
        attributes = read_attributes(dataset, source.paths, stored_names)
    plan = plan_type(dataset.dtype, path)
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


def _fill_value(dataset: h5py.Dataset, storage: np.dtype) -> Any:
    fill = dataset.fillvalue
    array = np.asarray(fill)
    if array.dtype.names is not None or array.dtype.kind == "V":
        if not array.tobytes().strip(b"\x00"):
            return None
        if array.dtype.names and storage.names:
            return np.asarray(fill).astype(storage)[()]
        return array.tobytes()  # raw records (or opaque values): the stored bytes
    if array.ndim:  # an HDF5 array type's fill is an array: Zarr needs one scalar
        flat = array.ravel()
        if not np.all(flat == flat[0]):
            raise UnsupportedFeatureError(
                f"dataset {dataset.name!r}: a fill value that differs along its array type axes"
            )
        return flat[0].item()
    return array.item()


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
    dtype: np.dtype = plan.storage
    itemsize = dtype.itemsize * math.prod(plan.extra_shape)
    nbytes = math.prod(dataset.shape) * itemsize
    layout = storage_layout(dataset)
    fill = _fill_value(dataset, dtype)
    plain_codecs = [bytes_codec(dtype)]
    extra = plan.extra_shape
    extent = tuple(int(n) for n in dataset.shape) + extra

    def add(chunk_shape: tuple[int, ...], codecs: list[dict[str, Any]]) -> None:
        try:
            builder.add_array(
                path,
                shape=shape,
                data_type=dtype,
                chunk_shape=chunk_shape,
                codecs=codecs,
                fill_value=fill,
                attributes=attributes,
                dimension_names=names,
            )
        except BuilderError as exc:
            raise UnsupportedFeatureError(f"dataset {path!r}: {exc}") from exc

    def inline(chunk_shape: tuple[int, ...], decoded: Any = None) -> None:
        add(chunk_shape, plain_codecs)
        found = _values(dataset, source) if decoded is None else decoded
        values = padded(as_storage(found, dtype), shape, fill)
        add_inline(
            builder, path, values, shape=shape, data_type=dtype, chunk_shape=chunk_shape,
            codecs=plain_codecs, fill_value=fill,
        )  # fmt: skip

    if layout == "virtual":
        if extra:
            raise UnsupportedFeatureError(f"dataset {path!r}: a virtual dataset of array types")
        opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
        add_virtual(
            builder, path, opened, source, data_type=dtype, fill_value=fill,
            attributes=attributes, names=names,
        )  # fmt: skip
        return
    if layout == "compact":
        inline(tuple(max(1, s) for s in shape))
        return
    if layout == "external":
        chunk_shape = external_chunk_shape(dataset, source, shape, dtype.itemsize, options)
        add(chunk_shape, plain_codecs)
        add_external(builder, path, dataset, source, shape=shape, itemsize=dtype.itemsize,
                     options=options)  # fmt: skip
        return
    if layout == "contiguous":
        offset = _contiguous_offset(dataset)
        if offset is not None and nbytes <= options.inline_threshold:
            inline(tuple(max(1, s) for s in shape))
            return
        chunk_shape = contiguous_chunks(shape, dtype.itemsize, options)
        add(chunk_shape, plain_codecs)
        if offset is not None:
            add_contiguous(
                builder, path, source, offset=int(offset) + source.offset_shift, shape=shape,
                itemsize=dtype.itemsize, options=options,
            )  # fmt: skip
        return
    # chunked
    chunk_shape = tuple(dataset.chunks) + extra
    filters = dataset.filters if isinstance(dataset, HeaderDataset) else read_filters(dataset)
    if nbytes <= options.inline_threshold:
        decoded = None
        if filters:
            decoded = _small_filtered_values(
                dataset, path, source, filters, shape=extent, chunk_shape=chunk_shape,
                data_type=dtype, fill_value=fill,
            )  # fmt: skip
        inline(chunk_shape, decoded)
        return
    locations = chunk_locations(dataset, source)
    mask = common_mask(locations, dataset.shape, dataset.chunks) if filters else 0
    codecs = codecs_for(filters, dtype, path, skip_mask=mask)
    _verify_first_chunk(dataset, path, source, locations, mask, dtype, extent, chunk_shape, codecs)
    check_padding(
        path, source, locations, extent=extent, shape=shape, chunk_shape=chunk_shape,
        data_type=dtype, codecs=codecs, fill_value=fill,
    )  # fmt: skip
    add(chunk_shape, codecs)
    chunk_bytes = math.prod(chunk_shape) * dtype.itemsize
    rewrite = lzf_rewrites(codecs, locations.sizes, locations.masks == mask, chunk_bytes, path)
    add_chunked(
        builder, path, dataset, source, options, locations=locations, mask=mask, shape=shape,
        chunk_shape=chunk_shape, data_type=dtype, codecs=codecs, fill_value=fill,
        has_filters=bool(filters),
        rewrite=rewrite,
    )  # fmt: skip


def _small_filtered_values(
    dataset: h5py.Dataset | HeaderDataset,
    path: str,
    source: Source,
    filters: tuple[Any, ...],
    *,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    data_type: np.dtype,
    fill_value: Any,
) -> Any:
    """The values of a small filtered dataset, decoded by the codecs its references would use,
    else by HDF5 with hdf5plugin's filters (never h5py's "can't open directory" error)."""
    locations = chunk_locations(dataset, source)
    values: np.ndarray | None = None
    try:
        # Chunks that skipped a filter (HDF5's filter mask) decode with that filter left out.
        for mask in np.unique(locations.masks).tolist() or [0]:
            chosen = locations.masks == mask
            part = decode_stored_chunks(
                source,
                ChunkLocations(locations.coords[chosen], locations.offsets[chosen],
                               locations.sizes[chosen], locations.masks[chosen]),
                shape=shape, chunk_shape=chunk_shape, data_type=data_type,
                codecs=codecs_for(filters, data_type, path, skip_mask=int(mask)),
                fill_value=fill_value,
            )  # fmt: skip
            if part is None:
                break
            if values is None:
                values = part
                continue
            extra = (0,) * (len(shape) - locations.coords.shape[1])
            for coords in locations.coords[chosen].tolist():
                region = chunk_region((*coords, *extra), chunk_shape, shape)
                values[region] = part[region]
        else:
            return values
    except (UnsupportedFeatureError, ChunkDecodeError, ValueError, RuntimeError, ImportError):
        pass  # no codec reads these chunks here: HDF5 decodes them
    opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
    return decoded_values(opened, path)


def _contiguous_offset(dataset: h5py.Dataset | HeaderDataset) -> int | None:
    """Where contiguous data starts (relative address; None when never written)."""
    if isinstance(dataset, HeaderDataset):
        return dataset.layout.address
    offset = dataset.id.get_offset()
    return None if offset is None else int(offset)


def _verify_first_chunk(
    dataset: h5py.Dataset,
    path: str,
    source: Source,
    locations: Any,
    mask: int,
    dtype: np.dtype,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    codecs: list[dict[str, Any]],
) -> None:
    if not needs_verification(codecs) or source.read_bytes is None:
        return
    readable = locations.masks == mask
    if any(c.get("name") == "imagecodecs_lzf" for c in codecs):
        readable &= ~overcompressed(locations.sizes, math.prod(chunk_shape) * dtype.itemsize)
    usable = np.flatnonzero(readable)
    if not usable.size:
        return
    i = int(usable[0])
    extra = (0,) * (len(shape) - dataset.ndim)
    verify_chunk(
        dataset, path, read_bytes=source.read_bytes,
        coords=(*locations.coords[i].tolist(), *extra), offset=int(locations.offsets[i]),
        size=int(locations.sizes[i]), data_type=dtype, shape=shape, chunk_shape=chunk_shape,
        codecs=codecs,
    )  # fmt: skip
