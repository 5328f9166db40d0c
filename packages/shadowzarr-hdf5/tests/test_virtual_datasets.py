"""Virtual datasets: regular mappings reference their sources' chunks (this file or others),
the rest is inlined as HDF5 reads it or refused by name, and a missing source is never read
as fill values (kerchunk and VirtualiZarr return fill values for VDS)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import numpy as np
import pytest
from shadowzarr_spec import FileRef, UnsupportedDatasetWarning, UnsupportedFeatureError
from shadowzarr_testing.compare import assert_array_equal_exact

from shadowzarr_hdf5 import generate_rfs

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")


def _write(root: Path) -> Path:
    """A file of VDS: stacked other-file sources, same-file chunked sources, a partial one."""
    rng = np.random.default_rng(8)
    for index in range(3):
        with h5py.File(root / f"part{index}.h5", "w") as part:
            part.create_dataset("frames", data=rng.normal(size=(40, 6)), chunks=(10, 6),
                                compression="gzip")  # fmt: skip
            part.create_dataset("line", data=np.arange(50, dtype="i4") * (index + 1))
    path = root / "virtual.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("local", data=np.arange(90, dtype="u2").reshape(9, 10), chunks=(3, 5),
                         **hdf5plugin.Zstd())  # fmt: skip
        # Sources stacked end to end along the first axis (relative file names).
        concatenated = h5py.VirtualLayout(shape=(120, 6), dtype="f8")
        for index in range(3):
            concatenated[index * 40 : (index + 1) * 40] = h5py.VirtualSource(
                f"part{index}.h5", "frames", shape=(40, 6)
            )
        f.create_virtual_dataset("concatenated", concatenated, fillvalue=0.0)
        # Whole contiguous sources as the rows of a new axis, one row left unmapped.
        stacked = h5py.VirtualLayout(shape=(4, 50), dtype="i4")
        for index in range(3):
            stacked[index] = h5py.VirtualSource(str(root / f"part{index}.h5"), "line", shape=(50,))
        f.create_virtual_dataset("stacked", stacked, fillvalue=-1)
        # Blocks of a chunked dataset of this file, moved around on its chunk grid.
        moved = h5py.VirtualLayout(shape=(9, 20), dtype="u2")
        moved[:, 10:20] = h5py.VirtualSource(".", "local", shape=(9, 10))
        moved[0:6, 0:5] = h5py.VirtualSource(".", "local", shape=(9, 10))[3:9, 5:10]
        f.create_virtual_dataset("moved", moved, fillvalue=7)
        # Every other element: no chunk lines up (small: inlined as HDF5 reads it).
        strided = h5py.VirtualLayout(shape=(25,), dtype="i4")
        strided[:] = h5py.VirtualSource(str(root / "part1.h5"), "line", shape=(50,))[::2]
        f.create_virtual_dataset("strided", strided, fillvalue=0)
        # A source with unwritten chunks (its fill 0) under a VDS whose fill is 5.
        sparse_source = f.create_dataset("sparse_source", shape=(20,), dtype="i2", chunks=(5,))
        sparse_source[:5] = 1
        sparse = h5py.VirtualLayout(shape=(20,), dtype="i2")
        sparse[:] = h5py.VirtualSource(".", "sparse_source", shape=(20,))
        f.create_virtual_dataset("sparse", sparse, fillvalue=5)
    return path


def test_regular_mappings_point_at_the_source_chunks(tmp_path: Path, open_refs: Any) -> None:
    path = _write(tmp_path)
    rfs = generate_rfs(path, inline_threshold=0)
    assert set(rfs.unsupported) == {"strided", "sparse"}
    assert {u.outcome for u in rfs.unsupported.values()} == {"inlined"}
    assert "fill value" in rfs.unsupported["sparse"].reason
    urls = {ref.url for key, ref in rfs.refs.items() if isinstance(ref, FileRef)}
    assert {str(tmp_path / f"part{i}.h5") for i in range(3)} <= urls
    root = open_refs(rfs)
    with h5py.File(path) as f:
        for name in ["concatenated", "stacked", "moved", "strided", "sparse"]:
            assert_array_equal_exact(root[name][...], f[name][...], name)
    stored = open_refs(rfs, grouped_view=0)["moved"]  # the chunks as the references store them
    assert stored.metadata.to_dict()["codecs"][-1]["name"] == "numcodecs.zstd"


def test_missing_source_is_never_read_as_fill(tmp_path: Path) -> None:
    path = _write(tmp_path)
    os.remove(tmp_path / "part1.h5")
    with pytest.warns(UnsupportedDatasetWarning):
        rfs = generate_rfs(path)
    for name in ["concatenated", "stacked", "strided"]:
        assert "part1.h5" in rfs.omitted[name]
    assert "moved" not in rfs.unsupported
    with pytest.raises(UnsupportedFeatureError, match=r"'concatenated'.*part1\.h5"):
        generate_rfs(path, strict=True)
