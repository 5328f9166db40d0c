"""The builder's drafts: an array as `RfsBuilder` holds it until it builds, its chunks in the
order they were added (single chunks in dicts, one `add_chunks` call's chunks as one block of
columns), and such a block kept as columns in the built references when it is large."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shadowzarr_spec.keys import chunk_grid_shape
from shadowzarr_spec.listed_refs import ChunkColumns
from shadowzarr_spec.model import FileRef, Ref, checked_file_ref

__all__ = ["MIN_COLUMN_CHUNKS", "ArrayDraft", "ChunkBlock", "Segment", "as_columns"]


@dataclass(frozen=True, slots=True)
class ChunkBlock:
    """Chunks added in one `RfsBuilder.add_chunks` call, kept as columns until the build."""

    coords: np.ndarray
    """(n, rank) int64 chunk coordinates."""
    url: str
    offsets: np.ndarray
    sizes: np.ndarray

    def refs(self, path: str) -> Iterable[tuple[str, FileRef]]:
        """(chunk key, reference) of each chunk, in the order they were added."""
        if self.coords.shape[1] == 0:
            names = ["c"] * len(self.coords)
        elif self.coords.shape[1] == 1:
            names = [f"c/{c}" for c in self.coords[:, 0].tolist()]
        else:
            names = ["c/" + "/".join(map(str, row)) for row in self.coords.tolist()]
        url = self.url
        # Offsets and sizes were checked as columns: no per-chunk validation is needed.
        return zip(
            [f"{path}/{name}" for name in names],
            [
                checked_file_ref(url, offset, size)
                for offset, size in zip(self.offsets.tolist(), self.sizes.tolist(), strict=True)
            ],
            strict=True,
        )


type Segment = dict[tuple[int, ...], Ref] | ChunkBlock


@dataclass(slots=True)
class ArrayDraft:
    """An array added to the builder: its metadata and its chunks so far."""

    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    data_type: Any
    fill_value: Any
    codecs: list[dict[str, Any]]
    attributes: dict[str, Any]
    dimension_names: list[str | None] | None
    segments: list[Segment] = field(default_factory=list)
    """Chunks in the order they were added: dicts of single chunks and blocks of many. A chunk
    added again replaces the earlier one and keeps its place, as in one dict."""

    @property
    def grid(self) -> tuple[int, ...]:
        return chunk_grid_shape(self.shape, self.chunk_shape)

    def put(self, coords: tuple[int, ...], ref: Ref) -> None:
        if not self.segments or not isinstance(self.segments[-1], dict):
            self.segments.append({})
        last = self.segments[-1]
        assert isinstance(last, dict)
        last[coords] = ref


MIN_COLUMN_CHUNKS = 64
"""Arrays with at least this many chunks from one `RfsBuilder.add_chunks` call keep them as
columns in the built references (see `shadowzarr_spec.listed_refs`)."""


def as_columns(path: str, array: ArrayDraft) -> ChunkColumns | None:
    """The array's chunks as columns when they all came from one `add_chunks` call of many
    distinct chunks (what a generator of a large array does); else None."""
    if len(array.segments) != 1 or not isinstance(array.segments[0], ChunkBlock):
        return None
    block = array.segments[0]
    n = len(block.offsets)
    if n < MIN_COLUMN_CHUNKS or block.coords.shape[1] == 0:
        return None
    linear = np.ravel_multi_index(tuple(block.coords.T), array.grid)
    if len(np.unique(linear)) != n:
        return None  # a chunk added twice: the dict's rule (the last wins, first place) applies
    return ChunkColumns(
        path=path,
        coords=block.coords.copy(),  # copies: the caller may reuse its arrays after the build
        urls=[block.url],
        url_index=np.zeros(n, dtype=np.uint8),
        offsets=block.offsets.copy(),
        sizes=block.sizes.copy(),
    )
