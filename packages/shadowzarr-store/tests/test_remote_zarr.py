"""Remote arrays over Zarr v3 stores written by zarr-python and served by nginx."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr

from shadowzarr_store.remote import open_remote_array

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network


def _write(root: Path) -> np.ndarray:
    values = np.random.default_rng(2).random((50, 30)).astype("<f4")
    group = zarr.open_group(root / "store.zarr", mode="w", zarr_format=3)
    array = group.create_array(
        "g/arr", shape=values.shape, chunks=(20, 10), dtype="f4", fill_value=-1
    )
    array[:] = values
    sparse = group.create_array("sparse", shape=(40,), chunks=(10,), dtype="i2", fill_value=7)
    sparse[10:20] = np.arange(10)
    sharded = group.create_array(
        "sharded", shape=(64, 64), chunks=(8, 8), shards=(32, 32), dtype="u2"
    )
    sharded[:] = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    return values


def test_zarr_array_in_three_spellings(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    values = _write(nginx_root)
    store_url = nginx.url("store.zarr")
    for index, source in enumerate([f"{store_url}/g/arr", f"{store_url}::/g/arr", store_url]):
        remote = open_remote_array(
            source, dataset=None if index < 2 else "g/arr", cache_dir=tmp_path / str(index)
        )
        np.testing.assert_array_equal(remote[:], values)
        np.testing.assert_array_equal(remote[3:41, 7], values[3:41, 7])
    nginx.reset()
    again = open_remote_array(f"{store_url}/g/arr", cache_dir=tmp_path / "0")
    assert nginx.count() == 0  # the metadata came from the reference cache
    np.testing.assert_array_equal(again[:20, :10], values[:20, :10])
    assert nginx.count() == 1


def test_unwritten_chunks_read_as_fill_and_shards(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    _write(nginx_root)
    sparse = open_remote_array(nginx.url("store.zarr/sparse"), cache_dir=tmp_path)
    expected = np.full(40, 7, dtype="i2")
    expected[10:20] = np.arange(10)
    np.testing.assert_array_equal(sparse[:], expected)
    sharded = open_remote_array(nginx.url("store.zarr/sharded"), cache="memory", cache_dir=tmp_path)
    full = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    np.testing.assert_array_equal(sharded[5:50, 33:60], full[5:50, 33:60])
    sharded.fetch((slice(0, 32), slice(0, 32)))
    hit, got = sharded.read_cached((slice(0, 32), slice(0, 32)))
    assert hit
    np.testing.assert_array_equal(got, full[:32, :32])


def test_local_zarr_store(tmp_path: Path) -> None:
    values = _write(tmp_path / "data")
    remote = open_remote_array(
        tmp_path / "data" / "store.zarr", dataset="g/arr", cache_dir=tmp_path
    )
    np.testing.assert_array_equal(remote[:], values)
    assert remote.info["references"] == "generated"
