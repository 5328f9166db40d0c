"""Where one dataset's stored values are, decided before anything is written.

`plan_storage` reads first, in one pass: the storage layout and the chunk grid the references
use (chunked, contiguous cut into slabs along the first axis, compact, external segments,
virtual), the filter pipeline and chunk locations, the fill value; it checks what it can (a
first chunk against h5py, netCDF padding) and writes nothing. Its result is the dataset's
`DatasetPlan`: the array's metadata and where its chunks are (:mod:`.dataset_plan`).
"""

from __future__ import annotations

import math
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import h5py
import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.metadata import bytes_codec

from ..context import Options, Source
from ..format.messages import FilterSpec
from ..header_reader.dataset import HeaderDataset
from ..virtual_datasets import plan_virtual
from .chunks import chunk_locations, common_mask, read_filters, stored_chunks
from .dataset_plan import DatasetPlan, InlineChunks, Placement, References, Slabs
from .encode import held_inline
from .fill_values import fill_value
from .filters import filter_codecs, lzf_rewrites, small_filtered_values
from .types import TypePlan
from .values import as_storage, padded, read_values

__all__ = [
    "StorageLayout",
    "contiguous_chunks",
    "contiguous_offset",
    "external_segments",
    "plan_external",
    "plan_storage",
    "read_layout",
    "slab_rows",
    "storage_layout",
]


def plan_storage(
    dataset: h5py.Dataset,
    path: str,
    source: Source,
    options: Options,
    typed: TypePlan,
    shape: tuple[int, ...],
    attributes: Mapping[str, Any],
    names: tuple[str | None, ...] | None,
) -> DatasetPlan:
    """The plan of ``dataset`` (of type ``typed``, stored as the file lays it out) as an array
    of ``shape``."""
    dtype: np.dtype = typed.storage
    extra = typed.extra_shape
    nbytes = math.prod(dataset.shape) * dtype.itemsize * math.prod(extra)
    small = nbytes <= options.inline_threshold
    extent = tuple(int(n) for n in dataset.shape) + extra
    # Read first, in one pass: layout, filters, chunk locations, fill value.
    layout = read_layout(dataset, path, source, shape, dtype.itemsize, extra, options)
    chunk_shape = layout.chunk_shape
    filters = layout.filters
    locations = None
    mask = 0
    if layout.kind == "chunked" and (filters or not small):
        locations = chunk_locations(dataset, source)
        mask = common_mask(locations, dataset.shape, dataset.chunks) if filters else 0
    unwritten = (layout.kind == "contiguous" and layout.block is None) or (
        locations is not None and not len(locations.offsets)
    )
    fill = fill_value(dataset, dtype, path, unwritten=unwritten)
    plain_codecs = (bytes_codec(dtype),)
    codecs = list(plain_codecs)
    rewrite = None
    if locations is not None and not small:
        codecs += filter_codecs(filters, dtype, path, skip_mask=mask)
        chunk_bytes = math.prod(chunk_shape) * dtype.itemsize
        rewrite = lzf_rewrites(codecs, locations.sizes, locations.masks == mask, chunk_bytes, path)

    def planned(
        chunk_shape: tuple[int, ...], codecs: tuple[dict[str, Any], ...], placement: Placement
    ) -> DatasetPlan:
        return DatasetPlan(
            path, shape, dtype, chunk_shape, codecs, fill, attributes, names, placement
        )

    def inline(chunk_shape: tuple[int, ...], decoded: Any = None) -> DatasetPlan:
        found = read_values(dataset, source) if decoded is None else decoded
        values = padded(as_storage(found, dtype), shape, fill)
        chunks = held_inline(
            values, shape=shape, data_type=dtype, chunk_shape=chunk_shape, codecs=plain_codecs,
            fill_value=fill,
        )  # fmt: skip
        return planned(chunk_shape, plain_codecs, InlineChunks(chunks))

    if layout.kind == "compact":
        return inline(chunk_shape)
    if layout.kind == "external":
        assert layout.block is not None
        return planned(chunk_shape, plain_codecs, layout.block)
    if layout.kind == "contiguous":
        if layout.block is None:  # never written: every element reads as the fill value
            return planned(chunk_shape, plain_codecs, InlineChunks({}))
        if small:
            return inline(tuple(max(1, s) for s in shape))
        return planned(chunk_shape, plain_codecs, layout.block)
    if layout.kind == "virtual":
        if extra:
            raise UnsupportedFeatureError(f"dataset {path!r}: a virtual dataset of array types")
        opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
        vds_shape = tuple(int(n) for n in opened.shape)
        vds_chunks, vds_codecs, references = plan_virtual(opened, path, source, dtype, fill)
        return DatasetPlan(
            path, vds_shape, dtype, vds_chunks, vds_codecs, fill, attributes, names, references
        )
    if locations is None:  # small, without filters: its values as h5py reads them
        return inline(chunk_shape)
    if small:
        decoded = small_filtered_values(
            dataset, path, source, filters, locations, shape=extent, chunk_shape=chunk_shape,
            data_type=dtype, fill_value=fill, plain_codecs=plain_codecs,
        )  # fmt: skip
        return inline(chunk_shape, decoded)
    chunks = stored_chunks(
        dataset, path, source, options, locations=locations, mask=mask, shape=shape,
        chunk_shape=chunk_shape, data_type=dtype, codecs=codecs, fill_value=fill,
        has_filters=bool(filters), rewrite=rewrite,
    )  # fmt: skip
    return planned(chunk_shape, tuple(codecs), chunks)


