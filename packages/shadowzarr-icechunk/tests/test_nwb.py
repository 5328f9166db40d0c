"""An NWB file in a repository reads through NWBZarrIO(session.store).

The NWB Zarr file is written by hdmf-zarr's NWBZarrIO to a local folder; its references point
at the chunk files of that folder (its zarr.json documents inline), so every chunk of the
repository is virtual, and its consolidated metadata is left out.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np
from hdmf_zarr.nwb import NWBZarrIO
from pynwb import NWBFile, TimeSeries
from shadowzarr_spec import FileRef, InlineRef, ReferenceFileSystem

from shadowzarr_icechunk import write_icechunk_repository


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
