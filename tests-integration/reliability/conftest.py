"""Shared builders of the reliability suite: pattern files whose every value is checkable.

A pattern array holds ``uint32`` values equal to their flat index, so a chunk read from the wrong
place, a shifted range or a mix of two files never compares equal by accident.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from shadowzarr_spec import RfsBuilder

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem


@dataclass(frozen=True, slots=True)
class PatternFile:
    """``chunks`` chunks of ``chunk_items`` uint32 each, chunk i at byte ``i * stride``."""

    path: Path
    chunks: int
    chunk_items: int
    stride: int

    @property
    def chunk_bytes(self) -> int:
        return self.chunk_items * 4

    @property
    def expected(self) -> np.ndarray:
        return np.arange(self.chunks * self.chunk_items, dtype="<u4")

    def references(
        self, url: str, *, size: int | None = None, etag: str | None = None
    ) -> ReferenceFileSystem:
        builder = RfsBuilder()
        builder.add_group("")
        builder.add_array(
            "pattern",
            shape=(self.chunks * self.chunk_items,),
            data_type="<u4",
            chunk_shape=(self.chunk_items,),
            fill_value=0,
        )
        for i in range(self.chunks):
            builder.add_chunk("pattern", (i,), url, i * self.stride, self.chunk_bytes)
        builder.add_source(url, size=size, etag=etag)
        return builder.build()


def write_pattern(
    path: Path, chunks: int, chunk_items: int, stride: int | None = None, *, salt: int = 0
) -> PatternFile:
    """Write the pattern sparsely: the gaps between chunks are holes, not written bytes.

    ``salt`` is added to every value (a "new version" of the file with the same layout).
    """
    stride = stride or chunk_items * 4
    with open(path, "wb") as stream:
        stream.truncate(chunks * stride)
        for i in range(chunks):
            values = np.arange(i * chunk_items, (i + 1) * chunk_items, dtype="<u4") + salt
            os.pwrite(stream.fileno(), values.tobytes(), i * stride)
    return PatternFile(path, chunks, chunk_items, stride)


@pytest.fixture
def make_pattern():
    """`write_pattern`, for tests (importlib mode does not let tests import this module)."""
    return write_pattern


@pytest.fixture
def wrong_bytes():
    def count(actual: np.ndarray, expected: np.ndarray) -> int:
        """Bytes that differ (every element counted with its full size)."""
        if actual.shape != expected.shape:
            return expected.nbytes
        return int(np.count_nonzero(actual != expected)) * expected.itemsize

    return count
