"""Write a dataset's storage plan: the array's metadata, then its references."""

from __future__ import annotations

import math
from typing import Any

import h5py
from shadowzarr_spec import BuilderError, RfsBuilder, UnsupportedFeatureError

from ..context import Options, Source
from ..header_reader.dataset import HeaderDataset
from ..netcdf_dimensions import padded
from ..plan.filters import lzf_rewrites
from ..plan.storage import (
    ContiguousBlock,
    ExternalSegments,
    InlineValues,
    StoragePlan,
    StoredChunks,
    VirtualSources,
)
from ..plan.values import read_values
from ..virtual_datasets import add_virtual
from .chunked import add_chunked
from .contiguous import add_contiguous, add_external
from .inline import add_inline
from .values import as_storage

__all__ = ["emit_storage"]


def emit_storage(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset,
    source: Source,
    options: Options,
    storage: StoragePlan,
    attributes: dict[str, Any],
    names: list[str | None] | None,
) -> None:
    """Write ``storage``: the array's metadata, then its references (``dataset`` is read only
    for values a placement leaves to be read now: inline values, external segments, chunks
    re-encoded inline, a virtual dataset's mappings)."""
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
            found = read_values(dataset, source) if decoded is None else decoded
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
