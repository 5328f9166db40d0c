"""Every stored chunk of a chunked dataset: the filter pipeline they went through; where each is
(parsed ahead, or h5py's ``chunk_iter`` relabelled where HDF5 mislabels it); the filter mask most
chunks share; which chunks are referenced where they are
and which are re-encoded inline.

Chunked datasets keep HDF5's chunk grid (HDF5 always stores whole chunks, so partial edge chunks
read like Zarr's). Chunks whose filter mask differs from the array's codecs, and LZF chunks
compressed beyond what ``imagecodecs_lzf`` decodes, are re-encoded and held inline."""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Sequence
from typing import Any

import h5py
import numpy as np
import zarr
from shadowzarr_spec import SourceError, UnsupportedFeatureError
from shadowzarr_spec.keys import chunk_key

from ..context import ChunkLocations, Options, Source
from ..format.messages import FilterSpec
from ..native_decode import load_filter_plugins
from .dataset_plan import StoredChunks
from .encode import (
    MemoryArray,
    chunk_region,
    encode_chunks,
    lzf_literal_chunks,
    memory_array_store,
)

__all__ = ["chunk_locations", "common_mask", "inside_grid", "read_filters", "stored_chunks"]

logger = logging.getLogger(__name__)


def read_filters(dataset: Any) -> tuple[FilterSpec, ...]:
    """The filter pipeline of an h5py dataset, in the order HDF5 applies it when writing."""
    plist = dataset.id.get_create_plist()
    filters = []
    for i in range(plist.get_nfilters()):
        code, flags, values, name = plist.get_filter(i)
        text = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        filters.append(FilterSpec(int(code), int(flags), tuple(int(v) for v in values), text))
    return tuple(filters)


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
    masks = locations.masks[inside_grid(locations.coords, shape, chunk_shape)]
    if masks.size == 0:
        return 0
    values, counts = np.unique(masks, return_counts=True)
    return int(values[np.argmax(counts)])


