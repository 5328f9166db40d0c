"""A DANDI-like archive of 300-odd tiny assets in moto's S3 server behind the testing package's
DANDI-like proxy: HDF5 files of many shapes, NWB files written by pynwb, TIFF images, EDF
recordings (NEO), files with datasets no reference describes, broken and truncated files, and
non-data files. Each asset says what a catalog should make of it and, when published, which
native reader reads its values."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
import tifffile
from catalog_archive import write_hdf5
from neo_recordings.edf import write_edf

__all__ = ["ArchiveAsset", "build_assets", "write_nwb"]


@dataclass
class ArchiveAsset:
    """One asset: its path in the dandiset, its bytes, the status a catalog gives it, and for a
    published one the reader (``h5py`` or ``tifffile``) whose values its references must equal."""

    asset_id: str
    path: str
    data: bytes
    status: str
    reader: str | None = None
    omitted: list[str] = field(default_factory=list)


def write_nwb(path: Path, seed: int) -> None:
    """A small NWB file (pynwb) with a 2-D TimeSeries whose shape follows from ``seed``."""
    import datetime

    from pynwb import NWBHDF5IO, NWBFile, TimeSeries

    rng = np.random.default_rng(seed)
    nwb = NWBFile(
        session_description=f"session {seed}",
        identifier=f"session-{seed}",
        session_start_time=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    )
    data = rng.integers(-500, 500, size=(100 + 25 * seed, 2 + seed), dtype="<i2")
    nwb.add_acquisition(TimeSeries(name="ElectricalSeries", data=data, unit="uV", rate=1000.0))
    with NWBHDF5IO(path, "w") as io_:
        io_.write(nwb)


def _hdf5(path: Path, seed: int) -> bytes:
    write_hdf5(path, seed)
    return path.read_bytes()


def _tiff(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 4000, size=(2 + seed % 3, 24 + seed, 20), dtype="<u2")
    out = io.BytesIO()
    tile = (16, 16) if seed % 2 else None
    tifffile.imwrite(out, image, tile=tile, photometric="minisblack")
    return out.getvalue()


def _unsupported(path: Path, seed: int) -> bytes:
    """An HDF5 file with two datasets no Zarr data type describes (long double; variable
    length compounds) next to an ordinary one: published as ``partial``."""
    record = np.dtype([("a", "<i4"), ("b", "<f8")])
    with h5py.File(path, "w") as f:
        f.create_dataset("signal", data=np.arange(50 + seed, dtype="<f8"))
        f.create_dataset("extended", data=np.arange(8, dtype=np.longdouble))
        ragged = f.create_dataset("events", (2,), dtype=h5py.vlen_dtype(record))
        ragged[0] = np.zeros(2, dtype=record)
        ragged[1] = np.ones(1, dtype=record)
    return path.read_bytes()


def build_assets(scratch: Path) -> list[ArchiveAsset]:
    """The archive's assets (their files written under ``scratch``), in a stable order."""
    scratch.mkdir(parents=True, exist_ok=True)
    assets: list[ArchiveAsset] = []

    def add(path: str, data: bytes, status: str, reader: str | None = None, **more: list[str]):
        assets.append(ArchiveAsset(f"asset-{len(assets):04d}", path, data, status, reader, **more))

    for i in range(190):
        data = _hdf5(scratch / f"h5-{i}.h5", i % 60)
        add(f"sub-{i % 19:02d}/sub-{i % 19:02d}_ses-{i:03d}_raw.h5", data, "ok", "h5py")
    for seed in range(4):
        write_nwb(scratch / f"nwb-{seed}.nwb", seed)
    for i in range(40):
        data = (scratch / f"nwb-{i % 4}.nwb").read_bytes()
        add(f"sub-{i % 19:02d}/sub-{i % 19:02d}_ses-{i:03d}_ecephys.nwb", data, "ok", "h5py")
    for i in range(20):
        add(f"microscopy/sample-{i:02d}_image.tif", _tiff(i), "ok", "tifffile")
    for i in range(4):
        folder = scratch / f"edf-{i}"
        written = write_edf(folder, n_channels=2 + i, n_samples=400, seed=i)
        add(f"sub-99/recording-{i}.edf", written.files[0].read_bytes(), "skipped")
    for i in range(6):
        data = _unsupported(scratch / f"unsupported-{i}.h5", i)
        add(f"derived/odd-types-{i}.h5", data, "partial", "h5py", omitted=["events", "extended"])
    whole = (scratch / "h5-7.h5").read_bytes()
    for i in range(4):
        add(f"broken/truncated-{i}.h5", whole[: len(whole) // (2 + i)], "failed")
    add("broken/empty.nwb", b"", "failed")
    add("broken/empty-2.nwb", b"", "failed")
    add("broken/login-page.nwb", b"<html><body>please log in</body></html>\n", "failed")
    add("broken/error.nwb", b"<?xml version='1.0'?><Error>AccessDenied</Error>\n", "failed")
    for i in range(2):
        damaged = bytearray(whole)
        damaged[8:200] = bytes(range(192))  # the superblock after the signature, overwritten
        add(f"broken/damaged-{i}.h5", bytes(damaged), "failed")
    for i in range(30):
        kind = ("json", "txt", "md", "tsv", "yaml")[i % 5]
        text = f"a non-data file {i}: participants, sessions, notes\n".encode()
        add(f"docs/file-{i:02d}.{kind}", text, "skipped")
    return assets
