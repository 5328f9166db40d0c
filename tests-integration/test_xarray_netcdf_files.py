"""netCDF files of netCDF4-python's and xarray's own test data, opened through references by
the "shadowzarr" engine, against xarray's netCDF4 engine on the file itself.

The files are in ``data/netcdf`` (each folder with its project's licence and origin). Each is
compared twice: decoded by CF conventions (xarray's defaults) and as stored (``decode_cf=False``,
every attribute as netCDF4 gives it). A file that xarray cannot decode through either engine
must fail the same way through both, and is then compared without that decoding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs

pytestmark = [
    # netCDF char variables are Zarr's null-terminated bytes, which zarr-python warns of
    pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning"),
]

DATA = Path(__file__).parent / "data" / "netcdf"
FILES = sorted(DATA.glob("*/*.nc"))
UNDECODABLE_TIMES = {"CRM032_test1.nc"}
"""Its ``time`` is int32 "days since 1961-01-01" holding only the fill value: xarray's time
decoding fails on it whatever the engine, so it is compared with ``decode_times=False``."""


def test_the_data_is_there() -> None:
    """The parametrization below is not empty, and each folder names its licence."""
    assert len(FILES) == 11
    for folder in {path.parent for path in FILES}:
        assert (folder / "LICENSE").is_file()
        assert (folder / "NOTICE").is_file()


def _references(source: Path, tmp_path: Path) -> Path:
    rfs = generate_rfs(str(source))
    assert dict(rfs.unsupported) == {}, f"{source.name}: {dict(rfs.unsupported)}"
    return write_rfs(rfs, tmp_path / f"{source.stem}.json")


def _both(refs: Path, source: Path, **options: Any) -> tuple[xr.Dataset, xr.Dataset]:
    with (
        xr.open_dataset(refs, engine="shadowzarr", **options) as ours,
        xr.open_dataset(source, engine="netcdf4", **options) as theirs,
    ):
        return ours.load(), theirs.load()


@pytest.mark.parametrize("source", FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_identical_to_the_netcdf4_engine(source: Path, tmp_path: Path) -> None:
    refs = _references(source, tmp_path)
    decoding: dict[str, Any] = {}
    if source.name in UNDECODABLE_TIMES:
        messages = []
        for engine, path in (("shadowzarr", refs), ("netcdf4", source)):
            with pytest.raises(ValueError, match="unable to decode time units") as caught:
                xr.open_dataset(path, engine=engine).load()
            messages.append(str(caught.value))
        assert messages[0] == messages[1]
        decoding["decode_times"] = False
    ours, theirs = _both(refs, source, **decoding)
    xr.testing.assert_identical(ours, theirs)
    for name, variable in theirs.variables.items():
        assert ours[name].dtype == variable.dtype, name
    ours, theirs = _both(refs, source, decode_cf=False)
    xr.testing.assert_identical(ours, theirs)
    for name, variable in theirs.variables.items():
        assert ours[name].dtype == variable.dtype, name
        for key, value in variable.attrs.items():
            assert np.asarray(ours[name].attrs[key]).dtype == np.asarray(value).dtype, (name, key)


def test_linked_variables_as_netcdf_c_names_them(tmp_path: Path) -> None:
    """kerchunk's air_linked.nc: ``lat``/``time`` reached by hard and soft links. netCDF-C
    shows every link as a variable and names the dimension after the last link; the soft
    links are variables through references too (not a ``_LINKS`` attribute)."""
    source = DATA / "kerchunk" / "air_linked.nc"
    ours, theirs = _both(_references(source, tmp_path), source)
    assert set(theirs.dims) == {"lat_hard", "time_hard", "lon"}
    assert {"lat_soft", "time_soft", "lat", "time"} <= set(theirs.data_vars)
    xr.testing.assert_identical(ours, theirs)
    assert "_LINKS" not in ours.attrs


def _linked_file(source: Path, *, unfollowed: bool) -> None:
    import h5py

    with netCDF4.Dataset(source, "w") as root:
        root.createDimension("m", 3)
        root.createVariable("m", "f4", ("m",))[:] = [1.0, 2.0, 3.0]
        root.createVariable("data", "i2", ("m",))[:] = [4, 5, 6]
        root.createGroup("inner").createVariable("x", "i4", ())
    with h5py.File(source, "a") as f:
        f["z_hard"] = f["m"]
        f["a_hard"] = f["m"]
        f["inner/up"] = h5py.SoftLink("/data")
        if unfollowed:  # netCDF-C refuses such a file; the engine keeps them in _LINKS
            f["to_group"] = h5py.SoftLink("/inner")
            f["dangling"] = h5py.SoftLink("/nowhere")
            f["outside"] = h5py.ExternalLink("other.nc", "/m")
        f["s_soft"] = h5py.SoftLink("/m")


def test_links_of_every_kind(tmp_path: Path) -> None:
    """Soft links to arrays are variables, in their own group or below, on the dimension
    netCDF-C names (the last link reaching the scale); soft links to a group or to nothing and
    external links stay in ``_LINKS``."""
    source = tmp_path / "links.nc"
    _linked_file(source, unfollowed=False)
    refs = _references(source, tmp_path)
    for group in (None, "inner"):
        with (
            xr.open_dataset(refs, engine="shadowzarr", group=group) as ours,
            xr.open_dataset(source, engine="netcdf4", group=group) as theirs,
        ):
            xr.testing.assert_identical(ours.load(), theirs.load())
            assert "_LINKS" not in ours.attrs
    with xr.open_dataset(source, engine="netcdf4") as theirs:
        assert set(theirs.dims) == {"s_soft"}
    source = tmp_path / "unfollowed.nc"
    _linked_file(source, unfollowed=True)
    refs = _references(source, tmp_path)
    with xr.open_dataset(refs, engine="shadowzarr") as ours:
        assert set(ours.variables) == {"m", "data", "z_hard", "a_hard", "s_soft"}
        assert {e["name"] for e in ours.attrs["_LINKS"]} == {"to_group", "dangling", "outside"}
        assert set(ours.dims) == {"s_soft"}
    with xr.open_dataset(refs, engine="shadowzarr", group="inner") as inner:
        np.testing.assert_array_equal(inner["up"].values, [4, 5, 6])


def test_enum_type_name_reaches_the_encoding(tmp_path: Path) -> None:
    """netCDF-4 enum variables: the mapping and the enum type's name (``enum_name``) are in
    ``encoding["dtype"]``'s metadata, as the netCDF4 engine puts them, also for a variable of
    a subgroup whose type is defined in the root group."""
    source = tmp_path / "enum.nc"
    with netCDF4.Dataset(source, "w") as root:
        cloud = root.createEnumType(np.uint8, "cloud_t", {"clear": 0, "cumulus": 1, "none": 255})
        root.createEnumType(np.uint8, "other_t", {"a": 0, "b": 1})
        root.createDimension("time", 4)
        variable = root.createVariable("cloud", cloud, ("time",), fill_value=255)
        variable[:] = np.array([0, 1, 255, 1], dtype=np.uint8)
        child = root.createGroup("site")
        inner = child.createVariable("cloud", cloud, ("time",), fill_value=255)
        inner[:] = np.array([1, 1, 0, 255], dtype=np.uint8)
    refs = _references(source, tmp_path)
    for group in (None, "site"):
        with (
            xr.open_dataset(refs, engine="shadowzarr", group=group) as ours,
            xr.open_dataset(source, engine="netcdf4", group=group) as theirs,
        ):
            xr.testing.assert_identical(ours.load(), theirs.load())
            expected = theirs["cloud"].encoding["dtype"]
            assert expected.metadata["enum_name"] == "cloud_t"
            assert ours["cloud"].encoding["dtype"] == expected
            assert ours["cloud"].encoding["dtype"].metadata == expected.metadata
            assert "_ENUM" not in ours["cloud"].attrs
            assert "_ENUM_NAME" not in ours["cloud"].attrs
