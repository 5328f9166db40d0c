"""An unsupported dataset never costs the whole file: inline it, or leave it out and say so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import numpy as np
import pytest
from shadowzarr_spec import (
    UnsupportedDatasetWarning,
    UnsupportedFeatureError,
    read_local_rfs,
    write_rfs,
)
from shadowzarr_testing.compare import assert_array_equal_exact

from shadowzarr_hdf5 import generate_rfs

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")


def _write(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    values = {
        "kept/plain": rng.normal(size=(300, 4)),
        "small_sz": rng.normal(size=(600,)).astype("f4"),
        "large_sz": rng.normal(size=(40_000,)).astype("f4"),
        "long_double": np.arange(6, dtype=np.longdouble) / 3,
    }
    with h5py.File(path, "w") as f:
        f.create_dataset("kept/plain", data=values["kept/plain"], chunks=(100, 4))
        sz = hdf5plugin.SZ3(absolute=1e-3)  # a lossy filter no Zarr codec reproduces
        f.create_dataset("small_sz", data=values["small_sz"], chunks=(200,), **sz)
        f.create_dataset("large_sz", data=values["large_sz"], chunks=(10_000,), **sz)
        f.create_dataset("long_double", data=values["long_double"])
    with h5py.File(path) as f:  # what HDF5 decodes (SZ is lossy)
        return {name: f[name][()] for name in values}


def test_default_policy_inlines_small_omits_rest_and_reports(
    tmp_path: Path, open_refs: Any
) -> None:
    path = tmp_path / "mixed.h5"
    expected = _write(path)
    with pytest.warns(UnsupportedDatasetWarning, match="2 dataset") as caught:
        rfs = generate_rfs(path, inline_unsupported_below=4096)
    message = str(caught[0].message)
    assert "large_sz" in message
    assert "long_double" in message
    assert set(rfs.omitted) == {"large_sz", "long_double"}
    assert "32024" in rfs.omitted["large_sz"]
    assert "float" in rfs.omitted["long_double"] or "128" in rfs.omitted["long_double"]
    assert rfs.unsupported["small_sz"].outcome == "inlined"
    root = open_refs(rfs)
    assert set(root.array_keys()) == {"small_sz"}
    assert_array_equal_exact(root["kept/plain"][...], expected["kept/plain"])
    assert_array_equal_exact(root["small_sz"][...], expected["small_sz"])
    # The record survives writing and loading, under a key Zarr readers never see.
    out = tmp_path / "refs.json"
    write_rfs(rfs, out)
    assert read_local_rfs(out).unsupported == rfs.unsupported


def test_strict_raises_the_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "mixed.h5"
    _write(path)
    with pytest.raises(UnsupportedFeatureError, match=r"'large_sz'|'long_double'"):
        generate_rfs(path, strict=True, inline_unsupported_below=4096)


def test_named_datasets_are_strict_by_default(tmp_path: Path) -> None:
    path = tmp_path / "mixed.h5"
    _write(path)
    with pytest.raises(UnsupportedFeatureError, match="'large_sz'"):
        generate_rfs(path, datasets=["large_sz"])


def test_no_inlining_when_disabled(tmp_path: Path) -> None:
    path = tmp_path / "mixed.h5"
    _write(path)
    with pytest.warns(UnsupportedDatasetWarning, match="3 dataset"):
        rfs = generate_rfs(path, inline_unsupported_below=None)
    assert set(rfs.omitted) == {"small_sz", "large_sz", "long_double"}
