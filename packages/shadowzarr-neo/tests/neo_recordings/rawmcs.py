"""Multi Channel Systems raw files, as MC_DataTool's binary export writes them.

A text header (``MC_DataTool binary conversion`` … ``EOH``) gives the sample rate, the ADC zero,
the µV per step (``El = 0.1µV/AD``) and the channel names; interleaved uint16 samples follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import RawMCSRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_rawmcs(
    directory: Path,
    *,
    n_channels: int = 7,
    n_samples: int = 1_500,
    segments: int = 1,
    seed: int = 0,
) -> WrittenRecording:
    """One segment of ``n_channels`` uint16 channels named like MCS electrodes."""
    if segments != 1:
        raise ValueError("MCS raw files hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    data = random_samples(rng, n_samples, n_channels, "uint16")
    names = ";".join(f"El_{12 + c:02d}" for c in range(n_channels))
    header = (
        "MC_DataTool binary conversion\r\n"
        "Version 2.6.15\r\n"
        'MC_REC file = "C:\\data\\recording.mcd"\r\n'
        "Sample rate = 10000\r\n"
        "ADC zero = 32768\r\n"
        "El = 0.1µV/AD\r\n"
        f"Streams = {names}\r\n"
        "EOH\r\n"
    ).encode("cp1252")
    path = directory / "recording.raw"
    with path.open("wb") as f:
        f.write(header)
        f.write(data.astype("<u2").tobytes())
    return WrittenRecording(RawMCSRawIO, {"filename": str(path)}, {(0, 0, "0"): data}, (path,))
