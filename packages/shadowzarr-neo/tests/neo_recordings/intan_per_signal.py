"""Intan "one file per signal type": ``info.rhd`` (the header alone) and one ``.dat`` per type.

The header is a real one (``data/ephys/intan/one-file-per-signal/info.rhd``: 128 amplifier and
6 auxiliary channels, digital inputs 12 to 15); the signal files are written here as Intan lays
them out, samples interleaved across channels: ``amplifier.dat`` int16, ``auxiliary.dat`` uint16,
``digitalin.dat`` one uint16 word per sample (a bit per input), ``time.dat`` int32 sample numbers.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import IntanRawIO

from ._common import WrittenRecording, ephys_data, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_intan_per_signal(
    directory: Path, *, n_samples: int = 2_000, segments: int = 1, seed: int = 0
) -> WrittenRecording:
    if segments != 1:
        raise ValueError("Intan recordings hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    header = ephys_data() / "intan" / "one-file-per-signal" / "info.rhd"
    shutil.copyfile(header, directory / "info.rhd")
    amplifier = random_samples(rng, n_samples, 128, "int16")
    auxiliary = random_samples(rng, n_samples, 6, "uint16")
    bits = rng.integers(0, 2, size=(n_samples, 4)).astype("<u2")  # digital inputs 12 to 15
    digital = (bits << np.arange(12, 16, dtype="<u2")).sum(axis=1).astype("<u2")
    files = []
    for name, data in (("amplifier", amplifier), ("auxiliary", auxiliary), ("digitalin", digital)):
        path = directory / f"{name}.dat"
        data.astype(data.dtype.newbyteorder("<")).tofile(path)
        files.append(path)
    np.arange(n_samples, dtype="<i4").tofile(directory / "time.dat")
    # NEO splits the digital word into one channel per input the header lists
    signals = {(0, 0, "0"): amplifier, (0, 0, "1"): auxiliary, (0, 0, "4"): bits}
    reader_kwargs = {"filename": str(directory / "info.rhd")}
    return WrittenRecording(IntanRawIO, reader_kwargs, signals, tuple(files))
