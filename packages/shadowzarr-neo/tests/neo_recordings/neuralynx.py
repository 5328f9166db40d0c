"""Neuralynx Cheetah ``.ncs`` continuous files: one file per channel.

A 16 kB text header (``######## Neuralynx Data File Header``, then ``-Key value`` lines:
``SamplingFrequency``, ``ADBitVolts``, ``AcqEntName``, ``ADChannel``, ``InputInverted`` …)
followed by records of 1044 bytes: uint64 timestamp (µs), uint32 channel, uint32 sampling rate,
uint32 number of valid samples and 512 int16 samples. A jump in the timestamps starts a new
segment (NEO's ``gap_tolerance_ms``); the last record may hold fewer valid samples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import NeuralynxRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

HEADER_BYTES = 16 * 1024
RECORD_SAMPLES = 512
RATE = 32_000
RECORD_DTYPE = np.dtype(
    [
        ("timestamp", "<u8"),
        ("channel_id", "<u4"),
        ("sample_rate", "<u4"),
        ("nb_valid", "<u4"),
        ("samples", "<i2", RECORD_SAMPLES),
    ]
)


def _header(name: str, channel: int, bit_volts: float, inverted: bool) -> bytes:
    lines = [
        "######## Neuralynx Data File Header",
        f"## File Name C:\\CheetahData\\{name}.ncs",
        "## Time Opened (m/d/y): 2/3/2026  (h:m:s.ms) 10:20:30.000",
        "## Time Closed (m/d/y): 2/3/2026  (h:m:s.ms) 10:30:30.000",
        "-FileType CSC",
        "-FileVersion 3.4",
        "-RecordSize 1044",
        "-CheetahRev 5.6.3",
        "-HardwareSubSystemName AcqSystem1",
        "-HardwareSubSystemType DigitalLynxSX",
        f"-SamplingFrequency {RATE}",
        "-ADMaxValue 32767",
        f"-ADBitVolts {bit_volts:.24f}",
        f"-AcqEntName {name}",
        "-NumADChannels 1",
        f"-ADChannel {channel}",
        "-InputRange 1000",
        f"-InputInverted {'True' if inverted else 'False'}",
        "-DSPLowCutFilterEnabled True",
        "-DspLowCutFrequency 0.1",
        "-DspLowCutNumTaps 0",
        "-DspLowCutFilterType DCO",
        "-DSPHighCutFilterEnabled True",
        "-DspHighCutFrequency 9000",
        "-DspHighCutNumTaps 64",
        "-DspHighCutFilterType FIR",
        "-DspDelayCompensation Enabled",
        "-DspFilterDelay_µs 984",
    ]
    text = "\r\n".join(lines).encode("latin-1") + b"\r\n"
    return text.ljust(HEADER_BYTES, b"\x00")


def write_neuralynx(
    directory: Path,
    *,
    n_channels: int = 3,
    n_samples: int = 3 * RECORD_SAMPLES,
    segments: int = 2,
    seed: int = 0,
    last_valid: int = 300,
    inverted: bool = True,
) -> WrittenRecording:
    """``segments`` runs of records separated by a pause; the very last record is part full."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    record_us = RECORD_SAMPLES * 1_000_000 // RATE
    runs = [-(-n_samples // RECORD_SAMPLES) + s for s in range(segments)]
    n_records = sum(runs)
    data = random_samples(rng, n_records * RECORD_SAMPLES, n_channels, "int16")
    timestamps = []
    start = 1_000_000
    for run in runs:
        timestamps.extend(start + record_us * np.arange(run))
        start = timestamps[-1] + record_us + 5_000_000  # a five-second pause
    signals: dict[tuple[int, int, str], np.ndarray] = {}
    files = []
    for c in range(n_channels):
        records = np.zeros(n_records, dtype=RECORD_DTYPE)
        records["timestamp"] = timestamps
        records["channel_id"] = c
        records["sample_rate"] = RATE
        records["nb_valid"] = RECORD_SAMPLES
        records["nb_valid"][-1] = last_valid
        records["samples"] = data[:, c].reshape(n_records, RECORD_SAMPLES)
        path = directory / f"CSC{c + 1}.ncs"
        with path.open("wb") as f:
            f.write(_header(f"CSC{c + 1}", c, 3.05e-8 * (c + 1), inverted))
            f.write(records.tobytes())
        files.append(path)
    first = 0
    for s, run in enumerate(runs):
        length = run * RECORD_SAMPLES - (RECORD_SAMPLES - last_valid if s == segments - 1 else 0)
        signals[0, s, "0"] = data[first : first + length]
        first += run * RECORD_SAMPLES
    kwargs = {"dirname": str(directory), "gap_tolerance_ms": 1.0}
    return WrittenRecording(NeuralynxRawIO, kwargs, signals, tuple(files))
