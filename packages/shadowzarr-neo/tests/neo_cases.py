"""The recordings every test of this package runs on: written ones and real ones."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import pytest
from neo.rawio import BlackrockRawIO, BrainVisionRawIO, IntanRawIO
from neo_recordings import WrittenRecording
from neo_recordings._common import ephys_data
from neo_recordings.axon import AXON_FILES, axon_recording
from neo_recordings.biocam import write_biocam
from neo_recordings.blackrock import write_blackrock
from neo_recordings.brainvision import write_brainvision
from neo_recordings.edf import write_edf
from neo_recordings.elan import write_elan
from neo_recordings.intan_per_channel import write_intan_per_channel
from neo_recordings.intan_per_signal import write_intan_per_signal
from neo_recordings.intan_rhs import write_intan_rhs
from neo_recordings.maxwell import write_maxwell
from neo_recordings.mearec import write_mearec
from neo_recordings.micromed import write_micromed
from neo_recordings.neuralynx import write_neuralynx
from neo_recordings.neuronexus import write_neuronexus
from neo_recordings.neuroscope import write_neuroscope
from neo_recordings.openephys_binary import write_openephys_binary
from neo_recordings.openephys_legacy import write_openephys_legacy
from neo_recordings.rawbinary import write_rawbinary
from neo_recordings.rawmcs import write_rawmcs
from neo_recordings.spikegadgets import write_spikegadgets
from neo_recordings.spikeglx import write_spikeglx
from neo_recordings.winedr import write_winedr
from neo_recordings.winwcp import write_winwcp

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def _real_brainvision(directory: Path) -> WrittenRecording:
    vhdr = ephys_data() / "brainvision" / "test.vhdr"
    return WrittenRecording(BrainVisionRawIO, {"filename": str(vhdr)}, {}, ())


def _real_intan(name: str) -> Callable[[Path], WrittenRecording]:
    path = ephys_data() / "intan" / name
    return lambda _directory: WrittenRecording(IntanRawIO, {"filename": str(path)}, {}, ())


def _real_blackrock(_directory: Path) -> WrittenRecording:
    base = ephys_data() / "blackrock" / "example_2"
    return WrittenRecording(BlackrockRawIO, {"filename": str(base), "nsx_to_load": 2}, {}, ())


WRITTEN: dict[str, Callable[[Path], WrittenRecording]] = {
    "spikeglx": write_spikeglx,
    "spikeglx-small": partial(write_spikeglx, n_channels=5, segments=3, n_samples=1_201),
    "openephys-binary": write_openephys_binary,
    "brainvision-int16": write_brainvision,
    "brainvision-vectorized-float32": partial(
        write_brainvision, orientation="VECTORIZED", binary_format="IEEE_FLOAT_32"
    ),
    "brainvision-vectorized-int32": partial(
        write_brainvision, orientation="VECTORIZED", binary_format="INT_32", n_channels=3
    ),
    "elan-16": write_elan,
    "elan-32": partial(write_elan, bytes_per_sample=4, n_channels=3),
    "micromed": write_micromed,
    "micromed-one-segment": partial(write_micromed, segments=1, bytes_per_sample=1),
    "neuronexus": write_neuronexus,
    "neuroscope": write_neuroscope,
    "rawbinary-int16": write_rawbinary,
    "rawbinary-float32": partial(write_rawbinary, dtype="float32", header_bytes=0, n_channels=4),
    "rawmcs": write_rawmcs,
    "winedr": write_winedr,
    "winwcp": write_winwcp,
    "maxwell": write_maxwell,
    "maxwell-chunked": partial(write_maxwell, chunks=(4, 256)),
    "maxwell-many-chunks": partial(write_maxwell, chunks=(1, 8), wells=1),
}

REAL: dict[str, Callable[[Path], WrittenRecording]] = {
    "brainvision-real": _real_brainvision,
    **{
        f"axon-{path.stem}": partial(lambda _d, p: axon_recording(p), p=path) for path in AXON_FILES
    },
}

WRITTEN_NO_BUFFERS: dict[str, Callable[[Path], WrittenRecording]] = {
    "openephys-legacy": write_openephys_legacy,
    "openephys-legacy-clipped": partial(write_openephys_legacy, early_adc=True, segments=1),
    "spikegadgets": write_spikegadgets,
    "neuralynx": write_neuralynx,
    "neuralynx-one-segment": partial(write_neuralynx, segments=1, n_channels=2, inverted=False),
    "intan-one-file-per-channel": write_intan_per_channel,
    "intan-one-file-per-signal": write_intan_per_signal,
    "intan-rhs": write_intan_rhs,
    "blackrock-2.3": write_blackrock,
    "blackrock-3.0": partial(write_blackrock, spec="3.0", segments=1, n_channels=3, nsx=6),
    "blackrock-3.0-ptp": partial(write_blackrock, spec="3.0-ptp", segments=3, n_channels=4),
    "biocam-101": write_biocam,
    "biocam-100-chunked": partial(write_biocam, version="100", chunks=100, n_channels=9),
    "biocam-4": partial(write_biocam, version="4", chunks=64 * 16),
    "biocam-4-gzip": partial(write_biocam, version="4", chunks=100 * 16, compression="gzip"),
    "biocam-101-gzip-shuffle": partial(
        write_biocam, chunks=160, compression="gzip", shuffle=True, n_samples=1_000
    ),
    "biocam-100-lzf": partial(write_biocam, version="100", chunks=33, compression="lzf"),
    "edf": write_edf,
    "edf-plus": partial(write_edf, plus=True, n_channels=4, fast=128, slow=128),
    "mearec": write_mearec,
    "mearec-float32-one-sample-short": partial(write_mearec, dtype="float32", n_samples=1_001),
    "mearec-chunked-gzip": partial(write_mearec, chunks=(64, 3), compression="gzip"),
    "mearec-many-chunks": partial(write_mearec, chunks=(2, 7), n_samples=2_501, n_channels=7),
}
"""Written recordings whose NEO readers do not describe their buffers (virtual_arrays_neo only)."""

NO_BUFFERS: dict[str, Callable[[Path], WrittenRecording]] = {
    **WRITTEN_NO_BUFFERS,
    "intan-rhd-128": _real_intan("sampledata.rhd"),
    "intan-rhd-60": _real_intan("r4_210612_195804_part.rhd"),
    "blackrock-ns2": _real_blackrock,
}
"""Recordings whose NEO readers do not describe their buffers (virtual_arrays_neo only)."""

written_cases = pytest.mark.parametrize("write", list(WRITTEN.values()), ids=list(WRITTEN))
every_written_case = pytest.mark.parametrize(
    "write",
    [*WRITTEN.values(), *WRITTEN_NO_BUFFERS.values()],
    ids=[*WRITTEN, *WRITTEN_NO_BUFFERS],
)
all_cases = pytest.mark.parametrize(
    "write", [*WRITTEN.values(), *REAL.values()], ids=[*WRITTEN, *REAL]
)
virtual_cases = pytest.mark.parametrize(
    "write",
    [*WRITTEN.values(), *REAL.values(), *NO_BUFFERS.values()],
    ids=[*WRITTEN, *REAL, *NO_BUFFERS],
)
