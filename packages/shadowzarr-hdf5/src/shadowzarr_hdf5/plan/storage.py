"""Where one dataset's stored values are, decided before anything is written.

`plan_storage` reads what it needs (layout, filters, chunk locations, fill value; the values of
small datasets) and checks what it can (a first chunk against h5py, netCDF padding); it writes
nothing. Its result is the dataset's `DatasetPlan`: the array's metadata and where its chunks
are (:mod:`.dataset_plan`).
"""

from __future__ import annotations

import math
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import SourceError, UnsupportedFeatureError
from shadowzarr_spec.metadata import bytes_codec

from ..context import ChunkLocations, Options, Source
from ..header_reader.dataset import HeaderDataset
from ..native_decode import decoded_values
from ..netcdf_dimensions import check_padding, padded
from ..virtual_datasets import plan_virtual
from ..zarr_memory import chunk_region
from .chunk_decode import decode_stored_chunks
from .chunks import chunk_locations, common_mask, stored_chunks
from .dataset_plan import DatasetPlan, InlineChunks, Placement, Slabs
from .description import Description
from .encode import held_inline
from .fill_values import fill_is_undefined, stored_fill
from .filters import codecs_for, lzf_rewrites, overcompressed, read_filters
from .layout import contiguous_chunks, plan_external, storage_layout
from .values import as_storage, read_values
from .verify import needs_verification, verify_chunk

__all__ = ["fill_value", "plan_storage"]


def plan_storage(
    dataset: h5py.Dataset,
    path: str,
    source: Source,
    options: Options,
    described: Description,
    shape: tuple[int, ...],
    names: tuple[str | None, ...] | None,
) -> DatasetPlan:
    """The plan of ``dataset`` (stored as the file lays it out), of extent ``shape``."""
    typed = described.type
    dtype: np.dtype = typed.storage
    extra = typed.extra_shape
    nbytes = math.prod(dataset.shape) * dtype.itemsize * math.prod(extra)
    layout = storage_layout(dataset)
    fill = fill_value(dataset, dtype)
    plain_codecs = (bytes_codec(dtype),)
    extent = tuple(int(n) for n in dataset.shape) + extra

    def planned(
        chunk_shape: tuple[int, ...], codecs: tuple[dict[str, Any], ...], placement: Placement
    ) -> DatasetPlan:
        return DatasetPlan(
            path, shape, dtype, chunk_shape, codecs, fill, described.attributes, names, placement
        )

    def inline(chunk_shape: tuple[int, ...], decoded: Any = None) -> DatasetPlan:
        found = read_values(dataset, source) if decoded is None else decoded
        values = padded(as_storage(found, dtype), shape, fill)
        chunks = held_inline(
            values, shape=shape, data_type=dtype, chunk_shape=chunk_shape, codecs=plain_codecs,
            fill_value=fill,
        )  # fmt: skip
        return planned(chunk_shape, plain_codecs, InlineChunks(chunks))

    if layout == "virtual":
        if extra:
            raise UnsupportedFeatureError(f"dataset {path!r}: a virtual dataset of array types")
        opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
        vds_shape = tuple(int(n) for n in opened.shape)
        chunk_shape, vds_codecs, references = plan_virtual(opened, path, source, dtype, fill)
        return DatasetPlan(
            path, vds_shape, dtype, chunk_shape, vds_codecs, fill, described.attributes, names,
            references,
        )  # fmt: skip
    if layout == "compact":
        return inline(tuple(max(1, s) for s in shape))
    if layout == "external":
        chunk_shape, segments = plan_external(dataset, path, source, shape, dtype.itemsize, options)
        return planned(chunk_shape, plain_codecs, segments)
    if layout == "contiguous":
        offset = _contiguous_offset(dataset)
        if offset is None:
            _check_unwritten_readable(dataset, path)
        if offset is not None and nbytes <= options.inline_threshold:
            return inline(tuple(max(1, s) for s in shape))
        chunk_shape = contiguous_chunks(shape, dtype.itemsize, options)
        if offset is None:  # never written: every element reads as the fill value
            return planned(chunk_shape, plain_codecs, InlineChunks({}))
        block = Slabs(source.url, int(offset) + source.offset_shift, dtype.itemsize)
        return planned(chunk_shape, plain_codecs, block)
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
        return inline(chunk_shape, decoded)
    locations = chunk_locations(dataset, source)
    if not len(locations.offsets):
        _check_unwritten_readable(dataset, path)
    mask = common_mask(locations, dataset.shape, dataset.chunks) if filters else 0
    codecs = codecs_for(filters, dtype, path, skip_mask=mask)
    _verify_first_chunk(dataset, path, source, locations, mask, dtype, extent, chunk_shape, codecs)
    check_padding(
        path, source, locations, extent=extent, shape=shape, chunk_shape=chunk_shape,
        data_type=dtype, codecs=codecs, fill_value=fill,
    )  # fmt: skip
    chunk_bytes = math.prod(chunk_shape) * dtype.itemsize
    filtered = locations.masks == mask
    rewrite = lzf_rewrites(codecs, locations.sizes, filtered, chunk_bytes, path)
    chunks = stored_chunks(
        dataset, path, source, options, locations=locations, mask=mask, shape=shape,
        chunk_shape=chunk_shape, data_type=dtype, codecs=codecs, fill_value=fill,
        has_filters=bool(filters), rewrite=rewrite,
    )  # fmt: skip
    return planned(chunk_shape, tuple(codecs), chunks)


def fill_value(dataset: h5py.Dataset, storage: np.dtype) -> Any:
    """The Zarr fill value of a dataset stored as ``storage`` (raw bytes for records)."""
    fill = stored_fill(dataset)
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


def _check_unwritten_readable(dataset: h5py.Dataset | HeaderDataset, path: str) -> None:
    """Refuse a dataset with nothing written whose fill value is undefined when HDF5 refuses
    to read it ("dataset doesn't exist, no data can be read"): its references would otherwise
    serve zeros where h5py serves an error. One element read tells, without any I/O."""
    if not fill_is_undefined(dataset):
        return
    opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
    try:
        opened[(0,) * opened.ndim]
    except SourceError:
        raise
    except OSError as exc:
        raise UnsupportedFeatureError(
            f"dataset {path!r}: never written, with an undefined fill value: HDF5 reads no "
            "values from it"
        ) from exc


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
    if not len(locations.offsets):
        _check_unwritten_readable(dataset, path)
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
    except SourceError:
        raise  # the source could not be read: not a property of the dataset
    except Exception:  # any codec's failure (zlib.error, ...): HDF5 decides
        pass  # no codec reads these chunks here: HDF5 decodes them (or says it cannot)
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
