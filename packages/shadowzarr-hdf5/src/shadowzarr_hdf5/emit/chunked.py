"""References (or a chunk index) for HDF5's own chunks, where they are.

Chunked datasets keep HDF5's chunk grid (HDF5 always stores whole chunks, so partial edge chunks
read like Zarr's). Chunks whose filter mask differs from the array's codecs, and LZF chunks
compressed beyond what ``imagecodecs_lzf`` decodes, are re-encoded and held inline.
"""

from __future__ import annotations

import math
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import MISSING_CHUNK, RfsBuilder, UnsupportedFeatureError

from ..context import ChunkLocations, Options, Source
from ..plan.chunks import inside_grid
from .inline import encode_chunks

__all__ = ["add_chunked", "literal_lzf", "lzf_literal_chunks"]


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
    in_grid = inside_grid(locations.coords, tuple(dataset.shape), chunk_shape)
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


class _Padded:
    """An h5py dataset sliced only on its own axes (array-type axes come whole)."""

    def __init__(self, dataset: h5py.Dataset, extra: int) -> None:
        self._dataset = dataset
        self._extra = extra

    def __getitem__(self, region: tuple[slice, ...]) -> np.ndarray:
        own = region[: len(region) - self._extra] if self._extra else region
        return np.asarray(self._dataset[own if own else ()])


_LITERAL_RUN = 32  # an LZF control byte below 32 copies (byte + 1) literal bytes


def literal_lzf(data: bytes) -> bytes:
    """``data`` as an LZF stream of literal runs (decodes to ``data`` with any LZF decoder)."""
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(view), _LITERAL_RUN):
        block = view[start : start + _LITERAL_RUN]
        out.append(len(block) - 1)
        out += block
    return bytes(out)


def lzf_literal_chunks(
    values: Any,
    regions: list[tuple[int, ...]],
    shape: tuple[int, ...],
    data_type: Any,
    chunk_shape: tuple[int, ...],
    codecs: list[dict[str, Any]],
    fill_value: Any,
) -> dict[tuple[int, ...], bytes]:
    """Chunks of an LZF array (``values``: anything sliceable) re-encoded as literal LZF;
    chunks of only fill value left out."""
    fill = np.asarray(
        fill_value if fill_value is not None else np.zeros((), dtype=data_type), dtype=data_type
    )
    kept = []
    for coords in regions:
        region = tuple(
            slice(c * n, min((c + 1) * n, s))
            for c, n, s in zip(coords, chunk_shape, shape, strict=True)
        )
        if not _only_fill(np.asarray(values[region]), fill):
            kept.append(coords)
    encoded = encode_chunks(
        values, shape=shape, data_type=data_type, chunk_shape=chunk_shape,
        codecs=codecs[:-1], fill_value=fill_value, regions=kept,
    )  # fmt: skip
    return {c: literal_lzf(data) for c, data in encoded.items()}


def _only_fill(block: np.ndarray, fill: np.ndarray) -> bool:
    if block.dtype.kind == "V" or fill.dtype.kind == "V":
        # records: h5py reads them structured, the array's type is raw bytes; compare bytes
        whole = np.ascontiguousarray(block)
        return (
            whole.dtype.itemsize == fill.itemsize and whole.tobytes() == fill.tobytes() * whole.size
        )
    same = block == fill
    if block.dtype.kind in "fc":
        same |= np.isnan(block) & np.isnan(fill)
    return bool(np.all(same))
