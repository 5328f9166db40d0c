"""Blackrock NSx continuous files (file spec 2.3 and 3.0, and 3.0 with PTP clock packets).

``NEURALCD``, the version, the header size, a label and comment, the sampling period (in
1/30 kHz), the timestamp resolution, the time origin and the channel count form the 314-byte
basic header; one 66-byte ``CC`` extended header per channel follows (electrode id, label,
digital and analog ranges, units, filters). Data blocks (2.3, 3.0) each start with a header
(flag 1, timestamp of 4 or 8 bytes, number of samples) and hold interleaved int16 samples: a
pause in the recording starts a new block, which NEO reads as a new segment. PTP files (3.0)
instead store one packet per sample (a reserved byte, an 8-byte nanosecond timestamp, the sample
count 1, the samples); a jump in those timestamps starts a new segment.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import BlackrockRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

BASIC_BYTES = 314
EXTENDED_BYTES = 66


def _basic_header(version: tuple[int, int], n_channels: int, period: int, resolution: int) -> bytes:
    header = b"NEURALCD" + struct.pack(
        "<BBI16s256sII8HI",
        *version,
        BASIC_BYTES + EXTENDED_BYTES * n_channels,
        b"30 kS/s",
        b"written for the shadowzarr tests",
        period,
        resolution,
        2026, 2, 2, 3, 10, 20, 30, 0,
        n_channels,
    )  # fmt: skip
    assert len(header) == BASIC_BYTES
    return header


def _extended_header(electrode: int) -> bytes:
    header = struct.pack(
        "<2sH16sBBhhhh16sIIHIIH",
        b"CC",
        electrode,
        f"elec{electrode}".encode(),
        1,
        electrode % 32,
        -32764,
        32764,
        -8191,
        8191,
        b"uV",
        300,
        1,
        1,
        7_500_000,
        3,
        1,
    )
    assert len(header) == EXTENDED_BYTES
    return header


def write_blackrock(
    directory: Path,
    *,
    n_channels: int = 5,
    n_samples: int = 1_000,
    segments: int = 2,
    seed: int = 0,
    spec: str = "2.3",
    nsx: int = 5,
) -> WrittenRecording:
    """``segments`` data blocks (or PTP runs) of different lengths in ``recording.ns<nsx>``."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    ptp = spec == "3.0-ptp"
    version = (2, 3) if spec == "2.3" else (3, 0)
    resolution = 1_000_000_000 if ptp else 30_000
    lengths = [n_samples + 111 * s for s in range(segments)]
    path = directory / f"recording.ns{nsx}"
    signals = {}
    with path.open("wb") as f:
        f.write(_basic_header(version, n_channels, 1, resolution))
        for c in range(n_channels):
            f.write(_extended_header(c + 1))
        start = 0
        for s, length in enumerate(lengths):
            data = random_samples(rng, length, n_channels, "int16")
            signals[0, s, str(nsx)] = data
            if ptp:
                packet = np.dtype(
                    [("reserved", "u1"), ("timestamp", "<u8"), ("n", "<u4"),
                     ("samples", "<i2", (n_channels,))]
                )  # fmt: skip
                packets = np.zeros(length, dtype=packet)
                packets["timestamp"] = start + np.arange(length) * (resolution // 30_000)
                packets["n"] = 1
                packets["samples"] = data
                f.write(packets.tobytes())
                start = int(packets["timestamp"][-1]) + resolution  # a one-second pause
            else:
                flag = struct.pack("<BI" if spec == "2.3" else "<BQ", 1, start)
                f.write(flag + struct.pack("<I", length))
                f.write(data.astype("<i2").tobytes())
                start += length + 30_000
    kwargs: dict[str, object] = {"filename": str(directory / "recording"), "nsx_to_load": nsx}
    if ptp and segments > 1:
        kwargs["gap_tolerance_ms"] = 100.0
    return WrittenRecording(BlackrockRawIO, kwargs, signals, (path,))
