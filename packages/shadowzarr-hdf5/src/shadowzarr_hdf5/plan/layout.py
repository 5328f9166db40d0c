"""A dataset's storage layout and the chunk grid its references use: chunked (with its filter
pipeline), contiguous (cut into slabs along the first axis), compact, external (the segments'
files and offsets), virtual.
"""

from __future__ import annotations

import math
import os
import posixpath
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import h5py
from shadowzarr_spec import UnsupportedFeatureError

from ..context import Options, Source
from ..format.messages import FilterSpec
from ..header_reader.dataset import HeaderDataset
from .dataset_plan import References, Slabs

__all__ = [
    "StorageLayout",
    "contiguous_chunks",
    "contiguous_offset",
    "external_segments",
    "plan_external",
    "read_filters",
    "read_layout",
    "slab_rows",
    "storage_layout",
]

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


def read_filters(dataset: Any) -> tuple[FilterSpec, ...]:
    """The filter pipeline of an h5py dataset, in the order HDF5 applies it when writing."""
    plist = dataset.id.get_create_plist()
    filters = []
    for i in range(plist.get_nfilters()):
        code, flags, values, name = plist.get_filter(i)
        text = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        filters.append(FilterSpec(int(code), int(flags), tuple(int(v) for v in values), text))
    return tuple(filters)
