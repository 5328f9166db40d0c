"""Read virtual arrays back through references: add_to a builder, open with the RfsStore."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_store import open_rfs

from shadowzarr_spec import RfsBuilder, read_local_rfs, write_rfs

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_spec import ReferenceFileSystem, VirtualArray


def build(virtual: VirtualArray, path: str = "x", **options: Any) -> ReferenceFileSystem:
    builder = RfsBuilder()
    builder.add_group("")
    virtual.add_to(builder, path, **options)
    return builder.build()


def read(virtual: VirtualArray, directory: Path | None = None, **options: Any) -> np.ndarray:
    """The array's values as the store reads them; through a written reference directory
    (chunk manifests on disk) when ``directory`` is given."""
    rfs = build(virtual, **options)
    if directory is not None:
        write_rfs(rfs, directory)
        rfs = read_local_rfs(directory)
    array = open_rfs(rfs, grouped_view="auto")["x"]  # small chunks may be packed into shards
    stored = open_rfs(rfs, grouped_view=0)["x"]
    assert array.shape == stored.shape == virtual.shape
    assert stored.chunks == virtual.chunk_shape
    values = array[...]
    assert_same(stored[...], values)
    return values


def assert_same(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal shapes and values (NaN equal to NaN, structured arrays field by field)."""
    expected = np.asarray(expected)
    assert got.shape == expected.shape
    if expected.dtype.names:
        assert got.dtype.names == expected.dtype.names
        for name in expected.dtype.names:
            np.testing.assert_array_equal(got[name], expected[name])
        return
    assert got.dtype == expected.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, expected)
