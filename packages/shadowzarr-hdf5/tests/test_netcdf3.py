"""netCDF-3 files (classic, 64-bit offset, CDF-5) written by netCDF4-python and scipy: the
references read back the values netCDF4-python reads, and xarray over them equals xarray over
the file; damaged and hostile headers are refused with typed errors."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr
from shadowzarr_spec import (
    DatasetNotFoundError,
    FileRef,
    ShadowzarrError,
    SourceError,
    SourceNotFoundError,
)

from shadowzarr_hdf5 import generate_rfs
from shadowzarr_hdf5.netcdf3 import NetCDF3FormatError

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

FORMATS = ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA"]
CLASSIC_TYPES = ["i1", "i2", "i4", "f4", "f8"]
CDF5_TYPES = ["u1", "u2", "u4", "i8", "u8"]
rng = np.random.default_rng(44)


def _values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    kind = np.dtype(dtype)
    if kind.kind == "f":
        return rng.normal(size=shape).astype(kind)
    info = np.iinfo(kind)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(kind)


def write_every_type(path: Path, fmt: str, records: int = 7) -> None:
    """Fixed and record variables of every type of ``fmt``, char arrays, attributes of every
    type, ``_FillValue``, packing attributes, a scalar and a coordinate variable."""
    types = CLASSIC_TYPES + (CDF5_TYPES if fmt == "NETCDF3_64BIT_DATA" else [])
    with netCDF4.Dataset(path, "w", format=fmt) as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 3)
        nc.createDimension("y", 5)
        nc.createDimension("strlen", 6)
        nc.title = "netCDF-3 through shadowzarr"
        nc.history = "caf\u00e9 written by netCDF4-python"
        for dtype in types:
            nc.setncattr(f"one_{dtype}", np.array([7], dtype=dtype))
            nc.setncattr(f"many_{dtype}", np.array([1, 2, 3], dtype=dtype))
        x = nc.createVariable("x", "f8", ("x",))
        x[:] = [10.0, 20.0, 30.0]
        x.units = "m"
        time = nc.createVariable("time", "f8", ("time",))
        time.units = "days since 2000-01-01"
        time[:] = np.arange(records, dtype="f8")
        for dtype in types:
            fixed = nc.createVariable(f"fixed_{dtype}", dtype, ("y", "x"))
            fixed[:] = _values(dtype, (5, 3))
            fixed.long_name = f"fixed {dtype}"
            fixed.valid_range = np.array([0, 100], dtype=dtype)
            rec = nc.createVariable(f"rec_{dtype}", dtype, ("time", "x"))
            rec[:] = _values(dtype, (records, 3))
            odd = nc.createVariable(f"rec1d_{dtype}", dtype, ("time",))
            odd[: records - 2] = _values(dtype, (records - 2,))  # the rest holds netCDF's fill
        filled = nc.createVariable("filled", "f4", ("time", "y"), fill_value=np.float32(-99.0))
        filled[:3] = _values("f4", (3, 5))
        packed = nc.createVariable("packed", "i2", ("y",), fill_value=np.int16(-1))
        packed.scale_factor = 0.5
        packed.add_offset = 10.0
        packed.set_auto_maskandscale(False)
        packed[:] = np.array([1, 2, -1, 4, 5], "i2")  # stored as given: -1 is the fill
        names = nc.createVariable("names", "S1", ("y", "strlen"))
        names[:] = netCDF4.stringtochar(np.array([b"a", b"bb", b"ccc", b"", b"eeeeee"], "S6"))
        labels = nc.createVariable("labels", "S1", ("time", "strlen"))
        labels[:] = netCDF4.stringtochar(np.array([f"t{i}".encode() for i in range(records)], "S6"))
        scalar = nc.createVariable("scalar", "i4", ())
        scalar.assignValue(42)


def raw_netcdf(path: Path) -> dict[str, np.ndarray]:
    """Every variable's stored values as netCDF4-python reads them, unmasked and unscaled."""
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        nc.set_auto_chartostring(False)
        return {name: np.asarray(var[...]) for name, var in nc.variables.items()}


def assert_same_values(path: Path, group: zarr.Group) -> None:
    expected = raw_netcdf(path)
    assert sorted(name for name, _ in group.arrays()) == sorted(expected)
    for name, values in expected.items():
        array = group[name]
        assert isinstance(array, zarr.Array)
        actual = array[...]
        assert actual.shape == values.shape, name
        assert actual.dtype.newbyteorder("=") == values.dtype.newbyteorder("="), name
        np.testing.assert_array_equal(actual, values, err_msg=name)


