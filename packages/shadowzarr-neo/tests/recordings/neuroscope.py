"""Neuroscope: a ``.xml`` parameter file and a ``.dat`` of interleaved int16 samples."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import NeuroScopeRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_neuroscope(
    directory: Path,
    *,
    n_channels: int = 11,
    n_samples: int = 1_234,
    segments: int = 1,
    seed: int = 0,
    partial_tail: int = 3,
) -> WrittenRecording:
    """``partial_tail`` values of one more sample end the file, as when a recording was cut."""
    if segments != 1:
        raise ValueError("Neuroscope files hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    data = random_samples(rng, n_samples, n_channels, "int16")
    dat = directory / "recording.dat"
    tail = random_samples(rng, 1, min(partial_tail, n_channels - 1), "int16")
    with dat.open("wb") as f:
        f.write(data.astype("<i2").tobytes())
        f.write(tail.astype("<i2").tobytes())
    half = n_channels // 2
    groups = [range(half), range(half, n_channels - 1)]  # the last channel is in no group
    group_xml = "".join(
        "<group>" + "".join(f'<channel skip="0">{c}</channel>' for c in group) + "</group>"
        for group in groups
    )
    xml = (
        '<?xml version="1.0"?>\n<parameters creator="neuroscope-2.0.0" version="1.0">'
        "<acquisitionSystem><nBits>16</nBits>"
        f"<nChannels>{n_channels}</nChannels><samplingRate>20000</samplingRate>"
        "<voltageRange>20</voltageRange><amplification>1000</amplification><offset>0</offset>"
        "</acquisitionSystem><fieldPotentials><lfpSamplingRate>1250</lfpSamplingRate>"
        "</fieldPotentials>"
        f"<anatomicalDescription><channelGroups>{group_xml}</channelGroups>"
        "</anatomicalDescription></parameters>\n"
    )
    (directory / "recording.xml").write_text(xml)
    return WrittenRecording(
        NeuroScopeRawIO,
        {"filename": str(directory / "recording.xml")},
        {(0, 0, "0"): data},
        (dat,),
    )
