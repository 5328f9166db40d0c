"""WinEDR ``.EDR`` continuous recordings (Strathclyde Electrophysiology Software).

A 2048-byte ASCII header of ``KEY=value`` lines separated by CR LF (``NC`` channels, ``NP``
samples in all, ``NBH`` header bytes, ``AD`` volts range, ``ADCMAX``, ``DT`` sampling interval
and per channel ``YN``, ``YU``, ``YO``, ``YCF``, ``YAG``, ``YZ``), then interleaved int16.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import WinEdrRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

HEADER_BYTES = 2048


def write_winedr(
    directory: Path,
    *,
    n_channels: int = 3,
    n_samples: int = 1_999,
    segments: int = 1,
    seed: int = 0,
) -> WrittenRecording:
    """Channels stored in another order than their numbers (``YO``), with different gains."""
    if segments != 1:
        raise ValueError("WinEDR files hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    data = random_samples(rng, n_samples, n_channels, "int16")
    lines = [
        "VER=6.1",
        f"NC={n_channels}",
        f"NP={n_samples * n_channels}",
        f"NBH={HEADER_BYTES}",
        "AD=5,0000",
        "ADCMAX=32767",
        "DT=0,0001",
        "TU=s",
    ]
    for c in range(n_channels):
        lines += [
            f"YN{c}=Im{c}",
            f"YU{c}={'pA' if c % 2 == 0 else 'mV'}",
            f"YO{c}={n_channels - 1 - c}",
            f"YCF{c}={0.5 * (c + 1):.4f}".replace(".", ","),
            f"YAG{c}=1",
            f"YZ{c}={c * 3}",
        ]
    header = "\r\n".join(lines).encode("ascii") + b"\r\n"
    if len(header) > HEADER_BYTES:
        raise ValueError("too many channels for the header")
    path = directory / "recording.EDR"
    with path.open("wb") as f:
        f.write(header.ljust(HEADER_BYTES, b"\x00"))
        f.write(data.astype("<i2").tobytes())
    return WrittenRecording(WinEdrRawIO, {"filename": str(path)}, {(0, 0, "0"): data}, (path,))
