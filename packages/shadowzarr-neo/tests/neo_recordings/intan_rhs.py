"""Intan RHS (stimulation/recording controller), traditional file: header, then data blocks.

The header is a sequence of little-endian fields and QStrings (uint32 byte length, then UTF-16):
magic number 0xD69127AC, version, sampling rate, filter and stimulation settings, three notes,
whether DC amplifier data is saved, the board mode, the reference channel, then signal groups,
each listing its channels (names, orders, signal type, enabled, chip channel, command stream,
board stream, spike scope settings, impedance). Each data block holds 128 samples: the int32
timestamps, every amplifier channel, every DC amplifier channel, every stimulation word, the
board ADC inputs, then the digital input word, each as 128 consecutive values.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import IntanRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

BLOCK = 128
MAGIC = 0xD69127AC


def _qstring(text: str) -> bytes:
    data = text.encode("utf-16-le")
    return struct.pack("<I", len(data)) + data


def _channel(native: str, custom: str, order: int, signal_type: int) -> bytes:
    return (
        _qstring(native)
        + _qstring(custom)
        + struct.pack("<hhhhhhhhhhh", order, order, signal_type, 1, order, 0, 0, 0, 0, 0, 0)
        + struct.pack("<ff", 1.0e5, -45.0)
    )


def write_intan_rhs(
    directory: Path,
    *,
    n_channels: int = 4,
    n_samples: int = 3 * BLOCK,
    segments: int = 1,
    seed: int = 0,
) -> WrittenRecording:
    """Port A amplifiers (with DC and stimulation data), two ADC inputs, one digital input.

    ``signals`` holds the stored values, and for the digital and stimulation streams the values
    NEO computes from them (which references cannot give).
    """
    if segments != 1:
        raise ValueError("Intan recordings hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    n_blocks = -(-n_samples // BLOCK)
    header = struct.pack("<Ihhf", MAGIC, 3, 2, 30_000.0)
    # DSP enabled; actual then desired DSP cutoff, lower, lower settle and upper bandwidths
    header += struct.pack("<h8f", 1, 1.0, 0.1, 1.0, 7_500.0, 1.0, 0.1, 1.0, 7_500.0)
    header += struct.pack("<hff", 0, 1_000.0, 1_000.0)  # notch off, impedance test frequencies
    header += struct.pack("<hhfff", 0, 1, 1.0e-6, 1.0e-6, 0.0)  # settle, recovery, stim step …
    header += _qstring("shadowzarr") + _qstring("") + _qstring("")
    header += struct.pack("<hh", 1, 13)  # DC amplifier data saved, board mode
    header += _qstring("hardware") + struct.pack("<h", 3)
    header += _qstring("Port A") + _qstring("A") + struct.pack("<hhh", 1, n_channels, n_channels)
    header += b"".join(_channel(f"A-{c:03d}", f"A-{c:03d}", c, 0) for c in range(n_channels))
    header += _qstring("Analog In") + _qstring("ANALOG-IN") + struct.pack("<hhh", 1, 2, 0)
    header += b"".join(_channel(f"ANALOG-IN-{c + 1}", f"ADC{c + 1}", c, 3) for c in range(2))
    header += _qstring("Digital In") + _qstring("DIGITAL-IN") + struct.pack("<hhh", 1, 1, 0)
    header += _channel("DIGITAL-IN-01", "DIN1", 0, 5)
    amplifier = random_samples(rng, n_blocks * BLOCK, n_channels, "uint16")
    dc = random_samples(rng, n_blocks * BLOCK, n_channels, "uint16") % 1024
    stim = random_samples(rng, n_blocks * BLOCK, n_channels, "uint16") % 512
    adc = random_samples(rng, n_blocks * BLOCK, 2, "uint16")
    digital = random_samples(rng, n_blocks * BLOCK, 1, "uint16") % 2
    path = directory / "recording.rhs"
    with path.open("wb") as f:
        f.write(header)
        for b in range(n_blocks):
            rows = slice(b * BLOCK, (b + 1) * BLOCK)
            f.write(np.arange(b * BLOCK, (b + 1) * BLOCK, dtype="<i4").tobytes())
            for values in (amplifier, dc, stim, adc, digital):
                f.write(np.ascontiguousarray(values[rows].T).astype("<u2").tobytes())
    # what NEO computes from the stored words: bit 0 of the digital word for DIGITAL-IN-01, and
    # the stimulation current as magnitude (bits 0-7) with a sign (bit 8)
    current = (stim & 0xFF).astype("int16") * np.where(stim & 0x100, -1, 1).astype("int16")
    signals = {
        (0, 0, "0"): amplifier,
        (0, 0, "10"): dc,
        (0, 0, "3"): adc,
        (0, 0, "5"): digital & 1,
        (0, 0, "11"): current,
    }
    return WrittenRecording(IntanRawIO, {"filename": str(path)}, signals, (path,))