def assert_same_dataset(refs: Any, path: Path) -> None:
    """xarray over the references against xarray's netCDF4 engine over the file."""
    with xr.open_dataset(path, engine="netcdf4") as expected:
        actual = xr.open_dataset(refs, engine="shadowzarr")
        xr.testing.assert_identical(actual.load(), expected.load())
        for name in expected.variables:
            assert actual[name].dims == expected[name].dims, name
            assert actual[name].dtype == expected[name].dtype, name


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_type_reads_as_netcdf4_reads_it(tmp_path: Path, fmt: str, open_refs: Any) -> None:
    path = tmp_path / "every.nc"
    write_every_type(path, fmt)
    rfs = generate_rfs(path, inline_threshold=0)
    assert_same_values(path, open_refs(rfs))
    assert_same_dataset(rfs, path)
    # Interleaved records: one chunk per record, one gen entry per record variable.
    with netCDF4.Dataset(path) as nc:
        record_variables = [n for n, v in nc.variables.items() if v.dimensions[:1] == ("time",)]
    assert sorted(entry.key.split("/")[0] for entry in rfs.gen) == sorted(record_variables)
    group = open_refs(rfs)
    assert group["rec_i2"].chunks == (1, 3)
    assert group["rec_i2"].metadata.dimension_names == ("time", "x")
    assert group["fixed_f8"].metadata.dimension_names == ("y", "x")


@pytest.mark.parametrize("fmt", FORMATS)
def test_attributes_and_fill_values(tmp_path: Path, fmt: str, open_refs: Any) -> None:
    path = tmp_path / "attributes.nc"
    write_every_type(path, fmt)
    group = open_refs(generate_rfs(path))
    with netCDF4.Dataset(path) as nc:
        for name in nc.ncattrs():
            expected = nc.getncattr(name)
            actual = group.attrs[name]
            if isinstance(expected, str):
                assert actual == expected, name
            else:
                np.testing.assert_array_equal(np.asarray(actual), expected, err_msg=name)
        assert group["filled"].fill_value == np.float32(-99.0)
        assert group["packed"].fill_value == -1
        # Without _FillValue, the array's fill is netCDF's default and no attribute is made.
        assert group["fixed_i2"].fill_value == -32767
        assert "_FillValue" not in group["fixed_i2"].attrs
        assert group["packed"].attrs["scale_factor"] == 0.5
        np.testing.assert_array_equal(group["fixed_i4"].attrs["valid_range"], [0, 100])
    with xr.open_dataset(path, engine="netcdf4") as expected:
        actual = xr.open_dataset(generate_rfs(path), engine="shadowzarr")
        assert actual["packed"].encoding["_FillValue"] == expected["packed"].encoding["_FillValue"]
        np.testing.assert_array_equal(actual["packed"].values, [10.5, 11.0, np.nan, 12.0, 12.5])
        assert actual["labels"].values.tolist() == [f"t{i}".encode() for i in range(7)]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ["i1", "i2", "f8"])
def test_one_record_variable_has_no_padding(
    tmp_path: Path, fmt: str, dtype: str, open_refs: Any
) -> None:
    """The only record variable's records follow each other unpadded: one block, cut into
    slabs of many records (an odd record size would misplace every record after the first if
    the padding were assumed)."""
    path = tmp_path / "single.nc"
    values = _values(dtype, (1000, 3))
    with netCDF4.Dataset(path, "w", format=fmt) as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 3)
        nc.createVariable("fixed", "f4", ("x",))[:] = [1.0, 2.0, 3.0]
        nc.createVariable("v", dtype, ("time", "x"))[:] = values
    rfs = generate_rfs(path, contiguous_chunk_bytes=600)
    group = open_refs(rfs)
    np.testing.assert_array_equal(group["v"][...], values)
    assert group["v"].chunks[0] > 1
    assert_same_values(path, group)
    assert_same_dataset(rfs, path)


@pytest.mark.parametrize("version", [1, 2])
def test_scipy_files(tmp_path: Path, version: int, open_refs: Any) -> None:
    from scipy.io import netcdf_file

    path = tmp_path / "scipy.nc"
    with netcdf_file(path, "w", version=version) as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 5)
        nc.institution = b"scipy"
        nc.createVariable("x", "f4", ("x",))[:] = np.arange(5, dtype="f4")
        only = nc.createVariable("only", "i2", ("time", "x"))
        only[:] = np.arange(45, dtype="i2").reshape(9, 5)
        only.units = b"counts"
    rfs = generate_rfs(path, inline_threshold=0)
    assert_same_values(path, open_refs(rfs))
    assert_same_dataset(rfs, path)


