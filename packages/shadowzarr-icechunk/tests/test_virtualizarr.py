"""VirtualiZarr ManifestStores → rfs: NetCDF4 and HDF5 files the tests write, parsed by
VirtualiZarr's HDFParser, read through RfsStore and compared with xarray's read of the file."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr
from icechunk_samples import assert_same
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from shadowzarr_spec import RfsBuilder, decode_attributes, read_local_rfs, write_rfs
from shadowzarr_store import open_rfs
from virtualizarr.parsers import HDFParser

from shadowzarr_icechunk import manifest_store_to_rfs, virtual_array


def _parse(path: Path):  # type: ignore[no-untyped-def]
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    return HDFParser()(url=path.resolve().as_uri(), registry=registry)


def _compare_with_xarray(path: Path, rfs_root, **open_options) -> None:  # type: ignore[no-untyped-def]
    with xr.open_dataset(
        path, engine="h5netcdf", decode_cf=False, mask_and_scale=False, **open_options
    ) as dataset:
        assert dataset.variables
        for name, variable in dataset.variables.items():
            assert_same(rfs_root[name][...], variable.values, name)


def test_netcdf4(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    air = rng.normal(280, 5, size=(40, 30, 20)).astype("float32")
    dataset = xr.Dataset(
        {
            "air": (("time", "lat", "lon"), air, {"units": "K", "valid_max": np.inf}),
            "station": (("lat",), np.arange(30, dtype="int16")),
            "flag": ((), np.int8(3)),
        },
        coords={
            "time": np.arange(40, dtype="float64"),
            "lat": np.linspace(-60, 60, 30),
            "lon": np.linspace(0, 350, 20),
        },
        attrs={"title": "air temperature"},
    )
    path = tmp_path / "air.nc"
    dataset.to_netcdf(
        path,
        engine="h5netcdf",
        encoding={
            "air": {"zlib": True, "complevel": 4, "chunksizes": (5, 10, 20), "shuffle": True}
        },
    )
    rfs = manifest_store_to_rfs(_parse(path))
    root = open_rfs(rfs)
    _compare_with_xarray(path, root)
    assert root.attrs["title"] == "air temperature"
    assert decode_attributes(root["air"].attrs.asdict())["valid_max"] == np.inf
    # written as a directory and read back, too
    write_rfs(rfs, tmp_path / "air.shadowzarr")
    _compare_with_xarray(path, open_rfs(tmp_path / "air.shadowzarr"))


def test_hdf5(tmp_path: Path) -> None:
    path = tmp_path / "data.h5"
    with h5py.File(path, "w") as file:
        file.create_dataset(
            "big_endian",
            data=np.arange(12000, dtype=">i4").reshape(3000, 4),
            chunks=(2, 4),
            compression="gzip",
            shuffle=True,
        )
        file.create_dataset("contiguous", data=np.linspace(0, 1, 500).reshape(50, 10))
        file.create_dataset(
            "checked", data=np.arange(300, dtype="<u2"), chunks=(64,), fletcher32=True
        )
        file.create_dataset("partial", data=np.arange(10, dtype="<f4"), chunks=(4,))
        file["contiguous"].attrs["scale"] = 0.5
    rfs = manifest_store_to_rfs(_parse(path))
    assert set(rfs.indexes) == {"big_endian"}  # 1,500 chunks in one file
    write_rfs(rfs, tmp_path / "data.shadowzarr")
    root = open_rfs(read_local_rfs(tmp_path / "data.shadowzarr"))
    _compare_with_xarray(path, root, phony_dims="access")
    with h5py.File(path, "r") as file:
        for name in ("big_endian", "contiguous", "checked", "partial"):
            assert_same(root[name][...], file[name][...], name)
    assert root["contiguous"].attrs["scale"] == 0.5


def test_virtual_array_contiguous_and_chunked(tmp_path: Path) -> None:
    path = tmp_path / "arrays.h5"
    block = np.arange(600, dtype="<f8").reshape(60, 10)
    with h5py.File(path, "w") as file:
        file.create_dataset("block", data=block)
        file.create_dataset("packed", data=block, chunks=(7, 10), compression="gzip")
    group = _parse(path)._group

    contiguous = virtual_array(group.arrays["block"])
    assert contiguous.is_strided
    chunked = virtual_array(group.arrays["packed"])
    assert not chunked.is_strided

    builder = RfsBuilder()
    contiguous[5:40, 3].add_to(builder, "column")  # inside chunks: only a contiguous array can
    contiguous.T.add_to(builder, "transposed")
    chunked[7:21].add_to(builder, "rows")
    root = open_rfs(builder.build())
    assert_same(root["column"][:], block[5:40, 3], "column")
    assert_same(root["transposed"][:], block.T, "transposed")
    assert_same(root["rows"][:], block[7:21], "rows")
    with pytest.raises(ValueError, match="falls inside chunks"):
        chunked[5:9]


def test_kerchunk_references(tmp_path: Path) -> None:
    """Kerchunk's own references (Zarr v2 keys) parsed by VirtualiZarr's KerchunkJSONParser."""
    from kerchunk.hdf import SingleHdf5ToZarr
    from virtualizarr.parsers import KerchunkJSONParser

    path = tmp_path / "k.h5"
    with h5py.File(path, "w") as file:
        values = np.arange(600, dtype="<i4").reshape(60, 10)
        file.create_dataset("a", data=values, chunks=(7, 10), compression="gzip")
        file.create_dataset("b", data=np.linspace(-1, 1, 30))
    references = SingleHdf5ToZarr(str(path), url=path.resolve().as_uri()).translate()
    (tmp_path / "k.json").write_text(json.dumps(references))
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    store = KerchunkJSONParser()(url=(tmp_path / "k.json").resolve().as_uri(), registry=registry)
    root = open_rfs(manifest_store_to_rfs(store))
    _compare_with_xarray(path, root, phony_dims="access")
