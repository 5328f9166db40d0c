"""WinWCP ``.wcp`` sweep recordings (Strathclyde Electrophysiology Software).

A 1024-byte ASCII header (``KEY=value`` lines: ``NC`` channels, ``NR`` records, ``NBA`` analysis
sectors and ``NBD`` data sectors of 512 bytes per record, ``ADCMAX``, per channel ``YN``,
``YU``, ``YO``, ``YG``), then each record: its analysis block (status, type, group, time,
sampling interval, then ``VMax`` for 8 channels, as floats) and ``NBD`` sectors of interleaved
int16. When ``NBD`` sectors do not hold a whole number of samples the rest is unused.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import WinWcpRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

SECTOR = 512
HEADER_BYTES = 1024


def write_winwcp(
    directory: Path,
    *,
    n_channels: int = 3,
    n_samples: int = 300,
    segments: int = 3,
    seed: int = 0,
) -> WrittenRecording:
    """``segments`` records; ``n_samples`` is rounded up to fill whole data sectors."""
    if n_channels > 8:
        raise ValueError("WinWCP analysis blocks hold 8 channels")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    nbd = -(-n_samples * n_channels * 2 // SECTOR)
    values_per_record = nbd * SECTOR // 2
    samples = (values_per_record - values_per_record % n_channels) // n_channels
    lines = [
        "VER=9",
        "RTIME=03/02/2026 10:20:30",
        f"NC={n_channels}",
        f"NR={segments}",
        f"NBH={HEADER_BYTES}",
        "NBA=2",
        f"NBD={nbd}",
        "AD=5,0",
        "ADCMAX=2047",
        f"NP={samples}",
        "DT=0,0001",
    ]
    for c in range(n_channels):
        lines += [f"YN{c}=Ch{c}", f"YU{c}=mV", f"YO{c}={c}", f"YG{c}={c + 1},5"]
    header = "\r\n".join(lines).encode("ascii") + b"\r\n"
    path = directory / "recording.wcp"
    signals = {}
    with path.open("wb") as f:
        f.write(header.ljust(HEADER_BYTES, b"\x00"))
        for seg in range(segments):
            vmax = [5.0 + c for c in range(n_channels)] + [0.0] * (8 - n_channels)
            analysis = struct.pack(
                "<8s4sfff8f", b"ACCEPTED", b"TEST", 1.0, float(seg), 0.0001, *vmax
            )
            f.write(analysis.ljust(2 * SECTOR, b"\x00"))
            data = random_samples(rng, samples, n_channels, "int16")
            rest = values_per_record - samples * n_channels
            f.write(data.astype("<i2").tobytes())
            f.write(random_samples(rng, 1, rest, "int16").tobytes() if rest else b"")
            signals[0, seg, "0"] = data
    return WrittenRecording(WinWcpRawIO, {"filename": str(path)}, signals, (path,))
