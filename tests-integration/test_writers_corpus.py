"""Files written by the writers real data comes from, referenced and read back.

netCDF4-python, h5netcdf, xarray, pandas (fixed and table formats, through PyTables), PyTables
itself, anndata, h5py (every layout and type), hdf5plugin (every filter it ships), a SNIRF-like
file (gzip and scale-offset), tifffile, and an Aperio SVS-like tiled JPEG slide. Every dataset
and attribute is compared with the native reader (h5py or h5netcdf, tifffile), and every
dataset the references cannot describe must meet the documented policy: inlined (decoded by
HDF5) when small, otherwise omitted, with the reason recorded.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import numpy as np
import pytest
import tifffile
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import (
    ConventionTypeWarning,
    UnsupportedDatasetWarning,
    read_local_rfs,
    write_rfs,
)
from shadowzarr_spec.hdf5_types import convention_datasets
from shadowzarr_store import RfsStore, open_rfs
from shadowzarr_testing.compare import assert_array_equal_exact
from shadowzarr_testing.hdf5_compare import compare_hdf5
from shadowzarr_tiff import generate_rfs_tiff

pytestmark = [
    pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning:anndata.*"),
    pytest.mark.filterwarnings("ignore::tables.NaturalNameWarning"),
    pytest.mark.filterwarnings("ignore::pandas.errors.PerformanceWarning"),
]

RNG = np.random.default_rng(2021)
Writer = Callable[[Path], Path]
WRITERS: dict[str, Writer] = {}
EXPECTED: dict[str, dict[str, str]] = {}
"""Per writer: path → policy outcome of every dataset the references cannot describe."""


def writer(name: str, **unsupported: str) -> Callable[[Writer], Writer]:
    def register(write: Writer) -> Writer:
        WRITERS[name] = write
        EXPECTED[name] = {key.replace("__", "/"): value for key, value in unsupported.items()}
        return write

    return register


def _field(shape: tuple[int, ...], dtype: str = "f4") -> np.ndarray:
    smooth = np.cumsum(RNG.normal(size=shape), axis=-1)
    return smooth.astype(dtype) if np.dtype(dtype).kind == "f" else (smooth * 10).astype(dtype)


@writer("netcdf4")
def _netcdf4(root: Path) -> Path:
    import netCDF4

    path = root / "netcdf4.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.title = "netCDF4-python"
        nc.createDimension("time", None)
        nc.createDimension("x", 30)
        nc.createDimension("name", 6)
        time = nc.createVariable("time", "f8", ("time",))
        time.units = "days since 2000-01-01"
        time[:] = np.arange(20)
        for compression in ["zlib", "bzip2", "szip", "zstd", "blosc_lz4"]:
            kwargs: dict[str, Any] = {"compression": compression}
            if compression == "szip":
                kwargs.update(szip_coding="nn", szip_pixels_per_block=8)
            dtype = "i4" if compression == "szip" else "f4"
            var = nc.createVariable(
                compression, dtype, ("time", "x"), fill_value=-99, chunksizes=(5, 30), **kwargs
            )
            var.scale_factor, var.add_offset, var.valid_range = 0.5, 1.0, [0, 100]
            var[:15] = (np.arange(450).reshape(15, 30) % 37).astype(dtype)  # rows 15.. unwritten
        shuffled = nc.createVariable("shuffled", "i2", ("x",), zlib=True, shuffle=True)
        shuffled[:] = np.arange(30)
        record = np.dtype([("id", "i4"), ("label", "S1", (6,)), ("weight", "f8")])
        kind = nc.createCompoundType(record, "record")
        records = nc.createVariable("records", kind, ("x",))
        values = np.zeros(30, record)
        values["id"], values["weight"] = np.arange(30), np.linspace(0, 1, 30)
        values["label"] = [list(b"abcdef")] * 30
        records[:] = values
        ragged_type = nc.createVLType(np.int32, "ragged_int")
        ragged = nc.createVariable("ragged", ragged_type, ("x",))
        for i in range(30):
            ragged[i] = np.arange(i % 5, dtype="i4")
        chars = nc.createVariable("chars", "S1", ("x", "name"))
        chars[:] = netCDF4.stringtochar(np.array([f"s{i:04d}" for i in range(30)], dtype="S6"))
        group = nc.createGroup("nested")
        group.comment = "a group"
        text = group.createVariable("text", str, ("x",))
        text[:] = np.array([f"é{i}" for i in range(30)], dtype=object)
    return path


@writer("h5netcdf")
def _h5netcdf(root: Path) -> Path:
    import h5netcdf

    path = root / "h5netcdf.nc"
    with h5netcdf.File(path, "w") as nc:
        nc.dimensions = {"t": 40, "c": 3}
        nc.attrs["history"] = "written by h5netcdf"
        data = nc.create_variable("data", ("t", "c"), "f8", chunks=(10, 3), compression="gzip")
        data[...] = _field((40, 3), "f8")
        data.attrs["units"] = "mV"
        data.attrs["scale_factor"] = np.array([0.5])
        packed = nc.create_variable("packed", ("t",), "i2", chunks=(8,), shuffle=True,
                                    compression="gzip")  # fmt: skip
        packed[...] = (np.arange(40) - 20).astype("i2")
        nc.create_variable("t", ("t",), "f8")[...] = np.arange(40.0)
    return path


@writer("xarray")
def _xarray(root: Path) -> Path:
    import xarray as xr

    path = root / "xarray.nc"
    dataset = xr.Dataset(
        {
            "temperature": (("time", "x"), _field((12, 8), "f8"), {"units": "K"}),
            "counts": (("x",), np.arange(8, dtype="i4")),
            "flags": (("x",), np.array([True, False] * 4)),
        },
        coords={"time": np.arange(12.0), "x": np.arange(8) * 10},
        attrs={"title": "xarray through netCDF4", "complex_free": 1},
    )
    encoding = {
        "temperature": {"zlib": True, "dtype": "i2", "scale_factor": 0.01, "_FillValue": -1},
        "counts": {"_FillValue": -1},
    }
    dataset.to_netcdf(path, engine="netcdf4", encoding=encoding)
    return path


@writer("pandas")
def _pandas(root: Path) -> Path:
    import pandas as pd

    path = root / "pandas.h5"
    frame = pd.DataFrame(
        {
            "a": np.arange(60),
            "b": RNG.normal(size=60),
            "c": [f"row{i}" for i in range(60)],
        }
    )
    frame.to_hdf(path, key="table", format="table", data_columns=["a"], complib="blosc:lz4",
                 complevel=5)  # fmt: skip
    frame.to_hdf(path, key="fixed", format="fixed", mode="a")
    mixed = pd.DataFrame({"objects": [1, "two", 3.0, None] * 5})
    mixed.to_hdf(path, key="objects", format="fixed", mode="a")
    return path


@writer("pytables")
def _pytables(root: Path) -> Path:
    import tables

    path = root / "pytables.h5"

    class Row(tables.IsDescription):
        x = tables.Int32Col()
        y = tables.Float64Col(shape=(3,))
        label = tables.StringCol(8)

    with tables.open_file(path, "w") as t:
        vlarray = t.create_vlarray("/", "vlarray", tables.Int32Atom(), filters=tables.Filters(3))
        for i in range(30):
            vlarray.append(np.arange(i))
        strings = t.create_vlarray("/", "vlstrings", tables.VLStringAtom())
        strings.append(b"hello")
        strings.append(b"")
        for complib in ["zlib", "bzip2", "blosc:zstd", "blosc2:lz4"]:
            name = complib.replace(":", "_")
            array = t.create_carray("/", name, tables.Float64Atom(), shape=(200, 10),
                                    filters=tables.Filters(5, complib=complib))  # fmt: skip
            array[:] = _field((200, 10), "f8")
        table = t.create_table("/", "table", Row)
        row = table.row
        for i in range(40):
            row["x"], row["y"], row["label"] = i, [i, i / 2, i / 3], f"s{i}".encode()
            row.append()
        table.flush()
        t.root._v_attrs.complex_value = 1 + 2j
    return path


@writer("anndata")
def _anndata(root: Path) -> Path:
    import anndata
    import pandas as pd
    import scipy.sparse

    path = root / "anndata.h5ad"
    matrix = scipy.sparse.random(40, 25, density=0.1, format="csr", random_state=3, dtype="f4")
    cells = pd.DataFrame(
        {"cell": pd.Categorical(["a", "b"] * 20)}, index=[f"c{i}" for i in range(40)]
    )
    genes = pd.DataFrame(
        {"gene_ids": [f"g{i}" for i in range(25)]}, index=[f"v{i}" for i in range(25)]
    )
    adata = anndata.AnnData(
        X=matrix, obs=cells, var=genes, uns={"params": {"k": 5, "name": "run"}},
        obsm={"X_pca": RNG.normal(size=(40, 3))},
    )  # fmt: skip
    adata.write_h5ad(path, compression="gzip")
    return path


@writer(
    "h5py",
    long_double="omitted",
    missing_source_vds="omitted",
    sz3_small="inlined",
    sz3_large="omitted",
)
def _h5py(root: Path) -> Path:
    path = root / "h5py.h5"
    with h5py.File(root / "source.h5", "w") as source:
        source.create_dataset("frames", data=_field((20, 4), "f8"), chunks=(5, 4))
    with h5py.File(root / "gone.h5", "w") as gone:
        gone.create_dataset("x", data=np.arange(4))
    with h5py.File(path, "w", track_order=True) as f:
        f.attrs["complex"] = 1 - 2j
        f.attrs["pair"] = [1.0, 2.0]
        table = f.create_dataset("target/table", data=np.arange(60, dtype="i4").reshape(6, 10))
        regions = f.create_dataset("regions", shape=(3,), dtype=h5py.regionref_dtype)
        regions[0], regions[1] = table.regionref[1:4, 2:5], table.regionref[::2, 7]
        f.attrs["region"] = table.regionref[0]
        objects = f.create_dataset("objects", shape=(2,), dtype=h5py.ref_dtype)
        objects[0] = table.ref
        ordered = f.create_group("ordered", track_order=True)
        for name in ["z", "a", "m"]:
            ordered.create_dataset(name, data=np.arange(3))
        f.create_dataset("long_double", data=np.arange(5, dtype=np.longdouble))
        f.create_dataset("ragged", data=np.array([np.arange(3), np.arange(0)], dtype=object),
                         dtype=h5py.vlen_dtype("i8"))  # fmt: skip
        record = np.dtype([("id", "<u2"), ("xyz", "<f4", (3,))])
        f.create_dataset("records", data=np.ones(50, record), chunks=(10,), compression="lzf")
        layout = h5py.VirtualLayout(shape=(40, 4), dtype="f8")
        layout[:20] = h5py.VirtualSource("source.h5", "frames", shape=(20, 4))
        layout[20:] = h5py.VirtualSource(".", "local_frames", shape=(20, 4))
        f.create_dataset("local_frames", data=_field((20, 4), "f8"), chunks=(5, 4))
        f.create_virtual_dataset("virtual", layout, fillvalue=0.0)
        missing = h5py.VirtualLayout(shape=(4,), dtype="i8")
        missing[:] = h5py.VirtualSource("gone.h5", "x", shape=(4,))
        f.create_virtual_dataset("missing_source_vds", missing)
        sz3 = hdf5plugin.SZ3(absolute=1e-3)
        f.create_dataset("sz3_small", data=_field((300,), "f4"), chunks=(100,), **sz3)
        f.create_dataset("sz3_large", data=_field((1024, 300), "f4"), chunks=(256, 300), **sz3)
    os.remove(root / "gone.h5")
    return path


@writer("hdf5plugin")
def _hdf5plugin(root: Path) -> Path:
    path = root / "hdf5plugin.h5"
    filters = {
        "bzip2": hdf5plugin.BZip2(),
        "lz4": hdf5plugin.LZ4(),
        "bitshuffle_lz4": hdf5plugin.Bitshuffle(cname="lz4"),
        "bitshuffle_zstd": hdf5plugin.Bitshuffle(cname="zstd"),
        "blosc_zstd": hdf5plugin.Blosc(cname="zstd", shuffle=hdf5plugin.Blosc.BITSHUFFLE),
        "blosc2": hdf5plugin.Blosc2(cname="lz4"),
        "zfp": hdf5plugin.Zfp(reversible=True),
        "zstd": hdf5plugin.Zstd(),
    }
    with h5py.File(path, "w") as f:
        for name, options in filters.items():
            f.create_dataset(name, data=_field((70, 33), "f4"), chunks=(16, 16), **options)
            f.create_dataset(f"small/{name}", data=_field((10, 10), "f4"), chunks=(5, 10),
                             **options)  # fmt: skip
    return path


@writer("snirf")
def _snirf(root: Path) -> Path:
    """The fNIRS standard's layout, with gzip and scale-offset as the SNIRF writers use them."""
    path = root / "snirf.snirf"
    with h5py.File(path, "w") as f:
        f.create_dataset("formatVersion", data="1.1")
        nirs = f.create_group("nirs")
        data = nirs.create_group("data1")
        data.create_dataset("dataTimeSeries", data=_field((2000, 16), "f8"), chunks=(500, 16),
                            compression="gzip", scaleoffset=4)  # fmt: skip
        data.create_dataset("time", data=np.arange(2000) / 10.0, compression="gzip")
        for index in range(1, 17):
            channel = data.create_group(f"measurementList{index}")
            for key, value in [("sourceIndex", index % 4 + 1), ("detectorIndex", index % 3 + 1),
                               ("wavelengthIndex", index % 2 + 1), ("dataType", 1)]:  # fmt: skip
                channel.create_dataset(key, data=np.int32(value))
        probe = nirs.create_group("probe")
        probe.create_dataset("wavelengths", data=[760.0, 850.0])
        probe.create_dataset("sourcePos3D", data=_field((4, 3), "f8"), scaleoffset=2)
        meta = nirs.create_group("metaDataTags")
        for key, value in [("SubjectID", "s01"), ("MeasurementDate", "2024-01-01"),
                           ("LengthUnit", "mm"), ("TimeUnit", "s")]:  # fmt: skip
            meta.create_dataset(key, data=value)
    return path


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_writer_files_read_back_equal(tmp_path: Path, name: str) -> None:
    path = WRITERS[name](tmp_path)
    expected = EXPECTED[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnsupportedDatasetWarning)
        warnings.simplefilter("always", ConventionTypeWarning)
        rfs = generate_rfs(path)
    omitted = {p for p, outcome in expected.items() if outcome == "omitted"}
    policy = [w for w in caught if issubclass(w.category, UnsupportedDatasetWarning)]
    assert len(policy) == (1 if omitted else 0)
    conventions = [str(w.message) for w in caught if issubclass(w.category, ConventionTypeWarning)]
    named = convention_datasets(rfs)
    assert len(conventions) == (1 if named else 0)
    assert all(f"{p} ({attribute})" in conventions[0] for p, attribute in named.items())
    out = tmp_path / "refs.shadowzarr"
    write_rfs(rfs, out)
    loaded = read_local_rfs(out)
    assert {p: u.outcome for p, u in loaded.unsupported.items()} == expected
    root = open_rfs(loaded)
    seen = compare_hdf5(path, root, loaded)
    assert seen.outcomes == expected
    assert seen.datasets
    if path.suffix == ".nc":
        _same_in_xarray(path, loaded)


