"""Where a dataset's bytes are, as chunk references: chunked, contiguous, compact, external.

Chunked datasets keep HDF5's chunk grid (HDF5 always stores whole chunks, so partial edge
chunks read like Zarr's). A contiguous dataset is one block: small ones are inlined, larger ones
are cut into slabs along the first axis through one gen entry. Compact data lives in the object
header and is inlined. External storage points into the external files.
"""

from __future__ import annotations

import math
import os
import posixpath
from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin

import h5py
import numpy as np
from shadowzarr_spec import MISSING_CHUNK, RfsBuilder, UnsupportedFeatureError

from .context import ChunkLocations, Options, Source
from .filters import lzf_literal_chunks
from .header_reader.dataset import HeaderDataset
from .inline import encode_chunks

__all__ = [
    "add_chunked",
    "add_contiguous",
    "add_external",
    "add_inline",
    "chunk_locations",
    "slab_rows",
    "storage_layout",
]

_SLAB_DIVISOR_TOLERANCE = 0.25
"""A divisor of the first axis within this fraction below the target slab height is used."""


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


def chunk_locations(dataset: h5py.Dataset, source: Source) -> ChunkLocations:
    """Every stored chunk of a chunked dataset (parsed ahead, or through ``chunk_iter``)."""
    table = source.tables.get(dataset.name)
    if table is not None:
        return table.locations  # parsed: offsets already absolute
    count = dataset.id.get_num_chunks()
    rank = len(dataset.shape)
    coords = np.zeros((count, rank), dtype=np.int64)
    offsets = np.zeros(count, dtype=np.uint64)
    sizes = np.zeros(count, dtype=np.uint64)
    masks = np.zeros(count, dtype=np.uint32)
    chunk_shape = dataset.chunks
    position = 0

    def visit(info: Any) -> None:
        nonlocal position
        coords[position] = [o // c for o, c in zip(info.chunk_offset, chunk_shape, strict=True)]
        offsets[position] = info.byte_offset + source.offset_shift
        sizes[position] = info.size
        masks[position] = info.filter_mask
        position += 1

    if count:
        dataset.id.chunk_iter(visit)
    coords = coords[:position]
    if _mislabelled(dataset, coords, offsets[:position], source):
        coords = _relabel_extensible(dataset, coords)
    return ChunkLocations(coords, offsets[:position], sizes[:position], masks[:position])


def _unlimited_axis(dataset: h5py.Dataset) -> int | None:
    maxshape = dataset.maxshape or ()
    unlimited = [i for i, m in enumerate(maxshape) if m is None]
    return unlimited[0] if len(unlimited) == 1 else None


def _mislabelled(
    dataset: h5py.Dataset, coords: np.ndarray, offsets: np.ndarray, source: Source
) -> bool:
    """HDF5 mislabels chunks of extensible-array indexes whose unlimited axis is not the
    first (chunk_iter reports C order over an infinite unlimited axis). Compare one chunk
    h5py reads by coordinates with the bytes at the offset chunk_iter gave for it."""
    axis = _unlimited_axis(dataset)
    if axis in (None, 0) or not len(coords) or source.read_bytes is None:
        return False
    for i in range(min(len(coords), 4)):
        scaled = tuple(int(c) * n for c, n in zip(coords[i], dataset.chunks, strict=True))
        try:
            _mask, stored = dataset.id.read_direct_chunk(scaled)
        except (OSError, ValueError):
            return True  # no chunk at the reported coordinates
        if source.read_bytes(int(offsets[i]), len(stored)) != bytes(stored):
            return True
    return False


def _relabel_extensible(dataset: h5py.Dataset, coords: np.ndarray) -> np.ndarray:
    """The true coordinates of chunk_iter's mislabelled ones (hdf5-chunk-indexes §6.1)."""
    axis = _unlimited_axis(dataset)
    assert axis is not None
    counts = [
        -(-int(m) // c) if m is not None else 0
        for m, c in zip(dataset.maxshape, dataset.chunks, strict=True)
    ]
    # Linear element index: C order over the max grid, the unlimited axis infinitely long,
    # so only the unlimited axis and those after it contribute.
    linear = np.zeros(len(coords), dtype=np.int64)
    for d in range(axis, len(counts)):
        stride = int(np.prod(counts[d + 1 :], dtype=np.int64)) if d + 1 < len(counts) else 1
        linear += coords[:, d] * stride
    # Element order of an extensible array: the unlimited axis first, the others in order.
    out = np.zeros_like(coords)
    rest = linear.copy()
    for d in reversed([d for d in range(len(counts)) if d != axis]):
        out[:, d] = rest % counts[d]
        rest //= counts[d]
    out[:, axis] = rest
    return out


def common_mask(locations: ChunkLocations, shape: Sequence[int], chunk_shape: Sequence[int]) -> int:
    """The filter mask most stored chunks share (0 when there are none): the array's codecs
    skip those filters, and chunks with another mask are re-encoded inline."""
    masks = locations.masks[_inside_grid(locations.coords, shape, chunk_shape)]
    if masks.size == 0:
        return 0
    values, counts = np.unique(masks, return_counts=True)
    return int(values[np.argmax(counts)])


def add_chunked(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset,
    source: Source,
    options: Options,
    *,
    locations: ChunkLocations,
    mask: int,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    data_type: Any,
    codecs: list[dict[str, Any]],
    fill_value: Any,
    has_filters: bool,
    rewrite: np.ndarray | None = None,
) -> None:
    """References (or an index) for the chunks of a chunked dataset whose codecs skip the
    filters of ``mask``; chunks flagged in ``rewrite`` are re-encoded inline too."""
    extra = len(shape) - len(dataset.shape)
    # Chunks that meet the HDF5 extent: a netCDF variable's shape may reach further (its
    # unlimited dimension's length), but chunks past its extent are stale if they exist.
    in_grid = _inside_grid(locations.coords, tuple(dataset.shape), chunk_shape)
    skipped = (locations.masks != mask) & has_filters & in_grid
    if rewrite is not None:
        skipped |= rewrite & in_grid
    stored = in_grid & ~skipped
    grid = tuple(-(-s // c) for s, c in zip(shape, chunk_shape, strict=True))
    threshold = options.chunk_index_threshold
    coords = locations.coords[stored]
    if extra:
        coords = np.concatenate([coords, np.zeros((len(coords), extra), dtype=np.int64)], axis=1)
    offsets, sizes = locations.offsets[stored], locations.sizes[stored]
    if threshold is not None and math.prod(grid) > threshold:
        table = np.full((*grid, 2), MISSING_CHUNK, dtype=np.uint64)
        index = tuple(coords.T)
        table[(*index, 0)] = offsets
        table[(*index, 1)] = sizes
        builder.add_index(path, source.url, table)
    else:
        builder.add_chunks(path, coords, source.url, offsets, sizes)
    if skipped.any():
        # Chunks written with other filters skipped: decode through h5py, re-encode inline.
        regions = [tuple(c) + (0,) * extra for c in locations.coords[skipped].tolist()]
        if codecs[-1].get("name") == "imagecodecs_lzf":
            lzf_chunks = lzf_literal_chunks(
                _Padded(dataset, extra), regions, shape, data_type, chunk_shape, codecs, fill_value
            )
            for c, data in lzf_chunks.items():
                builder.add_inline_chunk(path, c, data)
            return
        try:
            encoded = encode_chunks(
                _Padded(dataset, extra),
                shape=shape,
                data_type=data_type,
                chunk_shape=chunk_shape,
                codecs=codecs,
                fill_value=fill_value,
                regions=regions,
            )
        except (RuntimeError, ValueError) as exc:
            raise UnsupportedFeatureError(
                f"dataset {path!r}: chunks skip different filters (HDF5 filter masks), and "
                f"re-encoding them failed: {exc}"
            ) from exc
        for c, data in encoded.items():
            builder.add_inline_chunk(path, c, data)


def _inside_grid(
    coords: np.ndarray, shape: Sequence[int], chunk_shape: Sequence[int]
) -> np.ndarray:
    """Chunks inside the current extent (a shrunk dataset keeps chunks beyond its shape)."""
    if coords.size == 0:
        return np.zeros(len(coords), dtype=bool)
    grid = np.array([-(-s // c) for s, c in zip(shape, chunk_shape, strict=False)], dtype=np.int64)
    return np.all(coords < grid, axis=1)


class _Padded:
    """An h5py dataset sliced only on its own axes (array-type axes come whole)."""

    def __init__(self, dataset: h5py.Dataset, extra: int) -> None:
        self._dataset = dataset
        self._extra = extra

    def __getitem__(self, region: tuple[slice, ...]) -> np.ndarray:
        own = region[: len(region) - self._extra] if self._extra else region
        return np.asarray(self._dataset[own if own else ()])


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


def add_contiguous(
    builder: RfsBuilder,
    path: str,
    source: Source,
    *,
    offset: int,
    url: str | None = None,
    shape: tuple[int, ...],
    itemsize: int,
    options: Options,
) -> tuple[int, ...]:
    """Slab references for a contiguous block at ``offset``; returns the chunk shape used.

    The array must have been added with the returned chunk shape: call :func:`contiguous_chunks`
    first.
    """
    chunk_shape = contiguous_chunks(shape, itemsize, options)
    if math.prod(shape) == 0:
        return chunk_shape
    if not shape:  # a scalar: one chunk keyed "c"
        builder.add_chunk(path, (), url or source.url, offset, itemsize)
        return chunk_shape
    builder.add_contiguous_chunks(
        path,
        url=url or source.url,
        start=offset,
        shape=shape,
        chunk_shape=chunk_shape,
        itemsize=itemsize,
    )
    return chunk_shape


def contiguous_chunks(shape: tuple[int, ...], itemsize: int, options: Options) -> tuple[int, ...]:
    if not shape:
        return ()
    row_bytes = math.prod(shape[1:]) * itemsize
    rows = slab_rows(shape[0], row_bytes, options.contiguous_chunk_bytes)
    return (max(1, rows), *(max(1, s) for s in shape[1:]))


def add_inline(
    builder: RfsBuilder,
    path: str,
    values: Any,
    *,
    shape: tuple[int, ...],
    data_type: Any,
    chunk_shape: tuple[int, ...],
    codecs: list[dict[str, Any]],
    fill_value: Any,
) -> None:
    """Every chunk of ``values`` held in the references."""
    if math.prod(shape) == 0:
        return
    encoded = encode_chunks(
        np.asarray(values).reshape(shape),
        data_type=data_type,
        chunk_shape=chunk_shape,
        codecs=codecs,
        fill_value=fill_value,
    )
    for coords, data in encoded.items():
        builder.add_inline_chunk(path, coords, data)


def external_segments(dataset: h5py.Dataset, source: Source) -> list[tuple[str, int, int]]:
    """(url, offset, size) of each external-storage segment, in order."""
    plist = dataset.id.get_create_plist()
    segments = []
    for i in range(plist.get_external_count()):
        name, offset, size = plist.get_external(i)
        text = name.decode("utf-8") if isinstance(name, bytes) else str(name)
        segments.append((_resolve(source.base, text), int(offset), int(size)))
    return segments


def add_external(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset,
    source: Source,
    *,
    shape: tuple[int, ...],
    itemsize: int,
    options: Options,
) -> tuple[int, ...]:
    """References into the external files; the chunk shape is one segment (or one slab)."""
    segments = external_segments(dataset, source)
    total = math.prod(shape) * itemsize
    if len(segments) == 1 or (segments and segments[0][2] >= total):
        url, offset, _ = segments[0]
        return add_contiguous(
            builder, path, source, offset=offset, url=url, shape=shape, itemsize=itemsize,
            options=options,
        )  # fmt: skip
    row_bytes = math.prod(shape[1:]) * itemsize if shape else itemsize
    sizes = {size for _, _, size in segments[:-1]}
    if not shape or len(sizes) != 1 or next(iter(sizes)) % row_bytes:
        raise UnsupportedFeatureError(
            f"dataset {path!r}: external storage segments of sizes {sorted(sizes)} do not split "
            "into whole rows of equal count"
        )
    rows = next(iter(sizes)) // row_bytes
    chunk_shape = (rows, *shape[1:])
    for i, (url, offset, size) in enumerate(segments):
        if i * rows >= shape[0]:
            break
        builder.add_chunk(
            path, (i, *(0 for _ in shape[1:])), url, offset, min(size, rows * row_bytes)
        )
    return chunk_shape


def external_chunk_shape(
    dataset: h5py.Dataset, source: Source, shape: tuple[int, ...], itemsize: int, options: Options
) -> tuple[int, ...]:
    segments = external_segments(dataset, source)
    total = math.prod(shape) * itemsize
    if len(segments) == 1 or (segments and segments[0][2] >= total):
        return contiguous_chunks(shape, itemsize, options)
    row_bytes = math.prod(shape[1:]) * itemsize if shape else itemsize
    return (max(1, segments[0][2] // max(1, row_bytes)), *shape[1:])


def _resolve(base: str, name: str) -> str:
    if "://" in base:
        return urljoin(base if base.endswith("/") else base + "/", name)
    if os.path.isabs(name):
        return name
    return posixpath.normpath(os.path.join(base, name))
