"""A small archive written with h5py and tifffile: HDF5 files of several shapes, layouts and
filters, a MATLAB v7.3 file (HDF5 after a 512-byte user block), a TIFF, a truncated HDF5 file,
a text file and a text file named ``.nwb``; and what each readable file holds."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import tifffile

type Expected = dict[str, dict[str, np.ndarray]]
"""Asset path → dataset path → values, for the assets a catalog publishes."""

STATUSES = {
    "broken.h5": "failed",
    "notes.txt": "skipped",
    "fake.nwb": "failed",
}
"""The assets that are not published, and their status (every other asset is ok)."""


def write_hdf5(path: Path, seed: int, *, user_block: int = 0) -> dict[str, np.ndarray]:
    """One HDF5 file whose datasets' shapes, types and layouts follow from ``seed``."""
    rng = np.random.default_rng(seed)
    values = {
        "signal": rng.standard_normal((200 + 10 * seed, 3)).astype("<f4"),
        "counts": rng.integers(0, 30_000, size=(64, 17 + seed), dtype="<i2"),
        "group/volume": rng.integers(0, 255, size=(6, 20, 20), dtype="u1"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    options = {"userblock_size": user_block} if user_block else {}
    with h5py.File(path, "w", **options) as f:
        f.create_dataset("signal", data=values["signal"], chunks=(50, 3), compression="gzip")
        f.create_dataset("counts", data=values["counts"])  # contiguous
        f.create_dataset("group/volume", data=values["group/volume"], chunks=(2, 10, 20))
        f["group"].attrs["description"] = f"file {seed}"
    return values


def make_archive(root: Path, count: int = 12) -> Expected:
    """``count`` HDF5 files in nested folders plus the odd ones; returns what is readable."""
    expected: Expected = {}
    for i in range(count):
        relative = f"sub-{i % 3}/ses-{i}.nwb" if i % 2 else f"sub-{i % 3}/raw-{i}.h5"
        expected[relative] = write_hdf5(root / relative, i)
    expected["matlab/data.mat"] = write_hdf5(root / "matlab/data.mat", 40, user_block=512)
    image = np.arange(96 * 80, dtype="<u2").reshape(96, 80)
    tifffile.imwrite(root / "image.tif", image, tile=(32, 32))
    expected["image.tif"] = {"0": image}
    whole = (root / "sub-0/raw-0.h5").read_bytes()
    (root / "broken.h5").write_bytes(whole[: len(whole) // 3])
    (root / "notes.txt").write_text("not data\n")
    (root / "fake.nwb").write_text("<html>a login page saved as .nwb</html>\n")
    (root / ".hidden.h5").write_bytes(whole)  # hidden files are not assets
    return expected