def _same_in_xarray(path: Path, rfs: Any) -> None:
    """xarray over the references equals xarray over the file (its numbers and strings:
    compounds and variable-length sequences, which xarray does not decode, were compared)."""
    import xarray as xr

    with h5py.File(path) as f:
        other = [
            name
            for name, obj in f.items()
            if isinstance(obj, h5py.Dataset)
            and (obj.dtype.names is not None or (h5py.check_vlen_dtype(obj.dtype) is not None
                 and h5py.check_string_dtype(obj.dtype) is None))
        ]  # fmt: skip
    with xr.open_dataset(path, engine="h5netcdf", drop_variables=other) as expected:
        store = RfsStore(rfs)
        actual = xr.open_dataset(store, engine="shadowzarr", drop_variables=other)
        xr.testing.assert_identical(actual.load(), expected.load())


def _svs(path: Path) -> None:
    """An Aperio SVS-like slide: tiled JPEG levels sharing JPEGTables, a thumbnail, a label."""
    import imagecodecs

    def abbreviated(image: np.ndarray, tile: int) -> tuple[list[bytes], bytes]:
        tiles, tables = [], b""
        for y in range(0, image.shape[0], tile):
            for x in range(0, image.shape[1], tile):
                block = np.zeros((tile, tile, 3), np.uint8)
                part = image[y : y + tile, x : x + tile]
                block[: part.shape[0], : part.shape[1]] = part
                stream = bytes(imagecodecs.jpeg8_encode(block, level=85))
                scan = stream.index(b"\xff\xda")
                head, segments, position = [], [], 2
                while position < scan:
                    length = int.from_bytes(stream[position + 2 : position + 4], "big")
                    segment = stream[position : position + 2 + length]
                    (segments if segment[1] in (0xDB, 0xC4) else head).append(segment)
                    position += 2 + length
                tables = b"\xff\xd8" + b"".join(segments) + b"\xff\xd9"
                kept = [s for s in head if not 0xE0 <= s[1] <= 0xEF]
                tiles.append(b"\xff\xd8" + b"".join(kept) + stream[scan:])
        return tiles, tables

    ramp = np.add.outer(np.arange(384), np.arange(512)) % 256
    slide = np.clip(ramp[..., None] + RNG.integers(0, 20, (384, 512, 3)), 0, 255).astype("u1")
    text = "Aperio Image Library v12.0.15 \n512x384 (128x128) JPEG/RGB Q=85|AppMag = 20"
    with tifffile.TiffWriter(path) as tif:
        for index, image in enumerate([slide, None, slide[::2, ::2].copy()]):
            if image is None:
                tif.write(slide[::8, ::8].copy(), photometric="rgb", metadata=None,
                          description="thumbnail")  # fmt: skip
                continue
            tiles, tables = abbreviated(image, 128)
            tif.write(iter(tiles), shape=image.shape, dtype="u1", tile=(128, 128),
                      compression="jpeg", photometric="rgb", metadata=None,
                      description=text + ("|MPP = 0.5" if index == 0 else ""),
                      extratags=[(347, 7, len(tables), tables, True)])  # fmt: skip


