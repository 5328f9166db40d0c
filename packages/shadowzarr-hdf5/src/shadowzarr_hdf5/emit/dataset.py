"""Write one dataset's plan into the builder: the array's metadata, then its references."""

from __future__ import annotations

import numpy as np
from shadowzarr_spec import MISSING_CHUNK, BuilderError, RfsBuilder, UnsupportedFeatureError

from ..plan.dataset_plan import DatasetPlan, InlineChunks, References, Slabs, StoredChunks

__all__ = ["emit_dataset"]


def emit_dataset(builder: RfsBuilder, plan: DatasetPlan) -> None:
    """Add ``plan``'s array and its chunks; a reference the builder refuses raises
    UnsupportedFeatureError naming the dataset."""
    path = plan.path
    try:
        builder.add_array(
            path,
            shape=plan.shape,
            data_type=plan.data_type,
            chunk_shape=plan.chunk_shape,
            codecs=None if plan.codecs is None else list(plan.codecs),
            fill_value=plan.fill_value,
            attributes=plan.attributes,
            dimension_names=plan.dimension_names,
        )
        match plan.placement:
            case InlineChunks(chunks=chunks):
                for coords, data in chunks.items():
                    builder.add_inline_chunk(path, coords, data)
            case Slabs(url=url, offset=offset, itemsize=itemsize):
                if not plan.shape:  # a scalar: one chunk keyed "c"
                    builder.add_chunk(path, (), url, offset, itemsize)
                else:
                    builder.add_contiguous_chunks(
                        path, url=url, start=offset, shape=plan.shape,
                        chunk_shape=plan.chunk_shape, itemsize=itemsize,
                    )  # fmt: skip
            case References(chunks=references):
                for coords, url, offset, size in references:
                    builder.add_chunk(path, coords, url, offset, size)
            case StoredChunks() as stored:
                _add_stored(builder, plan, stored)
    except BuilderError as exc:
        raise UnsupportedFeatureError(f"dataset {path!r}: {exc}") from exc


def _add_stored(builder: RfsBuilder, plan: DatasetPlan, stored: StoredChunks) -> None:
    path = plan.path
    if stored.as_index:
        grid = tuple(-(-s // c) for s, c in zip(plan.shape, plan.chunk_shape, strict=True))
        table = np.full((*grid, 2), MISSING_CHUNK, dtype=np.uint64)
        index = tuple(stored.coords.T)
        table[(*index, 0)] = stored.offsets
        table[(*index, 1)] = stored.sizes
        builder.add_index(path, stored.url, table)
    else:
        builder.add_chunks(path, stored.coords, stored.url, stored.offsets, stored.sizes)
    for coords, data in stored.inline.items():
        builder.add_inline_chunk(path, coords, data)
