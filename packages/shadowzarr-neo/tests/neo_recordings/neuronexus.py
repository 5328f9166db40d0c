"""NeuroNexus Allego ``xdat``: ``<name>.xdat.json`` metadata, ``<name>_data.xdat`` float32 samples
(time by channel) and ``<name>_timestamp.xdat`` int64 timestamps.

Channel types ``ai0`` (neural, µV), ``din``/``dout`` (digital) and ``ai1`` (auxiliary) are
interleaved in the file, so each NEO stream picks columns that are not next to each other.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import NeuroNexusRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_neuronexus(
    directory: Path,
    *,
    n_channels: int = 6,
    n_samples: int = 1_111,
    segments: int = 1,
    seed: int = 0,
) -> WrittenRecording:
    """``n_channels`` neural channels with an aux, a din and a dout channel among them."""
    if segments != 1:
        raise ValueError("xdat recordings hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    types = ["ai0"] * n_channels
    types.insert(2, "ai1")
    types.insert(4, "din0")
    types.append("dout0")
    total = len(types)
    data = random_samples(rng, n_samples, total, "float32")
    names = [f"{t}_{i:03d}" for i, t in enumerate(types)]
    first_timestamp = 123_456
    metadata = {
        "status": {
            "samp_freq": 30_000.0,
            "shape": [n_samples, total],
            "timestamp_range": [first_timestamp, first_timestamp + n_samples],
            "t_range": [first_timestamp / 30_000.0, (first_timestamp + n_samples) / 30_000.0],
            "start_time": "2026-01-02T13:04:49.4972245-04:00",
        },
        "sapiens_base": {
            "biointerface_map": {
                "chan_name": names,
                "ntv_chan_name": [f"pri_{i}" for i in range(total)],
                "chan_type": types,
            }
        },
    }
    (directory / "recording.xdat.json").write_text(json.dumps(metadata))
    data_file = directory / "recording_data.xdat"
    data.astype("<f4").tofile(data_file)
    np.arange(first_timestamp, first_timestamp + n_samples, dtype="<i8").tofile(
        directory / "recording_timestamp.xdat"
    )
    kinds = np.array(types)
    signals = {
        (0, 0, "ai-pri"): data[:, kinds == "ai0"],
        (0, 0, "aux"): data[:, kinds == "ai1"],
        (0, 0, "din"): data[:, kinds == "din0"],
        (0, 0, "dout"): data[:, kinds == "dout0"],
    }
    return WrittenRecording(
        NeuroNexusRawIO,
        {"filename": str(directory / "recording.xdat.json")},
        signals,
        (data_file,),
    )
