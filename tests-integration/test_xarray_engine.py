"""The xarray engine "shadowzarr" against h5netcdf on files written by xarray and by netCDF4.

References are generated with shadowzarr-hdf5 and opened with ``xr.open_dataset`` (no engine:
ours must be chosen ahead of kerchunk's, which is installed), ``open_datatree`` and
``open_mfdataset``; every result must be identical to what h5netcdf reads from the file itself.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import h5py
import netCDF4
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from xarray.backends.plugins import guess_engine, list_engines

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer


def _xarray_file(path: Path, start: int = 0) -> Path:
    rng = np.random.default_rng(start)
    time = pd.date_range("2020-01-01", periods=12, freq="D") + pd.Timedelta(days=start)
    dataset = xr.Dataset(
        {
            "temperature": (
                ("time", "station"),
                rng.standard_normal((12, 3)).astype("float32"),
                {"units": "K", "long_name": "air temperature"},
            ),
            "count": (("time",), np.arange(start, start + 12, dtype="int16")),
            "scaled": (("time",), rng.random(12), {"scale_factor": 0.5}),
        },
        coords={"time": time, "station": ["a", "b", "c"], "height": ("station", [1.5, 2.0, 9.0])},
        attrs={"title": "weather", "history": "written by xarray"},
    )
    dataset.to_netcdf(
        path,
        engine="h5netcdf",
        encoding={"temperature": {"chunksizes": (4, 3), "zlib": True}},
    )
    return path


def _netcdf4_file(path: Path) -> Path:
    with netCDF4.Dataset(path, "w") as root:
        root.title = "netCDF4 file"
        root.createDimension("time", None)
        root.createDimension("x", 5)
        time = root.createVariable("time", "f8", ("time",))
        time.units = "seconds since 2000-01-01"
        time[:] = np.arange(8) * 60.0
        x = root.createVariable("x", "i4", ("x",))
        x[:] = np.arange(5) * 10
        field = root.createVariable("field", "f4", ("time", "x"), zlib=True, chunksizes=(2, 5))
        field.units = "m/s"
        field[:] = np.arange(40, dtype="f4").reshape(8, 5) / 7
        masked = root.createVariable("masked", "i2", ("x",), fill_value=-1)
        masked[:] = np.ma.masked_array([1, 2, 3, 4, 5], mask=[0, 1, 0, 0, 1])
        child = root.createGroup("instrument")
        child.serial = "A-17"
        child.createDimension("sample", 4)
        reading = child.createVariable("reading", "f8", ("sample",))
        reading[:] = [0.25, 0.5, 0.75, 1.0]
    return path


def _references(source: Path, target: Path) -> Path:
    return write_rfs(generate_rfs(str(source)), target)


def test_open_dataset_picks_our_engine_ahead_of_kerchunk(tmp_path: Path) -> None:
    source = _xarray_file(tmp_path / "weather.nc")
    as_json = _references(source, tmp_path / "weather.json")
    as_directory = _references(source, tmp_path / "weather.shadowzarr")
    assert list(list_engines()).index("kerchunk") < list(list_engines()).index("shadowzarr")
    assert guess_engine(str(as_json)) == "shadowzarr"
    assert guess_engine(as_directory) == "shadowzarr"
    expected = xr.open_dataset(source, engine="h5netcdf").load()
    for refs in (as_json, as_directory, str(as_json)):
        with xr.open_dataset(refs) as opened:
            xr.testing.assert_identical(opened.load(), expected)


def test_kerchunk_keeps_zarr_v2_references(tmp_path: Path) -> None:
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps({"version": 1, "refs": {".zgroup": '{"zarr_format": 2}'}}))
    assert guess_engine(str(v2)) == "kerchunk"
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"type": "FeatureCollection", "features": []}))
    assert guess_engine(str(other)) == "kerchunk"  # its answer for other JSON is unchanged


def test_netcdf4_file_dataset_and_datatree(tmp_path: Path) -> None:
    source = _netcdf4_file(tmp_path / "field.nc")
    refs = _references(source, tmp_path / "field.shadowzarr")
    with (
        xr.open_dataset(refs, engine="shadowzarr") as ours,
        xr.open_dataset(source, engine="h5netcdf") as theirs,
    ):
        xr.testing.assert_identical(ours.load(), theirs.load())
        assert ours["masked"].isnull().values.tolist() == [False, True, False, False, True]
    with (
        xr.open_datatree(refs) as ours_tree,
        xr.open_datatree(source, engine="h5netcdf") as theirs_tree,
    ):
        xr.testing.assert_identical(ours_tree.load(), theirs_tree.load())
        assert ours_tree["instrument"].attrs["serial"] == "A-17"
    with (
        xr.open_dataset(refs, group="instrument") as ours_group,
        xr.open_dataset(source, engine="h5netcdf", group="instrument") as theirs_group,
    ):
        xr.testing.assert_identical(ours_group.load(), theirs_group.load())


def test_chunks_and_open_mfdataset(tmp_path: Path) -> None:
    sources = [_xarray_file(tmp_path / f"day{i}.nc", start=12 * i) for i in range(2)]
    refs = [_references(s, tmp_path / f"day{i}.shadowzarr") for i, s in enumerate(sources)]
    with xr.open_dataset(refs[0], chunks={}) as stored:
        assert stored["temperature"].chunks == ((4, 4, 4), (3,))  # the chunks as stored
    with xr.open_dataset(refs[0], chunks={"time": 12}) as rechunked:
        assert rechunked["temperature"].chunks == ((12,), (3,))
    with (
        xr.open_mfdataset(refs, engine="shadowzarr", combine="by_coords") as ours,
        xr.open_mfdataset(sources, engine="h5netcdf", combine="by_coords") as theirs,
    ):
        assert ours.sizes["time"] == 24
        xr.testing.assert_identical(ours.load(), theirs.load())


@pytest.mark.network
def test_store_options_reach_the_store(nginx: NginxServer, nginx_root: Path) -> None:
    source = nginx_root / "signal.nc"
    values = np.random.default_rng(3).standard_normal((2000, 4)).astype("float32")
    xr.Dataset({"signal": (("time", "channel"), values)}).to_netcdf(
        source, engine="h5netcdf", encoding={"signal": {"chunksizes": (100, 4)}}
    )
    refs = write_rfs(generate_rfs(nginx.url("signal.nc")), nginx_root / "signal.shadowzarr")
    expected = xr.open_dataset(source, engine="h5netcdf").load()
    counts = {}
    for gap in (0, 1 << 20):
        nginx.reset()
        with xr.open_dataset(
            nginx.url(refs.name),
            engine="shadowzarr",
            store_options={"max_merge_size": gap},
            chunks={},
        ) as opened:
            xr.testing.assert_identical(opened.load(), expected)
        counts[gap] = nginx.count(path_prefix="signal.nc")
    assert counts[0] >= 20  # unmerged: a request per chunk
    assert counts[1 << 20] < counts[0]
    with pytest.raises(TypeError, match="unknown RfsStore options"):
        xr.open_dataset(refs, engine="shadowzarr", store_options={"no_such_option": 1})
    with pytest.raises(TypeError, match="unknown RfsStore options"):  # through backend_kwargs
        xr.open_dataset(refs, backend_kwargs={"store_options": {"no_such_option": 1}})


def _typed_attributes_file(path: Path) -> Path:
    """netCDF-4 attributes JSON cannot carry as they are: float32 packing, one-element arrays,
    NaN and infinities, fill values of every width, an enum."""
    with netCDF4.Dataset(path, "w") as root:
        root.createDimension("x", 6)
        root.setncattr("nan_global", np.float32("nan"))
        root.setncattr("inf_global", np.array([np.inf, -np.inf]))
        root.setncattr("one_int16", np.array([7], "i2"))
        packed = root.createVariable("packed", "i2", ("x",), fill_value=np.int16(-32768))
        packed.scale_factor = np.float32(0.1)
        packed.add_offset = np.float32(273.15)
        packed.valid_range = np.array([0, 1000], "i2")
        packed.missing = np.float64("nan")
        packed.limits = np.array([-np.inf, 1.5], "f4")
        packed[:] = np.ma.masked_array(np.arange(6) * 10, mask=[0, 0, 1, 0, 0, 0])
        for kind, fill in FILLS.items():
            variable = root.createVariable(f"fill_{kind}", kind, ("x",), fill_value=fill)
            variable[:4] = np.arange(4).astype(kind)
        cloud_t = root.createEnumType("u1", "cloud_t", {"clear": 0, "cloudy": 1, "unknown": 255})
        cloud = root.createVariable("cloud", cloud_t, ("x",), fill_value=255)
        cloud[:] = np.array([0, 1, 1, 0, 255, 0], "u1")
    return path


FILLS = {
    "i1": np.int8(-7), "u1": np.uint8(200), "u2": np.uint16(65000), "i4": np.int32(-99),
    "i8": np.int64(-(2**40)), "f4": np.float32(1e20), "f8": np.float64(-9999.5),
}  # fmt: skip


@pytest.mark.parametrize("old_netcdf", [False, True], ids=["netcdf4", "without_ncproperties"])
def test_attribute_types_decode_as_netcdf4_does(tmp_path: Path, old_netcdf: bool) -> None:
    """float32 scale_factor decodes as float32, NaN attributes are NaN, one-element arrays are
    scalars of their type, and an enum's mapping is in the encoding, not the attributes; also
    for a file of netCDF-C before 4.4.1 (no ``_NCProperties``), whose int8 ``_FillValue`` once
    failed to open."""
    source = _typed_attributes_file(tmp_path / "typed.nc")
    if old_netcdf:
        with h5py.File(source, "a") as f:
            del f.attrs["_NCProperties"]
    refs = _references(source, tmp_path / "typed.shadowzarr")
    with (
        xr.open_dataset(refs, engine="shadowzarr") as ours,
        xr.open_dataset(source, engine="netcdf4") as theirs,
    ):
        ours.load()
        theirs.load()
        xr.testing.assert_identical(ours, theirs)
        assert ours["packed"].dtype == np.float32
        assert type(ours["packed"].attrs["valid_range"]) is np.ndarray
        assert ours["packed"].attrs["limits"].dtype == np.float32
        assert type(ours.attrs["one_int16"]) is np.int16
        assert np.isnan(ours.attrs["nan_global"])
        assert type(ours.attrs["nan_global"]) is np.float32
        for kind in FILLS:
            assert ours[f"fill_{kind}"].isnull().values.tolist() == [False] * 4 + [True] * 2
            assert ours[f"fill_{kind}"].encoding["_FillValue"] == FILLS[kind]
        assert "_ENUM" not in ours["cloud"].attrs
        enum = ours["cloud"].encoding["dtype"].metadata["enum"]
        assert enum == theirs["cloud"].encoding["dtype"].metadata["enum"]


def test_plain_hdf5_fill_value_of_one_element(tmp_path: Path) -> None:
    """An HDF5 file that is no netCDF file: its ``_FillValue`` of one element still masks."""
    source = tmp_path / "plain.h5"
    with h5py.File(source, "w") as f:
        x = f.create_dataset("x", data=np.arange(5, dtype="i4"))
        x.make_scale("x")
        for kind, fill in [("i1", -7), ("f4", -1.5)]:
            values = f.create_dataset(f"v_{kind}", data=np.array([1, fill, 3, fill, 5], kind))
            values.dims[0].attach_scale(x)
            values.attrs["_FillValue"] = np.array([fill], kind)
    refs = _references(source, tmp_path / "plain.shadowzarr")
    with xr.open_dataset(refs, engine="shadowzarr") as ours:
        for kind in ["i1", "f4"]:
            assert ours[f"v_{kind}"].isnull().values.tolist() == [False, True, False, True, False]
            assert ours[f"v_{kind}"].dtype == np.float32
