"""Neuroscope: a ``.xml`` parameter file and a ``.dat`` of interleaved int16 samples.

As a real session folder: ``<session>/<session>.dat`` and ``<session>.xml``, every channel in
an anatomical group (the last, auxiliary one, in a group of its own: NEO names channels
``ch<c>grp<g>`` and NeuroConv reads the group from that name), and the probe's channels, not the
auxiliary one, listed under ``spikeDetection`` (which NeuroConv keeps as the neural channels).
"""

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
    dat = directory / f"{directory.name}.dat"
    tail = random_samples(rng, 1, min(partial_tail, n_channels - 1), "int16")
    with dat.open("wb") as f:
        f.write(data.astype("<i2").tobytes())
        f.write(tail.astype("<i2").tobytes())
    half = n_channels // 2
    shanks = [range(half), range(half, n_channels - 1)]
    anatomical = [*shanks, range(n_channels - 1, n_channels)]  # the auxiliary channel last
    group_xml = "".join(
        "<group>" + "".join(f'<channel skip="0">{c}</channel>' for c in group) + "</group>"
        for group in anatomical
    )
    spike_xml = "".join(
        "<group><channels>"
        + "".join(f"<channel>{c}</channel>" for c in shank)
        + "</channels><nSamples>32</nSamples><peakSampleIndex>16</peakSampleIndex></group>"
        for shank in shanks
    )
    xml = (
        '<?xml version="1.0"?>\n<parameters creator="neuroscope-2.0.0" version="1.0">'
        "<generalInfo><date>2026-01-02</date><experimenters>tests</experimenters></generalInfo>"
        "<acquisitionSystem><nBits>16</nBits>"
        f"<nChannels>{n_channels}</nChannels><samplingRate>20000</samplingRate>"
        "<voltageRange>20</voltageRange><amplification>1000</amplification><offset>0</offset>"
        "</acquisitionSystem><fieldPotentials><lfpSamplingRate>1250</lfpSamplingRate>"
        "</fieldPotentials>"
        f"<anatomicalDescription><channelGroups>{group_xml}</channelGroups>"
        "</anatomicalDescription>"
        f"<spikeDetection><channelGroups>{spike_xml}</channelGroups></spikeDetection>"
        "</parameters>\n"
    )
    xml_path = dat.with_suffix(".xml")
    xml_path.write_text(xml)
    return WrittenRecording(
        NeuroScopeRawIO,
        {"filename": str(xml_path)},
        {(0, 0, "0"): data},
        (dat,),
    )