def test_streaming_record_count(tmp_path: Path, open_refs: Any) -> None:
    """numrecs STREAMING (all ones): the number of records follows from the file's size."""
    path = tmp_path / "stream.nc"
    write_every_type(path, "NETCDF3_CLASSIC", records=5)
    expected = raw_netcdf(path)
    data = bytearray(path.read_bytes())
    data[4:8] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))
    group = open_refs(generate_rfs(path, inline_threshold=0))
    for name, values in expected.items():
        np.testing.assert_array_equal(group[name][...], values, err_msg=name)


def test_many_records_are_one_gen_entry(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "long.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as nc:
        nc.createDimension("time", None)
        for name in ("a", "b"):
            nc.createVariable(name, "f4", ("time",))[:] = np.arange(20_000, dtype="f4") + ord(name)
    rfs = generate_rfs(path)
    assert len(rfs.gen) == 2
    assert not [key for key in rfs.refs if "/c/" in key]
    group = open_refs(rfs)
    np.testing.assert_array_equal(group["b"][...], np.arange(20_000, dtype="f4") + ord("b"))


def test_only_named_variables(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "every.nc"
    write_every_type(path, "NETCDF3_CLASSIC")
    group = open_refs(generate_rfs(path, datasets=["rec_f4", "x"]))
    assert sorted(name for name, _ in group.arrays()) == ["rec_f4", "x"]
    np.testing.assert_array_equal(group["rec_f4"][...], raw_netcdf(path)["rec_f4"])
    with pytest.raises(DatasetNotFoundError, match="nothing"):
        generate_rfs(path, datasets=["nothing"])


@pytest.mark.network
@pytest.mark.parametrize("fmt", FORMATS)
def test_over_http(nginx: Any, nginx_root: Path, fmt: str, open_refs: Any) -> None:
    """Headers read with range requests; references point at the URL; size and ETag kept."""
    path = nginx_root / "every.nc"
    write_every_type(path, fmt)
    url = nginx.url("every.nc")
    rfs = generate_rfs(url, inline_threshold=0)
    urls = {ref.url for ref in rfs.refs.values() if isinstance(ref, FileRef)}
    assert urls | {entry.url for entry in rfs.gen} == {url}
    assert rfs.sources[url].size == path.stat().st_size
    assert rfs.sources[url].etag
    assert_same_values(path, open_refs(rfs))
    assert_same_dataset(rfs, path)


@pytest.mark.network
def test_large_remote_header_is_read_in_growing_ranges(nginx: Any, nginx_root: Path) -> None:
    """A header longer than the first read (many variables with long attributes) is read on,
    and the data after it is not."""
    path = nginx_root / "wide.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("x", 400_000)
        for i in range(8):
            var = nc.createVariable(f"v{i:02d}", "f4", ("x",), fill_value=np.float32(i))
            var.comment = "c" * 10_000
    size = path.stat().st_size
    nginx.reset()
    rfs = generate_rfs(nginx.url("wide.nc"), inline_threshold=0)
    assert sum(1 for key in rfs.refs if key.endswith("/zarr.json")) == 8
    assert nginx.bytes_sent() < 1_000_000 < 10_000_000 < size


def test_single_variable_references_name_exact_bytes(tmp_path: Path) -> None:
    """A record's chunk is the record's values, not its padding: recsize stride, exact size."""
    path = tmp_path / "pad.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 3)
        nc.createVariable("a", "i2", ("time", "x"))[:] = np.ones((4, 3), "i2")
        nc.createVariable("b", "i1", ("time",))[:] = np.arange(4, dtype="i1")
    rfs = generate_rfs(path, inline_threshold=0)
    entries = {entry.key.split("/")[0]: entry for entry in rfs.gen}
    assert entries["a"].length == "6"
    assert entries["b"].length == "1"
    assert entries["a"].offset.endswith(" + i * 12}}")  # 8 (6 padded) + 4 (1 padded)


# -- hostile and damaged files --------------------------------------------------------------


def _header(numrecs: int, dims: list[tuple[bytes, int]], version: int = 1) -> bytes:
    wide = ">Q" if version == 5 else ">I"
    out = b"CDF" + bytes([version]) + struct.pack(wide, numrecs)
    out += struct.pack(">I", 0x0A) + struct.pack(wide, len(dims))
    for name, length in dims:
        out += struct.pack(wide, len(name)) + name + b"\x00" * (-len(name) % 4)
        out += struct.pack(wide, length)
    return out + b"\x00" * 8 * (2 if version != 5 else 3)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"CDF\x01" + struct.pack(">II", 0, 0x0A) + struct.pack(">I", 2**31), "dimensions claimed"),
        (b"CDF\x05" + struct.pack(">QIQ", 0, 0x0A, 1) + struct.pack(">Q", 2**32), "bytes remain"),
        (b"CDF\x01" + struct.pack(">7I", 0, 0, 0, 0, 0, 0x0B, 10**9), "variables claimed"),
        (_header(0, [(b"a", 0), (b"b", 0)]), "more than one record"),
        (_header(0, [(b"a/b", 1)]), "'/'"),
        (_header(0, [(b"\xff\xfe", 1)]), "not UTF-8"),
        (_header(0, [(b"a", 1), (b"a", 2)]), "defined twice"),
        (b"CDF\x01" + struct.pack(">II", 0, 0x0C) + b"\x00" * 4, "expected the dimension list"),
        (b"CDF\x01\x00\x00", "past the end of the file"),
    ],
)
def test_hostile_headers_are_refused_at_once(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "hostile.nc"
    path.write_bytes(data + b"\x00" * 64 if message != "past the end of the file" else data)
    with pytest.raises(NetCDF3FormatError, match=message) as caught:
        generate_rfs(path)
    assert "hostile.nc" in str(caught.value)
    assert isinstance(caught.value, SourceError)


def test_missing_local_file_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError, match=r"nothing\.nc"):
        generate_rfs(tmp_path / "nothing.nc")