TIFFS: dict[str, Callable[[Path], None]] = {
    "svs": _svs,
    "tiled_jpeg_ycbcr": lambda p: tifffile.imwrite(
        p, _field((256, 320, 3), "f4").clip(0, 255).astype("u1"), tile=(64, 64),
        compression="jpeg", photometric="ycbcr", subsampling=(2, 2),
    ),
    "pyramid_zstd": lambda p: _pyramid(p),
    "stack_lzw": lambda p: tifffile.imwrite(
        p, (_field((5, 60, 70), "f4") * 30).astype("u2"), compression="lzw", predictor=True
    ),
}  # fmt: skip


def _pyramid(path: Path) -> None:
    image = (_field((128, 96), "f4") * 100).astype("i2")
    with tifffile.TiffWriter(path, ome=True) as tif:
        tif.write(image, subifds=2, tile=(32, 32), compression="zstd")
        tif.write(image[::2, ::2].copy(), subfiletype=1, tile=(32, 32), compression="zstd")
        tif.write(image[::4, ::4].copy(), subfiletype=1, tile=(32, 32), compression="zstd")


@pytest.mark.parametrize("name", sorted(TIFFS))
def test_tiff_writer_files_read_like_tifffile(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.tif"
    TIFFS[name](path)
    out = tmp_path / "refs.json"
    write_rfs(generate_rfs_tiff(path), out)
    root = open_rfs(read_local_rfs(out))
    with tifffile.TiffFile(path) as tif:
        if name == "svs":
            assert tif.is_svs
            assert tif.pages.first.jpegtables is not None
        for index, series in enumerate(tif.series):
            for number, level in enumerate(series.levels):
                key = f"{index}/{number}" if len(series.levels) > 1 else str(index)
                assert_array_equal_exact(root[key][...], level.asarray(), f"{name} {key}")


def test_cli_summary_names_omitted_datasets(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = _h5py(tmp_path)
    command = Path(sys.executable).with_name("shadowzarr")
    result = subprocess.run(
        [str(command), "generate", str(path), "-o", str(tmp_path / "out.json")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "3 dataset(s) omitted" in result.stdout
    for name in ["long_double", "missing_source_vds", "sz3_large"]:
        assert f"    {name}: " in result.stdout
    assert "1 dataset(s) inlined (decoded)" in result.stdout
