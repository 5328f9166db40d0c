"""write_virtual_nwb against the native readers: NWB files drawing on SpikeGLX, Open Ephys, Intan,
Blackrock, BrainVision, TIFF and HDF5 sources, read back through NWBZarrIO, validated with pynwb,
exported to NWB HDF5 and compared dataset by dataset with the sources and with an ordinary
conversion of the same values."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
from hdmf_zarr import NWBZarrIO
from nwb_compare_files import assert_same_datasets, hdf5_datasets
from nwb_files import build_nwbfile
from nwb_sources import SOURCES, Series
from pynwb import NWBHDF5IO, validate
from shadowzarr_spec import FileRef, InlineRef, VirtualArray, read_local_rfs
from shadowzarr_spec.keys import array_of_chunk_key
from shadowzarr_store import RfsStore

from shadowzarr_nwb import VirtualDatasetMismatch, virtual_nwb_rfs, write_virtual_nwb

if TYPE_CHECKING:
    from pathlib import Path


def _check_reads(path: Path, series: list[Series]) -> None:
    """Read through NWBZarrIO: every series equals its source; the file validates."""
    with NWBZarrIO(RfsStore(read_local_rfs(path)), mode="r") as io:
        nwbfile = io.read()
        for item in series:
            read = nwbfile.acquisition[item.name]
            np.testing.assert_array_equal(read.data[:], item.expected, err_msg=item.name)
            assert read.data.dtype == item.expected.dtype
            if item.expected_timestamps is not None:
                np.testing.assert_array_equal(read.timestamps[:], item.expected_timestamps)
        assert validate(io=io) == []


def _export(path: Path, target: Path) -> None:
    with NWBZarrIO(RfsStore(read_local_rfs(path)), mode="r") as io:
        nwbfile = io.read()
        with NWBHDF5IO(str(target), mode="w") as out:
            out.export(src_io=io, nwbfile=nwbfile, write_args={"link_data": False})


def _check_export(path: Path, series: list[Series], tmp_path: Path) -> None:
    """Exported to NWB HDF5: valid, each series equal to its source, and every dataset equal to
    an ordinary conversion of the same values."""
    exported = tmp_path / "exported.nwb"
    _export(path, exported)
    with NWBHDF5IO(str(exported), mode="r") as io:
        assert validate(io=io) == []
        nwbfile = io.read()
        for item in series:
            np.testing.assert_array_equal(nwbfile.acquisition[item.name].data[:], item.expected)
    ordinary = tmp_path / "ordinary.nwb"
    with NWBHDF5IO(str(ordinary), mode="w") as io:
        io.write(build_nwbfile(series, virtual=False))
    assert_same_datasets(hdf5_datasets(exported), hdf5_datasets(ordinary))


def _check_no_data_inline(path: Path, series: list[Series]) -> None:
    """Every chunk of a virtual series is a reference into a source file, never copied."""
    rfs = read_local_rfs(path)
    virtual = {f"acquisition/{item.name}/data" for item in series}
    for key, ref in rfs.refs.items():
        parsed = array_of_chunk_key(key)
        if parsed is not None and parsed[0] in virtual:
            assert isinstance(ref, FileRef), key
    covered = {entry.key.split("/c/")[0] for entry in rfs.gen} | set(rfs.indexes)
    listed = {array_of_chunk_key(k)[0] for k in rfs.refs if array_of_chunk_key(k) is not None}
    assert virtual <= covered | listed


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_source_format(source: str, tmp_path: Path) -> None:
    series = SOURCES[source](tmp_path / "sources")
    assert series
    path = write_virtual_nwb(build_nwbfile(series, virtual=True), tmp_path / "session.shadowzarr")
    assert (path / "refs.json").is_file()
    _check_no_data_inline(path, series)
    _check_reads(path, series)
    _check_export(path, series, tmp_path)


@pytest.mark.slow
def test_many_sources_in_one_file(tmp_path: Path) -> None:
    """One JSON file drawing on every source format at once, with each file's size recorded."""
    series = [item for make in SOURCES.values() for item in make(tmp_path / "sources")]
    path = write_virtual_nwb(build_nwbfile(series, virtual=True), tmp_path / "all.json")
    document = json.loads(path.read_text())
    assert document["version"] == 2
    recorded = read_local_rfs(path).sources
    for source in (tmp_path / "sources").rglob("*"):
        if source.suffix in (".bin", ".dat", ".tif", ".h5"):
            assert recorded[str(source)].size == source.stat().st_size
    _check_no_data_inline(path, series)
    _check_reads(path, series)
    _check_export(path, series, tmp_path)


