"""Where a strip or tile of a page lands in the Zarr array of its series.

tifffile stacks the pages of a series and reshapes the stack to the series shape. We describe
the stack the same way: a *source* array of shape (page, separate sample, depth, row, column,
contiguous sample) cut into source chunks (one strip, tile or page each), and map it onto the
series shape by the same reshape. A chunk survives the reshape when every group of axes that is
merged or split holds chunks of size one, apart from the innermost axis of a merge, which is
what TIFF files give in practice (pages split into T, Z and C; separate samples merged with C).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from shadowzarr_spec import UnsupportedFeatureError

__all__ = ["SeriesLayout", "plan_layout"]


@dataclass(frozen=True, slots=True)
class SeriesLayout:
    """A series' source stack, its chunking, and the Zarr array they become."""

    source_shape: tuple[int, ...]
    source_chunk: tuple[int, ...]
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(math.ceil(s / c) for s, c in zip(self.shape, self.chunk_shape, strict=True))

    def chunk_coords(self, origins: np.ndarray) -> np.ndarray:
        """Zarr chunk coordinates (n, ndim) of source chunks given by their first element
        (n, 6) in the source stack."""
        if len(origins) == 0:
            return np.zeros((0, len(self.shape)), dtype=np.int64)
        flat = np.ravel_multi_index(tuple(origins.T), self.source_shape)
        if not self.shape:
            return np.zeros((len(origins), 0), dtype=np.int64)
        target = np.stack(np.unravel_index(flat, self.shape), axis=1)
        return target // np.asarray(self.chunk_shape, dtype=np.int64)


def plan_layout(
    source_shape: tuple[int, ...],
    source_chunk: tuple[int, ...],
    shape: tuple[int, ...],
    where: str,
) -> SeriesLayout:
    """Map a source chunking onto ``shape`` (the series shape tifffile reports), or refuse."""
    if math.prod(source_shape) != math.prod(shape):
        raise UnsupportedFeatureError(
            f"{where}: the pages hold {math.prod(source_shape)} samples but the series shape "
            f"{shape} holds {math.prod(shape)}"
        )
    if 0 in shape:
        raise UnsupportedFeatureError(f"{where}: an empty series {shape} cannot be referenced")
    chunk = [1] * len(shape)
    i = j = 0
    while True:
        while i < len(source_shape) and source_shape[i] == 1:
            i += 1
        while j < len(shape) and shape[j] == 1:
            j += 1
        if i == len(source_shape) or j == len(shape):
            break
        group_source, group_target = [i], [j]
        size_source, size_target = source_shape[i], shape[j]
        i, j = i + 1, j + 1
        while size_source != size_target:
            if size_source < size_target:
                size_source *= source_shape[i]
                group_source.append(i)
                i += 1
            else:
                size_target *= shape[j]
                group_target.append(j)
                j += 1
        chunked = [k for k in group_source if source_chunk[k] != 1]
        if not chunked:
            continue
        inner = group_source[-1]
        splits = len(group_target) > 1
        if (
            chunked == [inner]
            and not splits
            and (len(group_source) == 1 or source_shape[inner] % source_chunk[inner] == 0)
        ):
            chunk[group_target[0]] = source_chunk[inner]
            continue
        raise UnsupportedFeatureError(
            f"{where}: strips or tiles of shape {source_chunk[1:]} do not survive the reshape of "
            f"the pages {source_shape} to the series shape {shape}"
        )
    return SeriesLayout(tuple(source_shape), tuple(source_chunk), tuple(shape), tuple(chunk))
