"""shadowzarr.open_array on TIFF files (series, pyramid levels), reference files and rfs inputs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import tifffile
from shadowzarr_spec import write_rfs

import shadowzarr

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network


def _write_tiffs(root: Path) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(4)
    stack = rng.integers(0, 60000, (5, 64, 48), dtype=np.uint16)
    other = rng.integers(0, 255, (32, 32), dtype=np.uint8)
    with tifffile.TiffWriter(root / "two.tif") as tif:
        tif.write(stack, tile=(16, 16), compression="zlib")
        tif.write(other)
    levels = [rng.integers(0, 255, (128, 128), dtype=np.uint8)]
    levels.append(levels[0][::2, ::2].copy())
    with tifffile.TiffWriter(root / "pyramid.ome.tif") as tif:
        tif.write(levels[0], subifds=1, tile=(32, 32))
        tif.write(levels[1], subfiletype=1, tile=(32, 32))
    return stack, other, levels


def test_series_and_levels(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    stack, other, levels = _write_tiffs(nginx_root)
    first = shadowzarr.open_array(nginx.url("two.tif"), cache_dir=tmp_path)
    np.testing.assert_array_equal(first[:], stack)
    second = shadowzarr.open_array(nginx.url("two.tif"), series=1, cache_dir=tmp_path)
    np.testing.assert_array_equal(second[:], other)
    assert shadowzarr.open_array(nginx.url("two.tif") + "::/1", cache_dir=tmp_path).shape == (
        32,
        32,
    )
    full = shadowzarr.open_array(nginx.url("pyramid.ome.tif"), cache_dir=tmp_path)
    np.testing.assert_array_equal(full[:], levels[0])
    half = shadowzarr.open_array(
        nginx.url("pyramid.ome.tif"), series=0, level=1, cache_dir=tmp_path
    )
    np.testing.assert_array_equal(half[:], levels[1])
    slash = shadowzarr.open_array(nginx.url("pyramid.ome.tif/0/1"), cache_dir=tmp_path)
    np.testing.assert_array_equal(slash[:], levels[1])
    nginx.reset()
    again = shadowzarr.open_array(nginx.url("pyramid.ome.tif/0/1"), cache_dir=tmp_path)
    assert nginx.count() == 0
    assert again.shape == levels[1].shape


def test_reference_files_and_rfs_inputs(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    stack, _, _ = _write_tiffs(nginx_root)
    rfs = shadowzarr.generate_rfs_tiff(nginx.url("two.tif"))
    write_rfs(rfs, tmp_path / "refs.json")
    write_rfs(rfs, tmp_path / "refs_dir")
    for source in (tmp_path / "refs.json", tmp_path / "refs_dir"):
        remote = shadowzarr.open_array(source, "0", cache_dir=tmp_path / "c")
        np.testing.assert_array_equal(remote[:], stack)
    np.testing.assert_array_equal(shadowzarr.open_array(rfs, "0")[2], stack[2])
    # The store's zarr.Array of references is open_rfs_array; its old name warns.
    import shadowzarr_store

    np.testing.assert_array_equal(shadowzarr_store.open_rfs_array(rfs, "0")[:], stack)
    with pytest.warns(DeprecationWarning, match="renamed open_rfs_array"):
        store_open_array = shadowzarr_store.open_array
    np.testing.assert_array_equal(store_open_array(rfs, "0")[:], stack)
    with pytest.raises(ValueError, match="name different arrays"):
        shadowzarr.open_array(rfs, "0", dataset="1")


def test_hdf5_needs_a_dataset(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    import h5py

    with h5py.File(nginx_root / "f.h5", "w") as file:
        file["x"] = np.arange(10)
    with pytest.raises(ValueError, match="name the dataset"):
        shadowzarr.open_array(nginx.url("f.h5"), cache_dir=tmp_path)
    np.testing.assert_array_equal(
        shadowzarr.open_array(nginx.url("f.h5"), dataset="x", cache_dir=tmp_path)[:], np.arange(10)
    )
