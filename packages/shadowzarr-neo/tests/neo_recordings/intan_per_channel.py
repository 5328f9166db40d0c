"""Intan "one file per channel": ``info.rhd`` (the header alone) and one ``.dat`` per channel.

The header is the real one of ``tests/data/ephys/intan/one-file-per-signal`` (linked, not
copied); the channel files are written here as Intan names them (``amp-A-000.dat`` int16,
``aux-A-AUX1.dat`` uint16, ``board-DIGITAL-IN-12.dat`` uint16, ``time.dat`` int32).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import IntanRawIO

from ._common import WrittenRecording, ephys_data, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_intan_per_channel(
    directory: Path, *, n_samples: int = 777, segments: int = 1, seed: int = 0
) -> WrittenRecording:
    """128 amplifier, 6 auxiliary and 4 digital input channels, one file each."""
    if segments != 1:
        raise ValueError("Intan recordings hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "info.rhd").symlink_to(ephys_data() / "intan" / "one-file-per-signal" / "info.rhd")
    streams = {
        "0": ("amp-A-{:03d}", range(128), "int16"),
        "1": ("aux-A-AUX{}", range(1, 7), "uint16"),
        "4": ("board-DIGITAL-IN-{}", range(12, 16), "uint16"),
    }
    signals = {}
    files = []
    for stream_id, (pattern, numbers, dtype) in streams.items():
        data = random_samples(rng, n_samples, len(numbers), dtype)
        if stream_id == "4":
            data = data % 2  # one bit per sample, as Intan writes digital channels
        for column, number in enumerate(numbers):
            path = directory / (pattern.format(number) + ".dat")
            data[:, column].tofile(path)
            files.append(path)
        signals[0, 0, stream_id] = data
    np.arange(n_samples, dtype="<i4").tofile(directory / "time.dat")
    reader_kwargs = {"filename": str(directory / "info.rhd")}
    return WrittenRecording(IntanRawIO, reader_kwargs, signals, tuple(files))