def test_fill_of_a_char_variable_stays_in_the_array(tmp_path: Path, open_refs: Any) -> None:
    """xarray's Zarr backend cannot decode a bytes ``_FillValue``: char variables keep it only
    as the array's fill value, so xarray opens the references (showing the fill characters)."""
    path = tmp_path / "chars.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("s", 3)
        chars = nc.createVariable("c", "S1", ("s",), fill_value=b"x")
        chars[0] = b"a"
    rfs = generate_rfs(path, inline_threshold=0)
    array = open_refs(rfs)["c"]
    assert array.fill_value == b"x"
    assert "_FillValue" not in array.attrs
    assert xr.open_dataset(rfs, engine="shadowzarr")["c"].values[()] == b"axx"  # one string


def test_data_past_the_end_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cut.nc"
    write_every_type(path, "NETCDF3_64BIT_OFFSET")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 8])
    with pytest.raises(NetCDF3FormatError, match="past the end of the file"):
        generate_rfs(path)


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutated_headers_generate_or_raise_typed_errors(tmp_path: Path, fmt: str) -> None:
    """100 seeded mutations per format (truncations, flipped and overwritten header bytes):
    each generates references or raises one of our typed errors, never anything else."""
    source = tmp_path / "source.nc"
    write_every_type(source, fmt, records=3)
    original = source.read_bytes()
    header_end = _header_length(original)
    chooser = random.Random(f"netcdf3-{fmt}")
    outcomes = {"generated": 0, "refused": 0}
    for case in range(100):
        data = bytearray(original)
        action = chooser.choice(["truncate", "flip", "overwrite", "count"])
        if action == "truncate":
            data = data[: chooser.randrange(0, header_end + 64)]
        elif action == "flip":
            for _ in range(chooser.randint(1, 4)):
                data[chooser.randrange(4, header_end)] ^= 1 << chooser.randrange(8)
        elif action == "overwrite":
            at = chooser.randrange(4, header_end - 4)
            data[at : at + 4] = chooser.choice(OVERWRITES)
        else:  # a count or length 4-byte aligned, set large
            at = chooser.randrange(1, header_end // 4) * 4
            data[at : at + 4] = struct.pack(">I", chooser.choice([2**31, 2**32 - 1, 10**6, 3]))
        path = tmp_path / f"case{case}.nc"
        path.write_bytes(bytes(data))
        try:
            generate_rfs(path)
        except ShadowzarrError:
            outcomes["refused"] += 1
        else:
            outcomes["generated"] += 1
    assert outcomes["refused"] > 20


OVERWRITES = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x00\x00\x00\x00", b"\x80\x00\x00\x01"]


def _header_length(data: bytes) -> int:
    """Where the first variable's data begins (the header ends at or before it)."""
    from shadowzarr_hdf5.netcdf3.header import read_header

    header = read_header(lambda offset, n: data[offset : offset + n], len(data), "source.nc")
    return min(variable.begin for variable in header.variables)
