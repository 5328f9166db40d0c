"""MATLAB v7.3 userblock: the offset check that corrects HDF5 1.10-style chunk offsets."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from shadowzarr_hdf5.matlab import userblock_offset_shift


def _write(path: Path) -> None:
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("x", data=np.arange(1000.0).reshape(10, 100), chunks=(5, 50))
        f.create_dataset("y", data=np.arange(500, dtype="<u2"))


def _reader(path: Path, moved: int):  # type: ignore[no-untyped-def]
    data = path.read_bytes()

    def read(offset: int, size: int) -> bytes:
        start = offset - moved
        return data[start : start + size] if start >= 0 else b""

    return read


def test_offsets_from_the_start_of_the_file_need_no_shift(tmp_path: Path) -> None:
    path = tmp_path / "v73.mat"
    _write(path)
    with h5py.File(path) as f:
        assert userblock_offset_shift(f, _reader(path, 0)) == 0


def test_offsets_from_the_end_of_the_userblock_are_shifted(tmp_path: Path) -> None:
    """The same bytes 512 further on: what a reader sees when HDF5 1.10 reports offsets
    relative to the end of the userblock."""
    path = tmp_path / "v73.mat"
    _write(path)
    with h5py.File(path) as f:
        assert userblock_offset_shift(f, _reader(path, 512)) == 512


def test_files_without_userblock_are_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(10))
    with h5py.File(path) as f:
        assert userblock_offset_shift(f, _reader(path, 512)) == 0
