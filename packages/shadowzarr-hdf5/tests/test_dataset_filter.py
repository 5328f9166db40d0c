"""generate_rfs(datasets=…): references for chosen datasets only, without reading the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from shadowzarr_spec import SourceError
from shadowzarr_store import open_rfs

from shadowzarr_hdf5 import generate_rfs


def _write(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    values = {
        "acquisition/series/data": rng.integers(-500, 500, (400, 6), dtype=np.int16),
        "acquisition/series/timestamps": np.arange(400, dtype=np.float64) / 30.0,
        "processing/other": rng.random((50, 50)),
    }
    with h5py.File(path, "w") as file:
        file.attrs["root_note"] = "kept"
        for name, data in values.items():
            file.create_dataset(name, data=data, chunks=(25, *data.shape[1:]), compression="gzip")
        for index in range(30):
            file.create_dataset(f"many/d{index}", data=np.full(100, index), chunks=(10,))
    return values


def test_only_the_named_dataset_and_its_groups(tmp_path: Path) -> None:
    path = tmp_path / "f.h5"
    values = _write(path)
    rfs = generate_rfs(path, datasets=["/acquisition/series/data"], progress=False)
    nodes = {key.rsplit("/zarr.json", 1)[0] for key in rfs.refs if key.endswith("zarr.json")}
    assert nodes == {"zarr.json", "acquisition", "acquisition/series", "acquisition/series/data"}
    root = open_rfs(rfs)
    expected = values["acquisition/series/data"]
    np.testing.assert_array_equal(root["acquisition/series/data"][:], expected)
    assert root.attrs["root_note"] == "kept"


def test_several_datasets_and_a_group_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.h5"
    values = _write(path)
    rfs = generate_rfs(
        path, datasets=["processing/other", "acquisition/series/timestamps"], progress=False
    )
    root = open_rfs(rfs)
    np.testing.assert_array_equal(root["processing/other"][:], values["processing/other"])
    np.testing.assert_array_equal(
        root["acquisition/series/timestamps"][:], values["acquisition/series/timestamps"]
    )
    assert "many" not in root
    with pytest.raises(SourceError, match="not a dataset"):
        generate_rfs(path, datasets=["acquisition"], progress=False)
    with pytest.raises(ValueError, match="not a dataset path"):
        generate_rfs(path, datasets=["/"], progress=False)


@pytest.mark.network
def test_one_dataset_reads_less_of_a_remote_file(nginx: Any, nginx_root: Path) -> None:
    values = _write(nginx_root / "f.h5")
    url = nginx.url("f.h5")
    generate_rfs(url, progress=False)
    whole = nginx.bytes_sent()
    nginx.reset()
    rfs = generate_rfs(url, datasets=["processing/other"], progress=False)
    assert nginx.bytes_sent() <= whole
    np.testing.assert_array_equal(open_rfs(rfs)["processing/other"][:], values["processing/other"])
