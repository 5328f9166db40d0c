"""Elan (INSERM Lyon): big-endian ``.eeg``, text header ``.eeg.ent``, events ``.eeg.pos``.

The header gives, per channel, the label, kind, unit and physical and logical ranges; the last
two channels of every file are the event and trigger channels that NEO keeps out of its stream.
The sample size follows from the logical range (16 or 32 bits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import ElanRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_elan(
    directory: Path,
    *,
    n_channels: int = 5,
    n_samples: int = 999,
    segments: int = 1,
    seed: int = 0,
    bytes_per_sample: int = 2,
) -> WrittenRecording:
    """``n_channels`` signals plus Elan's two extra channels, stored big-endian."""
    if segments != 1:
        raise ValueError("Elan files hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    dtype = f">i{bytes_per_sample}"
    total = n_channels + 2
    data = random_samples(rng, n_samples, total, dtype)
    eeg = directory / "recording.eeg"
    data.astype(dtype).tofile(eeg)
    bits = 8 * bytes_per_sample
    labels = [f"EEG{c + 1}" for c in range(n_channels)] + ["event", "trigger"]
    lines = [
        "V2",
        "shadowzarr test recording",
        "written byte for byte for NEO",
        "Date: 03-02-2026",
        "Time: 10:20:30",
        "-1",
        "reserved",
        "-1",
        f"{1 / 512:.10f}",
        str(total),
        *labels,
        *(["EEG"] * n_channels + ["event", "trigger"]),
        *(["uV"] * n_channels + ["none", "none"]),
        *[str(-3200.0 - 100 * c) for c in range(total)],
        *[str(3200.0 + 100 * c) for c in range(total)],
        *[str(-(2 ** (bits - 1)))] * total,
        *[str(2 ** (bits - 1) - 1)] * total,
        *(["passe-haut ? Hz passe-bas ? Hz type ? ordre ?"] * total),
    ]
    (directory / "recording.eeg.ent").write_text("\n".join(lines) + "\n", encoding="ascii")
    (directory / "recording.eeg.pos").write_text("   100    3    0\n   500    7    0\n")
    return WrittenRecording(
        ElanRawIO, {"filename": str(eeg)}, {(0, 0, "0"): data[:, :n_channels]}, (eeg,)
    )