_SLAB_DIVISOR_TOLERANCE = 0.25
"""A divisor of the first axis within this fraction below the target slab height is used."""


@dataclass(frozen=True, slots=True)
class StorageLayout:
    """How a dataset is laid out, and the chunk grid its references use."""

    kind: str
    """'chunked', 'contiguous', 'compact', 'external' or 'virtual'."""
    chunk_shape: tuple[int, ...]
    """HDF5's chunks (chunked), slabs of the first axis (contiguous, external), the whole array
    (compact); empty for a virtual dataset, whose sources decide."""
    block: Slabs | References | None = None
    """A written contiguous block, or the external segments; None otherwise."""
    filters: tuple[FilterSpec, ...] = ()
    """The filter pipeline of a chunked dataset, in the order HDF5 applies it when writing."""


def read_layout(
    dataset: h5py.Dataset,
    path: str,
    source: Source,
    shape: tuple[int, ...],
    itemsize: int,
    extra: tuple[int, ...],
    options: Options,
) -> StorageLayout:
    """The layout of ``dataset`` (its array of ``shape`` holds elements of ``itemsize`` bytes;
    ``extra``: the trailing axes of an HDF5 array type)."""
    kind = storage_layout(dataset)
    if kind == "virtual":
        return StorageLayout(kind, ())
    if kind == "compact":
        return StorageLayout(kind, tuple(max(1, s) for s in shape))
    if kind == "external":
        chunk_shape, segments = plan_external(dataset, path, source, shape, itemsize, options)
        return StorageLayout(kind, chunk_shape, segments)
    if kind == "contiguous":
        offset = contiguous_offset(dataset)
        block = (
            None if offset is None else Slabs(source.url, offset + source.offset_shift, itemsize)
        )
        return StorageLayout(kind, contiguous_chunks(shape, itemsize, options), block)
    filters = dataset.filters if isinstance(dataset, HeaderDataset) else read_filters(dataset)
    return StorageLayout("chunked", tuple(dataset.chunks) + extra, filters=filters)


