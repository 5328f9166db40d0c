"""A headerless (or fixed-header) binary file of interleaved samples: ``RawBinarySignalRawIO``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import RawBinarySignalRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_rawbinary(
    directory: Path,
    *,
    n_channels: int = 13,
    n_samples: int = 2_049,
    segments: int = 1,
    seed: int = 0,
    dtype: str = "int16",
    header_bytes: int = 12,
    partial_tail: int = 5,
) -> WrittenRecording:
    """``header_bytes`` of junk, the samples, then ``partial_tail`` values of a cut sample."""
    if segments != 1:
        raise ValueError("raw binary files hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    data = random_samples(rng, n_samples, n_channels, dtype)
    tail = random_samples(rng, 1, min(partial_tail, n_channels - 1), dtype)
    path = directory / "recording.raw"
    with path.open("wb") as f:
        f.write(rng.integers(0, 256, header_bytes, dtype="uint8").tobytes())
        f.write(data.tobytes())
        f.write(tail.tobytes())
    kwargs = {
        "filename": str(path),
        "dtype": dtype,
        "sampling_rate": 30_000.0,
        "nb_channel": n_channels,
        "signal_gain": 0.195,
        "signal_offset": -12.5,
        "bytesoffset": header_bytes,
    }
    return WrittenRecording(RawBinarySignalRawIO, kwargs, {(0, 0, "0"): data}, (path,))
