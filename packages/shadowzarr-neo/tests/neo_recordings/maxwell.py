"""MaxWell MaxOne/MaxTwo HDF5 files (format version 20190530 and later), written uncompressed.

``wells/<well>/<rec>/settings`` holds ``sampling``, ``lsb`` and ``mapping`` (channel, electrode,
x, y), and ``wells/<well>/<rec>/groups/routed/raw`` the uint16 samples, channels by time. MaxWell
compresses ``raw`` with its own HDF5 filter; written without it, h5py reads the file as is and
NEO needs no plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import h5py
import numpy as np
from neo.rawio import MaxwellRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

MAPPING_DTYPE = np.dtype([("channel", "<i4"), ("electrode", "<i4"), ("x", "<f8"), ("y", "<f8")])


def write_maxwell(
    directory: Path,
    *,
    n_channels: int = 9,
    n_samples: int = 1_003,
    segments: int = 1,
    seed: int = 0,
    wells: int = 2,
    chunks: tuple[int, int] | None = None,
    compression: str | None = None,
) -> WrittenRecording:
    """``wells`` wells of one recording ``rec0000``; ``chunks`` makes ``raw`` chunked."""
    if segments != 1:
        raise ValueError("MaxWell files are read as one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "recording.raw.h5"
    signals = {}
    with h5py.File(path, "w") as f:
        f.create_dataset("version", data=np.array([b"20190530"], dtype="S8"))
        for w in range(wells):
            well = f"well{w:03d}"
            n = n_channels + w
            data = random_samples(rng, n_samples + 17 * w, n, "uint16")
            rec = f.create_group(f"wells/{well}/rec0000")
            settings = rec.create_group("settings")
            settings.create_dataset("sampling", data=np.array([20_000.0]))
            settings.create_dataset("lsb", data=np.array([6.294e-6]))
            mapping = np.zeros(n, dtype=MAPPING_DTYPE)
            mapping["channel"] = np.arange(n)[::-1] * 3
            mapping["electrode"] = 1000 + np.arange(n) * 7
            mapping["x"] = np.arange(n) * 17.5
            settings.create_dataset("mapping", data=mapping)
            rec.create_dataset(
                "groups/routed/raw",
                data=np.ascontiguousarray(data.T),
                chunks=chunks,
                compression=compression,
            )
            signals[0, 0, well] = data
    return WrittenRecording(MaxwellRawIO, {"filename": str(path)}, signals, (path,))
