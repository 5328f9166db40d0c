"""write_rfs gives its files and folders the modes the umask gives any new file (references are
published next to the data), still replacing them atomically."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

import numpy as np
import pytest

from shadowzarr_spec import RfsBuilder, read_local_rfs, write_rfs

if TYPE_CHECKING:
    from pathlib import Path


def _references() -> object:
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("x", shape=(3000,), data_type=np.dtype("<i4"), chunk_shape=(1,))
    for i in range(3000):
        builder.add_chunk("x", (i,), "data.bin", 4 * i, 4)
    return builder.build()


@pytest.mark.parametrize(
    ("umask", "file_mode", "folder_mode"), [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)]
)
def test_modes_follow_the_umask(
    tmp_path: Path, umask: int, file_mode: int, folder_mode: int
) -> None:
    rfs = _references()
    previous = os.umask(umask)
    try:
        single = write_rfs(rfs, tmp_path / "refs.json")
        directory = write_rfs(rfs, tmp_path / "refs.shadowzarr", manifest_threshold=100)
        write_rfs(rfs, directory, manifest_threshold=100)  # replacing keeps the modes
    finally:
        os.umask(previous)
    written = [single, directory, *directory.rglob("*")]
    assert any("/index/" in p.as_posix() for p in written)
    assert {stat.S_IMODE(p.stat().st_mode) for p in written if p.is_file()} == {file_mode}
    assert {stat.S_IMODE(p.stat().st_mode) for p in written if p.is_dir()} == {folder_mode}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left
    assert read_local_rfs(directory).indexes.keys() == {"x"}