def test_manifest_and_consolidated_metadata(tmp_path: Path) -> None:
    """Chunks listed out of order get a chunk manifest; the root's consolidated metadata describes
    the virtual array as its own zarr.json does."""
    rng = np.random.default_rng(3)
    values = rng.integers(-1000, 1000, size=(64 * 50, 4), dtype=np.int16)
    order = rng.permutation(50)
    raw = tmp_path / "shuffled.bin"
    raw.write_bytes(b"".join(values[64 * i : 64 * (i + 1)].tobytes() for i in order))
    chunk_bytes = 64 * 4 * 2
    chunks = [((int(i), 0), str(raw), k * chunk_bytes, chunk_bytes) for k, i in enumerate(order)]
    array = VirtualArray.from_chunks(values.shape, (64, 4), "int16", chunks)
    series = [Series(name="shuffled", kind="timeseries", array=array, expected=values)]
    path = write_virtual_nwb(
        build_nwbfile(series, virtual=True), tmp_path / "indexed", manifest_threshold=10
    )
    rfs = read_local_rfs(path)
    assert set(rfs.indexes) == {"acquisition/shuffled/data"}
    assert (path / "index" / "acquisition" / "shuffled" / "data" / "zarr.json").is_file()
    root = json.loads(rfs.refs["zarr.json"].data)
    own = json.loads(rfs.refs["acquisition/shuffled/data/zarr.json"].data)
    assert root["consolidated_metadata"]["metadata"]["acquisition/shuffled/data"] == own
    assert own["chunk_grid"]["configuration"]["chunk_shape"] == [64, 4]
    assert own["codecs"] == [{"name": "bytes", "configuration": {"endian": "little"}}]
    assert own["attributes"]["unit"] == "a.u."
    _check_reads(path, series)


def test_hdmf_zarr_chunking_is_replaced(tmp_path: Path) -> None:
    """hdmf-zarr compresses and chunks datasets its own way; the virtual array's chunks win."""
    values = np.arange(3000, dtype="<u2").reshape(1000, 3)
    raw = tmp_path / "raw.bin"
    values.tofile(raw)
    array = VirtualArray.contiguous(str(raw), values.shape, "<u2", chunk_rows=333)
    series = [Series(name="plain", kind="timeseries", array=array, expected=values)]
    rfs = virtual_nwb_rfs(build_nwbfile(series, virtual=True))
    document = json.loads(rfs.refs["acquisition/plain/data/zarr.json"].data)
    assert document["chunk_grid"]["configuration"]["chunk_shape"] == [333, 3]
    assert all(codec["name"] in ("bytes", "transpose") for codec in document["codecs"])
    assert [entry.key for entry in rfs.gen] == ["acquisition/plain/data/c/{{i0}}/0"]
    assert all(
        not k.startswith("acquisition/plain/data/c") or not isinstance(v, InlineRef)
        for k, v in rfs.refs.items()
    )


@pytest.mark.filterwarnings("ignore::hdmf.build.warnings.DtypeConversionWarning")
def test_converted_data_type_is_refused(tmp_path: Path) -> None:
    """NWB wants float64 timestamps: a float32 placeholder would read other values."""
    raw = tmp_path / "times.bin"
    np.arange(100, dtype="<f4").tofile(raw)
    values = VirtualArray.contiguous(str(raw), [100], "<f4")
    series = [
        Series(
            name="times",
            kind="timeseries",
            array=values,
            expected=np.arange(100, dtype="<f4"),
            timestamps=values,
            expected_timestamps=np.arange(100, dtype="<f4"),
        )
    ]
    with pytest.raises(VirtualDatasetMismatch, match="timestamps"):
        write_virtual_nwb(build_nwbfile(series, virtual=True), tmp_path / "refused")


def test_placeholder_inside_data_io(tmp_path: Path) -> None:
    """A placeholder wrapped in a ZarrDataIO (chunking and compression hdmf-zarr would apply) is
    found, and its VirtualArray's storage replaces those settings."""
    from hdmf_zarr import ZarrDataIO
    from nwb_files import SESSION_START
    from pynwb import NWBFile, TimeSeries
    from zarr.codecs import BloscCodec

    values = np.arange(4000, dtype="<i4").reshape(1000, 4)
    raw = tmp_path / "raw.bin"
    values.tofile(raw)
    array = VirtualArray.contiguous(str(raw), values.shape, "<i4", chunk_rows=250)
    wrapped = ZarrDataIO(data=array.placeholder(), chunks=(100, 2), compressors=BloscCodec())
    nwbfile = NWBFile("wrapped", "wrapped", SESSION_START, file_create_date=SESSION_START)
    nwbfile.add_acquisition(TimeSeries(name="wrapped", data=wrapped, unit="a.u.", rate=1.0))
    path = write_virtual_nwb(nwbfile, tmp_path / "wrapped.json")
    rfs = read_local_rfs(path)
    document = json.loads(rfs.refs["acquisition/wrapped/data/zarr.json"].data)
    assert document["chunk_grid"]["configuration"]["chunk_shape"] == [250, 4]
    assert [codec["name"] for codec in document["codecs"]] == ["bytes"]
    with NWBZarrIO(RfsStore(rfs), mode="r") as io:
        np.testing.assert_array_equal(io.read().acquisition["wrapped"].data[:], values)


def test_file_without_placeholders(tmp_path: Path) -> None:
    """Without placeholders the file is hdmf-zarr's store as inline references (version 1)."""
    from nwb_files import SESSION_START
    from pynwb import NWBFile, TimeSeries

    nwbfile = NWBFile("plain", "plain", SESSION_START, file_create_date=SESSION_START)
    values = np.linspace(0.0, 1.0, 50)
    nwbfile.add_acquisition(TimeSeries(name="plain", data=values, unit="a.u.", rate=2.0))
    path = write_virtual_nwb(nwbfile, tmp_path / "plain.json")
    assert json.loads(path.read_text())["version"] == 1
    with NWBZarrIO(RfsStore(read_local_rfs(path)), mode="r") as io:
        np.testing.assert_array_equal(io.read().acquisition["plain"].data[:], values)