def inside_grid(coords: np.ndarray, shape: Sequence[int], chunk_shape: Sequence[int]) -> np.ndarray:
    """Chunks inside the current extent (a shrunk dataset keeps chunks beyond its shape)."""
    if coords.size == 0:
        return np.zeros(len(coords), dtype=bool)
    grid = np.array([-(-s // c) for s, c in zip(shape, chunk_shape, strict=False)], dtype=np.int64)
    return np.all(coords < grid, axis=1)


def stored_chunks(
    dataset: h5py.Dataset,
    path: str,
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
) -> StoredChunks:
    """The chunks of a chunked dataset whose codecs skip the filters of ``mask``, referenced
    where they are; those with another mask, or flagged in ``rewrite``, read through h5py and
    re-encoded to be held inline. Chunks that would be misread are refused first
    (`_check_stored`)."""
    extra = len(shape) - len(dataset.shape)
    # Chunks that meet the HDF5 extent: a netCDF variable's shape may reach further (its
    # unlimited dimension's length), but chunks past its extent are stale if they exist.
    in_grid = inside_grid(locations.coords, tuple(dataset.shape), chunk_shape)
    values = _Padded(dataset, extra)
    readable = locations.masks == mask
    if rewrite is not None:
        readable &= ~rewrite
    _check_stored(
        dataset, path, source, locations, readable=readable,
        extent=(*dataset.shape, *shape[len(dataset.shape) :]), shape=shape,
        chunk_shape=chunk_shape, data_type=data_type, codecs=codecs, fill_value=fill_value,
    )  # fmt: skip
    skipped = (locations.masks != mask) & has_filters & in_grid
    if rewrite is not None:
        skipped |= rewrite & in_grid
    stored = in_grid & ~skipped
    grid = tuple(-(-s // c) for s, c in zip(shape, chunk_shape, strict=True))
    threshold = options.manifest_threshold
    coords = locations.coords[stored]
    if extra:
        coords = np.concatenate([coords, np.zeros((len(coords), extra), dtype=np.int64)], axis=1)
    inline: dict[tuple[int, ...], bytes] = {}
    if skipped.any():
        # Chunks written with other filters skipped: decode through h5py, re-encode inline.
        regions = [tuple(c) + (0,) * extra for c in locations.coords[skipped].tolist()]
        if codecs[-1].get("name") == "imagecodecs_lzf":
            inline = lzf_literal_chunks(
                values, regions, shape, data_type, chunk_shape, codecs, fill_value
            )
        else:
            try:
                inline = encode_chunks(
                    values, shape=shape, data_type=data_type,
                    chunk_shape=chunk_shape, codecs=codecs, fill_value=fill_value,
                    regions=regions,
                )  # fmt: skip
            except (RuntimeError, ValueError) as exc:
                raise UnsupportedFeatureError(
                    f"dataset {path!r}: chunks skip different filters (HDF5 filter masks), and "
                    f"re-encoding them failed: {exc}"
                ) from exc
    return StoredChunks(
        url=source.url,
        coords=coords,
        offsets=locations.offsets[stored],
        sizes=locations.sizes[stored],
        as_index=threshold is not None and math.prod(grid) > threshold,
        inline=inline,
    )


class _Padded:
    """An h5py dataset sliced only on its own axes (array-type axes come whole)."""

    def __init__(self, dataset: h5py.Dataset, extra: int) -> None:
        self._dataset = dataset
        self._extra = extra

    def __getitem__(self, region: tuple[slice, ...]) -> np.ndarray:
        own = region[: len(region) - self._extra] if self._extra else region
        return np.asarray(self._dataset[own if own else ()])


_CHECKED = ("imagecodecs_", "shadowzarr.")
"""Codecs outside zarr-python's own set: their handling of HDF5's framing varies by data type."""


def _check_stored(
    dataset: h5py.Dataset,
    path: str,
    source: Source,
    locations: ChunkLocations,
    *,
    readable: np.ndarray,
    extent: tuple[int, ...],
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    data_type: np.dtype,
    codecs: list[dict[str, Any]],
    fill_value: Any,
) -> None:
    """Refuse the array rather than let its stored chunks be misread: the first chunk that
    codecs outside zarr-python's own set read (among ``readable``) must decode to h5py's values,
    and a chunk straddling the HDF5 ``extent`` of a netCDF variable that reaches further must
    hold the fill value past it (HDF5 initialises new chunks with it)."""
    read_bytes = source.read_bytes
    if read_bytes is None:
        return
    extra = (0,) * (len(shape) - locations.coords.shape[1])
    usable = np.flatnonzero(readable)
    if usable.size and any(str(c.get("name", "")).startswith(_CHECKED) for c in codecs):
        i = int(usable[0])
        coords = (*locations.coords[i].tolist(), *extra)
        region = chunk_region(coords, chunk_shape, shape)
        stored = {
            chunk_key("", coords): read_bytes(int(locations.offsets[i]), int(locations.sizes[i]))
        }
        store = memory_array_store(MemoryArray(shape, data_type, chunk_shape, codecs, None), stored)
        own = region[: dataset.ndim]
        load_filter_plugins()
        try:
            expected = np.asarray(dataset[own] if own else dataset[()])
        except SourceError:
            raise
        except OSError:
            # HDF5 has no plugin for a filter here, so nothing to compare with: the codecs are
            # the ones the test suite checks against the filters' own plugins.
            logger.info("%s: not verified, HDF5 cannot decode its chunks here", path)
        else:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    actual = zarr.open_array(store, mode="r", zarr_format=3)[region]
            except Exception as exc:
                raise UnsupportedFeatureError(
                    f"dataset {path!r}: the codecs {[c['name'] for c in codecs]} fail on its "
                    f"chunks: {exc}"
                ) from exc
            if expected.tobytes() != np.asarray(actual).astype(expected.dtype).tobytes():
                raise UnsupportedFeatureError(
                    f"dataset {path!r}: the codecs {[c['name'] for c in codecs]} decode its "
                    "chunks to other values than HDF5's filters"
                )
    if extent == shape:
        return
    fill = np.asarray(fill_value if fill_value is not None else 0).astype(data_type)
    array = MemoryArray(shape, data_type, chunk_shape, codecs, fill_value)
    for coords, offset, size in zip(
        locations.coords.tolist(), locations.offsets.tolist(), locations.sizes.tolist(),
        strict=True,
    ):  # fmt: skip
        full = (*coords, *extra)
        region = chunk_region(full, chunk_shape, shape)
        if all(r.stop <= e for r, e in zip(region, extent, strict=True)):
            continue  # inside the extent
        if any(r.start >= e for r, e in zip(region, extent, strict=True)):
            continue  # wholly past it: not referenced (stale if stored)
        store = memory_array_store(array, {chunk_key("", full): read_bytes(int(offset), int(size))})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = np.asarray(zarr.open_array(store, mode="r", zarr_format=3)[region])
        inside = tuple(slice(0, max(0, e - r.start)) for r, e in zip(region, extent, strict=True))
        beyond = np.ones(values.shape, dtype=bool)
        beyond[inside] = False
        same = values[beyond] == fill
        if values.dtype.kind in "fc":
            same |= np.isnan(values[beyond]) & np.isnan(fill)
        if not np.all(same):
            raise UnsupportedFeatureError(
                f"dataset {path!r}: a chunk holds other values than the fill value past the "
                "HDF5 extent, where netCDF readers give the fill value"
            )