def storage_layout(dataset: h5py.Dataset | HeaderDataset) -> str:
    """'chunked', 'contiguous', 'compact', 'external' or 'virtual'."""
    if isinstance(dataset, HeaderDataset):
        return dataset.layout.kind
    plist = dataset.id.get_create_plist()
    if plist.get_external_count() > 0:
        return "external"
    layout = plist.get_layout()
    return {
        h5py.h5d.CHUNKED: "chunked",
        h5py.h5d.CONTIGUOUS: "contiguous",
        h5py.h5d.COMPACT: "compact",
        h5py.h5d.VIRTUAL: "virtual",
    }.get(layout, "unknown")


def slab_rows(first_axis: int, row_bytes: int, target_bytes: int) -> int:
    """Rows per slab: about ``target_bytes``, a divisor of the first axis when one is close."""
    if first_axis <= 0:
        return 1
    target = max(1, target_bytes // max(1, row_bytes))
    if target >= first_axis:
        return first_axis
    lowest = max(1, int(target * (1 - _SLAB_DIVISOR_TOLERANCE)))
    for rows in range(target, lowest - 1, -1):
        if first_axis % rows == 0:
            return rows
    return target


def contiguous_chunks(shape: tuple[int, ...], itemsize: int, options: Options) -> tuple[int, ...]:
    if not shape:
        return ()
    row_bytes = math.prod(shape[1:]) * itemsize
    rows = slab_rows(shape[0], row_bytes, options.contiguous_chunk_bytes)
    return (max(1, rows), *(max(1, s) for s in shape[1:]))


def external_segments(
    dataset: h5py.Dataset | HeaderDataset, source: Source
) -> list[tuple[str, int, int]]:
    """(url, offset, size) of each external-storage segment, in order."""
    plist = dataset.id.get_create_plist()
    segments = []
    for i in range(plist.get_external_count()):
        name, offset, size = plist.get_external(i)
        text = name.decode("utf-8") if isinstance(name, bytes) else str(name)
        segments.append((_resolve(source.base, text), int(offset), int(size)))
    return segments


def plan_external(
    dataset: h5py.Dataset | HeaderDataset,
    path: str,
    source: Source,
    shape: tuple[int, ...],
    itemsize: int,
    options: Options,
) -> tuple[tuple[int, ...], Slabs | References]:
    """The chunk shape and references of data in external files: one segment is one contiguous
    block (cut into slabs); several must each hold the same whole number of rows."""
    segments = external_segments(dataset, source)
    total = math.prod(shape) * itemsize
    if len(segments) == 1 or (segments and segments[0][2] >= total):
        url, offset, _ = segments[0]
        return contiguous_chunks(shape, itemsize, options), Slabs(url, offset, itemsize)
    row_bytes = math.prod(shape[1:]) * itemsize if shape else itemsize
    sizes = {size for _, _, size in segments[:-1]}
    if not shape or len(sizes) != 1 or next(iter(sizes)) % row_bytes:
        raise UnsupportedFeatureError(
            f"dataset {path!r}: external storage segments of sizes {sorted(sizes)} do not split "
            "into whole rows of equal count"
        )
    rows = next(iter(sizes)) // row_bytes
    references = []
    for i, (url, offset, size) in enumerate(segments):
        if i * rows >= shape[0]:
            break
        coords = (i, *(0 for _ in shape[1:]))
        references.append((coords, url, offset, min(size, rows * row_bytes)))
    return (max(1, rows), *shape[1:]), References(tuple(references))


def _resolve(base: str, name: str) -> str:
    if "://" in base:
        return urljoin(base if base.endswith("/") else base + "/", name)
    if os.path.isabs(name):
        return name
    return posixpath.normpath(os.path.join(base, name))


def contiguous_offset(dataset: h5py.Dataset | HeaderDataset) -> int | None:
    """Where contiguous data starts (relative address; None when never written)."""
    if isinstance(dataset, HeaderDataset):
        return dataset.layout.address
    offset = dataset.id.get_offset()
    return None if offset is None else int(offset)
