"""Where one dataset's stored values are, decided before anything is written.

`plan_storage` reads what it needs (layout, fill value, filters, chunk locations; the values of
small datasets) and checks what it can (a first chunk against h5py, netCDF padding); it writes
nothing. Its result is the dataset's `DatasetPlan`: the array's metadata and where its chunks
are (:mod:`.dataset_plan`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.metadata import bytes_codec

from ..context import Options, Source
from ..header_reader.dataset import HeaderDataset
from ..virtual_datasets import plan_virtual
from .chunks import chunk_locations, common_mask, stored_chunks
from .dataset_plan import DatasetPlan, InlineChunks, Placement
from .encode import held_inline
from .fill_values import fill_value
from .filters import (
    filter_codecs,
    lzf_rewrites,
    small_filtered_values,
)
from .layout import read_layout
from .types import TypePlan
from .values import as_storage, padded, read_values

__all__ = ["plan_storage"]


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
