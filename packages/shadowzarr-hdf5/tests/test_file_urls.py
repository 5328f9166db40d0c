"""A ``file://`` URL is the file it names, for generation as for reading."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
from shadowzarr_spec import rfs_to_json
from shadowzarr_store import open_rfs

from shadowzarr_hdf5 import generate_rfs


def test_generate_from_a_file_url(tmp_path: Path) -> None:
    path = tmp_path / "with space.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100, dtype="i4"), chunks=(10,))
    from_url = generate_rfs(path.as_uri())
    assert rfs_to_json(from_url) == rfs_to_json(generate_rfs(str(path)))
    assert np.array_equal(open_rfs(from_url)["x"][:], np.arange(100))
