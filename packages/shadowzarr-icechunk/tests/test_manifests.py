"""References -> VirtualiZarr ManifestStore -> references, and shadowzarr as a VirtualiZarr
parser: every array read through VirtualiZarr's store and back through ours equals h5py."""

from __future__ import annotations

import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr
import zarr
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import FileRef, ReferenceFileSystem
from shadowzarr_store import open_rfs
from virtualizarr import open_virtual_dataset

from shadowzarr_icechunk import manifest_store_to_rfs, rfs_to_manifest_store
from shadowzarr_icechunk.manifests import OmittedArrayWarning


def _write(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    values = {
        "gzip": rng.normal(size=(60, 12)).astype("<f4"),
        "big": np.arange(5000, dtype=">i4"),
        "small": np.arange(6, dtype="u1"),
        "group/shuffled": rng.integers(0, 1000, (40, 30), dtype="u2"),
    }
    with h5py.File(path, "w") as f:
        f.create_dataset("gzip", data=values["gzip"], chunks=(8, 12), compression="gzip")
        f.create_dataset("big", data=values["big"], chunks=(512,))
        f.create_dataset("small", data=values["small"])
        f.create_dataset(
            "group/shuffled", data=values["group/shuffled"], chunks=(9, 7), shuffle=True,
            compression="gzip",
        )  # fmt: skip
        f["gzip"].attrs["units"] = "V"
        f["group"].attrs["note"] = "inner"
    return values


def test_rfs_to_manifest_store_and_back(tmp_path: Path) -> None:
    source = tmp_path / "data.h5"
    values = _write(source)
    rfs = generate_rfs(str(source))
    with warnings.catch_warnings():
        warnings.simplefilter("error", OmittedArrayWarning)
        store = rfs_to_manifest_store(rfs)
    through_virtualizarr = zarr.open_group(store, mode="r", zarr_format=3)
    back = open_rfs(manifest_store_to_rfs(store))
    for name, expected in values.items():
        assert np.array_equal(through_virtualizarr[name][...], expected), name
        assert np.array_equal(back[name][...], expected), name
    assert dict(through_virtualizarr["gzip"].attrs)["units"] == "V"
    assert dict(through_virtualizarr["group"].attrs)["note"] == "inner"


def test_an_array_a_manifest_cannot_hold_is_left_out_by_name(tmp_path: Path) -> None:
    source = tmp_path / "data.h5"
    values = _write(source)
    rfs = generate_rfs(str(source))
    refs = dict(rfs.refs)
    refs["big/c/0"] = FileRef(str(source))  # a whole file: no length a manifest can record
    changed = ReferenceFileSystem(
        refs=refs, gen=rfs.gen, indexes=rfs.indexes, sources={}, version=rfs.version, base=rfs.base
    )
    with pytest.warns(OmittedArrayWarning, match="big"):
        store = rfs_to_manifest_store(changed)
    group = zarr.open_group(store, mode="r", zarr_format=3)
    assert "big" not in set(group.keys())
    assert np.array_equal(group["gzip"][...], values["gzip"])


def test_shadowzarr_as_a_virtualizarr_parser(tmp_path: Path) -> None:
    from shadowzarr.virtualizarr import ShadowzarrParser

    dataset = xr.Dataset(
        {"air": (("time", "x"), np.arange(200, dtype="f4").reshape(20, 10), {"units": "K"})},
        coords={"time": np.arange(20.0), "x": np.arange(10)},
    )
    path = tmp_path / "air.nc"
    dataset.to_netcdf(path, engine="h5netcdf", encoding={"air": {"chunksizes": (5, 10)}})
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    with open_virtual_dataset(
        path.resolve().as_uri(), parser=ShadowzarrParser(), registry=registry,
        loadable_variables=[],
    ) as virtual:  # fmt: skip
        assert set(virtual.variables) >= {"air", "time", "x"}
        manifest = virtual["air"].data.manifest
        assert manifest.shape_chunk_grid == (4, 1)
    store = ShadowzarrParser()(path.resolve().as_uri(), registry)
    with xr.open_zarr(store, consolidated=False, zarr_format=3) as read:
        np.testing.assert_array_equal(read["air"].values, dataset["air"].values)
        assert read["air"].attrs["units"] == "K"


def test_parser_manifest_store_references_round_trip(tmp_path: Path) -> None:
    """parser -> ManifestStore -> references -> open_rfs: every array equal to h5py, groups,
    attributes and chunk grids kept."""
    from shadowzarr.virtualizarr import ShadowzarrParser

    source = tmp_path / "data.h5"
    values = _write(source)
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    store = ShadowzarrParser()(source.resolve().as_uri(), registry)
    back = open_rfs(manifest_store_to_rfs(store))
    direct = open_rfs(generate_rfs(str(source)))
    with h5py.File(source) as f:
        for name, expected in values.items():
            assert np.array_equal(back[name][...], f[name][()]), name
            assert np.array_equal(back[name][...], expected), name
            assert back[name].dtype == direct[name].dtype == f[name].dtype.newbyteorder("<"), name
            assert back[name].chunks == direct[name].chunks, name
    assert dict(back["gzip"].attrs)["units"] == "V"
    assert dict(back["group"].attrs)["note"] == "inner"


def test_our_kerchunk_export_through_virtualizarrs_kerchunk_parser(tmp_path: Path) -> None:
    """``kerchunk_document`` (version 1, Zarr v2 keys, absolute locations) is what
    VirtualiZarr's KerchunkJSONParser reads: every array equal to h5py."""
    import json

    from shadowzarr_store.kerchunk_export import kerchunk_document
    from virtualizarr.parsers import KerchunkJSONParser

    source = tmp_path / "data.h5"
    values = _write(source)
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(kerchunk_document(generate_rfs(str(source)))))
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    for group_path in ("", "group"):  # VirtualiZarr's parser reads one group at a time
        parser = KerchunkJSONParser(group=group_path or None)
        group = zarr.open_group(parser(refs.resolve().as_uri(), registry), mode="r")
        prefix = f"{group_path}/" if group_path else ""
        mine = {
            n[len(prefix) :]: v for n, v in values.items() if n.rpartition("/")[0] == group_path
        }
        assert mine
        for name, expected in mine.items():
            np.testing.assert_array_equal(group[name][...], expected, err_msg=name)
