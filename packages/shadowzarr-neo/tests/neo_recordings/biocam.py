"""3Brain BioCam ``.brw`` files (HDF5), in the layouts NEO reads.

BRW 3.x: ``3BRecInfo/3BRecVars`` holds ``BitDepth``, ``MaxVolt``, ``MinVolt``, ``NRecFrames``,
``SamplingRate`` and ``SignalInversion``; ``3BRecInfo/3BMeaStreams/Raw/Chs`` the (row, column)
of each channel; ``3BData/Raw`` the uint16 samples, flat frame after frame (format 101) or
frames by channels (format 100, attribute ``Version``). BRW 4.x: an ``ExperimentSettings`` JSON
string, a ``TOC`` whose last entry is the frame count and ``Well_A1/Raw`` flat, with
``Well_A1/StoredChIdxs``. Written contiguous, or with ``chunks`` (values for a flat ``Raw``,
frames for a two-dimensional one) and optionally ``compression`` and ``shuffle``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import h5py
import numpy as np
from neo.rawio import BiocamRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_biocam(
    directory: Path,
    *,
    n_channels: int = 16,
    n_samples: int = 1_234,
    segments: int = 1,
    seed: int = 0,
    version: str = "101",
    inverted: bool = False,
    chunks: int | None = None,
    compression: str | None = None,
    shuffle: bool = False,
) -> WrittenRecording:
    """``version`` is ``"100"``, ``"101"`` (BRW 3.x) or ``"4"``; ``n_channels`` is a square."""
    if segments != 1:
        raise ValueError("BioCam recordings hold one segment")
    side = int(np.sqrt(n_channels))
    if side * side != n_channels:
        raise ValueError("BioCam arrays are square")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    data = random_samples(rng, n_samples, n_channels, "uint16") % 4096
    path = directory / "recording.brw"
    with h5py.File(path, "w") as f:
        if version == "4":
            settings = {
                "ValueConverter": {
                    "MaxAnalogValue": 4125.0,
                    "MinAnalogValue": -4125.0,
                    "MaxDigitalValue": 4095,
                    "MinDigitalValue": 0,
                    "ScaleFactor": 1.0,
                },
                "TimeConverter": {"FrameRate": 17_855.5},
            }
            f.create_dataset("ExperimentSettings", data=np.array([json.dumps(settings).encode()]))
            f.create_dataset("TOC", data=np.array([[0, n_samples]], dtype="<i8"))
            well = f.create_group("Well_A1")
            well.create_dataset("StoredChIdxs", data=np.arange(n_channels, dtype="<i4"))
            well.create_dataset(
                "Raw",
                data=data.reshape(-1),
                chunks=(chunks,) if chunks else None,
                compression=compression,
                shuffle=shuffle,
            )
        else:
            rec = f.create_group("3BRecInfo/3BRecVars")
            rec.create_dataset("BitDepth", data=np.array([12], dtype="u1"))
            rec.create_dataset("MaxVolt", data=np.array([4125.0]))
            rec.create_dataset("MinVolt", data=np.array([-4125.0]))
            rec.create_dataset("NRecFrames", data=np.array([n_samples], dtype="<i8"))
            rec.create_dataset("SamplingRate", data=np.array([17_855.5]))
            rec.create_dataset("SignalInversion", data=np.array([-1 if inverted else 1], "<i4"))
            chs = np.zeros(n_channels, dtype=[("Row", "<i2"), ("Col", "<i2")])
            chs["Row"] = 1 + np.arange(n_channels) // side
            chs["Col"] = 1 + np.arange(n_channels) % side
            f.create_dataset("3BRecInfo/3BMeaStreams/Raw/Chs", data=chs)
            raw = data if version == "100" else data.reshape(-1)
            stored_chunks = None
            if chunks:
                stored_chunks = (chunks, n_channels) if version == "100" else (chunks,)
            f.create_dataset(
                "3BData/Raw",
                data=raw,
                chunks=stored_chunks,
                compression=compression,
                shuffle=shuffle,
            )
            f["3BData"].attrs["Version"] = int(version)
    values = 4096 - data if inverted else data
    return WrittenRecording(BiocamRawIO, {"filename": str(path)}, {(0, 0, "0"): values}, (path,))
