"""BrainVision Core Data Format 1.0: a ``.vhdr`` header, a ``.vmrk`` marker file and the ``.eeg``.

Samples are multiplexed (sample by sample) or vectorized (channel by channel), as
``DataOrientation`` says, in ``INT_16``, ``INT_32`` or ``IEEE_FLOAT_32``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import BrainVisionRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

BINARY_FORMATS = {"INT_16": "<i2", "INT_32": "<i4", "IEEE_FLOAT_32": "<f4"}


def write_brainvision(
    directory: Path,
    *,
    n_channels: int = 5,
    n_samples: int = 1_001,
    segments: int = 1,
    seed: int = 0,
    orientation: str = "MULTIPLEXED",
    binary_format: str = "INT_16",
    name: str = "recording",
) -> WrittenRecording:
    """One segment (the format has one); resolutions differ per channel, one has no unit."""
    if segments != 1:
        raise ValueError("BrainVision files hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    dtype = BINARY_FORMATS[binary_format]
    data = random_samples(rng, n_samples, n_channels, dtype)
    eeg = directory / f"{name}.eeg"
    stored = data if orientation == "MULTIPLEXED" else np.ascontiguousarray(data.T)
    stored.astype(dtype).tofile(eeg)
    channels = []
    for c in range(n_channels):
        resolution = f"{0.1 * (c + 1):g}"
        unit = "" if c == n_channels - 1 else ",µV"
        channels.append(f"Ch{c + 1}=Fp{c + 1},,{resolution}{unit}")
    vhdr = "\r\n".join(
        [
            "Brain Vision Data Exchange Header File Version 1.0",
            "; Data created by the shadowzarr tests",
            "",
            "[Common Infos]",
            "Codepage=UTF-8",
            f"DataFile={name}.eeg",
            f"MarkerFile={name}.vmrk",
            "DataFormat=BINARY",
            f"DataOrientation={orientation}",
            f"NumberOfChannels={n_channels}",
            "SamplingInterval=500",
            "",
            "[Binary Infos]",
            f"BinaryFormat={binary_format}",
            "",
            "[Channel Infos]",
            *channels,
            "",
        ]
    )
    (directory / f"{name}.vhdr").write_text(vhdr, encoding="utf-8")
    vmrk = "\r\n".join(
        [
            "Brain Vision Data Exchange Marker File, Version 1.0",
            "",
            "[Common Infos]",
            "Codepage=UTF-8",
            f"DataFile={name}.eeg",
            "",
            "[Marker Infos]",
            "Mk1=New Segment,,1,1,0,20260101120000000000",
            "Mk2=Stimulus,S  1,100,1,0",
            "",
        ]
    )
    (directory / f"{name}.vmrk").write_text(vmrk, encoding="utf-8")
    return WrittenRecording(
        BrainVisionRawIO,
        {"filename": str(directory / f"{name}.vhdr")},
        {(0, 0, "0"): data},
        (eeg,),
    )
