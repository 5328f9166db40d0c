"""NWB files in a repository read through NWBZarrIO(session.store).

A virtual NWB file from shadowzarr_nwb.write_virtual_nwb, its recording served by nginx, and an
NWB Zarr file hdmf-zarr wrote to a local folder, referenced chunk file by chunk file (its
consolidated metadata is left out of the repository).
"""

from __future__ import annotations

import datetime
from pathlib import Path

import icechunk
import numpy as np
import pytest
import requests
from hdmf_zarr.nwb import NWBZarrIO
from icechunk_samples import make_repository
from pynwb import NWBFile, TimeSeries
from pynwb.ecephys import ElectricalSeries
from shadowzarr_nwb import write_virtual_nwb
from shadowzarr_spec import (
    FileRef,
    InlineRef,
    ReferenceFileSystem,
    SourceInfo,
    VirtualArray,
    read_local_rfs,
)
from shadowzarr_testing.nginx import NginxServer

from shadowzarr_icechunk import rfs_to_icechunk, write_icechunk_repository


def _nwb_zarr_references(folder: Path) -> ReferenceFileSystem:
    """References to every file of a Zarr v3 folder: metadata inline, chunks by path."""
    rfs = ReferenceFileSystem()
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        key = path.relative_to(folder).as_posix()
        if path.name == "zarr.json":
            rfs.refs[key] = InlineRef(path.read_bytes())
        else:
            rfs.refs[key] = FileRef(str(path), 0, path.stat().st_size)
    return rfs


def test_nwb_zarr_file_reads_through_nwbzarrio(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    data = rng.integers(-2000, 2000, size=(3000, 4), dtype="int16")
    nwbfile = NWBFile(
        session_description="virtual chunks",
        identifier="shadowzarr-icechunk",
        session_start_time=datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC),
    )
    nwbfile.add_acquisition(
        TimeSeries(name="voltage", data=data, unit="V", rate=30000.0, conversion=0.195e-6)
    )
    folder = tmp_path / "session.nwb.zarr"
    with NWBZarrIO(str(folder), mode="w") as io:
        io.write(nwbfile)
    rfs = _nwb_zarr_references(folder)
    assert "consolidated_metadata" in rfs.refs["zarr.json"].data.decode()  # type: ignore[union-attr]

    # one virtual chunk container per folder of chunk files, made by write_icechunk_repository
    repo = write_icechunk_repository(rfs, tmp_path / "session.icechunk")
    assert len(repo.config.virtual_chunk_containers or {}) > 1
    assert repo.readonly_session("main").all_virtual_chunk_locations()

    with NWBZarrIO(repo.readonly_session("main").store, mode="r") as io:
        read = io.read()
        series = read.acquisition["voltage"]
        np.testing.assert_array_equal(series.data[:], data)
        assert series.rate == 30000.0
        assert series.conversion == 0.195e-6
        assert read.identifier == "shadowzarr-icechunk"
        assert read.session_description == "virtual chunks"


@pytest.mark.network
def test_virtual_nwb_file_reads_through_nwbzarrio(tmp_path: Path, nginx: NginxServer) -> None:
    """A virtual NWB file (shadowzarr_nwb.write_virtual_nwb) whose recording nginx serves,
    with the file's ETag, into a repository; read with NWBZarrIO(session.store)."""
    rng = np.random.default_rng(5)
    samples = rng.integers(-3000, 3000, size=(6000, 8), dtype="<i2")
    nginx.write_file("recording.bin", b"\0" * 64 + samples.tobytes())
    url = nginx.url("recording.bin")
    # 1,024 rows per chunk: the last one is short, so it is copied into the repository
    recording = VirtualArray.contiguous(
        url, samples.shape, samples.dtype, offset=64, chunk_rows=1024
    )

    nwbfile = NWBFile(
        session_description="virtual recording",
        identifier="virtual-nwb-icechunk",
        session_start_time=datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC),
    )
    device = nwbfile.create_device(name="probe")
    group = nwbfile.create_electrode_group(
        name="shank", description="probe", location="brain", device=device
    )
    for _ in range(8):
        nwbfile.add_electrode(group=group, location="CA1")
    region = nwbfile.create_electrode_table_region(list(range(8)), "all electrodes")
    nwbfile.add_acquisition(
        ElectricalSeries(
            name="ElectricalSeries",
            data=recording.placeholder(),
            electrodes=region,
            rate=30000.0,
            conversion=0.195e-6,
        )
    )
    refs_path = write_virtual_nwb(nwbfile, tmp_path / "session.nwb.shadowzarr")
    rfs = read_local_rfs(refs_path)
    response = requests.head(url, timeout=10)
    rfs.sources[url] = SourceInfo(
        size=int(response.headers["Content-Length"]), etag=response.headers["ETag"]
    )

    repo = make_repository(tmp_path / "repo", {nginx.url(""): icechunk.http_store()})
    session = repo.writable_session("main")
    rfs_to_icechunk(rfs, session)
    session.commit("virtual nwb")
    committed = repo.readonly_session("main")
    assert set(committed.all_virtual_chunk_locations()) == {url}
    virtual = icechunk.ChunkType.virtual
    data_path = "/acquisition/ElectricalSeries/data"
    assert committed.chunk_type(data_path, [0, 0]) == virtual
    assert committed.chunk_type(data_path, [5, 0]) != virtual

    with NWBZarrIO(repo.readonly_session("main").store, mode="r") as io:
        read = io.read()
        series = read.acquisition["ElectricalSeries"]
        np.testing.assert_array_equal(series.data[:], samples)
        assert series.rate == 30000.0
        assert series.conversion == 0.195e-6
        assert list(series.electrodes.data[:]) == list(range(8))
        assert list(read.electrodes["location"].data[:]) == ["CA1"] * 8
        assert read.identifier == "virtual-nwb-icechunk"
