"""Version-1 JSON written by write_rfs is plain kerchunk: fsspec + zarr-python read it unaided."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import numpy as np
import pytest
import zarr
from shadowzarr_spec import RfsBuilder, write_rfs
from zarr.storage import FsspecStore


def fsspec_group(path: Path) -> zarr.Group:
    fs = fsspec.filesystem("reference", fo=str(path), asynchronous=True)
    return zarr.open_group(FsspecStore(fs, read_only=True, path=""), mode="r", zarr_format=3)


@pytest.mark.parametrize("dtype", ["<i2", ">f8", "<u4", "|u1"])
def test_fsspec_reads_what_we_wrote(tmp_path: Path, dtype: str) -> None:
    rng = np.random.default_rng(0)
    values = (rng.normal(size=(37, 5)) * 100).astype(dtype)
    raw = tmp_path / "raw.bin"
    header = b"HDR" * 5
    raw.write_bytes(header + values.tobytes())

    builder = RfsBuilder()
    builder.add_group("", {"title": "peer", "nan": float("nan")})
    builder.add_array("signal", shape=values.shape, data_type=values.dtype, chunk_shape=[10, 5])
    rows = 10 * 5 * values.dtype.itemsize
    for i in range(4):
        size = min(rows, len(values.tobytes()) - i * rows)
        if size == rows:
            builder.add_chunk("signal", (i, 0), str(raw), len(header) + i * rows, size)
    builder.add_array("small", shape=[3], data_type="<i8")
    builder.add_inline_chunk("small", (0,), np.array([1, 2, 3], dtype="<i8").tobytes())
    builder.add_array("slabs", shape=[40], data_type="<i2", chunk_shape=[10])
    builder.add_contiguous_chunks(
        "slabs", url=str(raw), start=0, shape=[40], chunk_shape=[10], itemsize=2
    )
    rfs = builder.build()

    path = write_rfs(rfs, tmp_path / "refs.json")
    assert json.loads(path.read_text())["version"] == 1
    root = fsspec_group(path)
    assert root.attrs["title"] == "peer"
    assert root.attrs["nan"] == "NaN"
    got = root["signal"][:30]
    np.testing.assert_array_equal(got, values[:30])
    assert got.dtype == values.dtype.newbyteorder("=")  # zarr returns native order
    np.testing.assert_array_equal(root["signal"][30:], np.zeros((7, 5), dtype))
    np.testing.assert_array_equal(root["small"][:], [1, 2, 3])
    expected = np.frombuffer(raw.read_bytes()[:80], dtype="<i2")
    np.testing.assert_array_equal(root["slabs"][:], expected)
