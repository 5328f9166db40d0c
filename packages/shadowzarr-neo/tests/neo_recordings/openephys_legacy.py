"""Open Ephys legacy format (GUI < 0.6): one ``.continuous`` file per channel.

Each file has a 1024-byte text header (``header.sampleRate = 30000;`` …) and records of 1024
big-endian int16 samples, each preceded by an int64 timestamp, a uint16 sample count and a
uint16 recording number and followed by 10 marker bytes. ``100_CH1.continuous`` is segment 0,
``100_CH1_2.continuous`` segment 1 (written with the processor name, ``100_RhythmData_CH1``, as
later GUIs do: NEO reads the shorter form's segment numbers as channel names). Channels named
``CH`` and ``ADC`` form two streams.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import OpenEphysRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

RECORD_SAMPLES = 1024
HEADER_BYTES = 1024
RECORD_DTYPE = np.dtype(
    [
        ("timestamp", "<i8"),
        ("nb_sample", "<u2"),
        ("rec_num", "<u2"),
        ("samples", ">i2", RECORD_SAMPLES),
        ("markers", "u1", 10),
    ]
)


def _header(channel: str, bit_volts: float) -> bytes:
    text = (
        "header.format = 'Open Ephys Data Format'; \n"
        "header.version = 0.4;\n"
        f"header.header_bytes = {HEADER_BYTES};\n"
        "header.description = 'each record contains one 64-bit timestamp, one 16-bit sample "
        "count (N), 1 uint16 recordingNumber, N 16-bit samples, and one 10-byte record marker "
        "(0 1 2 3 4 5 6 7 8 255)';\n"
        "header.date_created = '3-Feb-2026 102030';\n"
        f"header.channel = '{channel}';\n"
        "header.channelType = 'Continuous';\n"
        "header.sampleRate = 30000;\n"
        f"header.blockLength = {RECORD_SAMPLES};\n"
        "header.bufferSize = 1024;\n"
        f"header.bitVolts = {bit_volts};\n"
    ).encode("ascii")
    return text.ljust(HEADER_BYTES, b" ")


def write_openephys_legacy(
    directory: Path,
    *,
    n_channels: int = 5,
    n_samples: int = 3 * RECORD_SAMPLES,
    segments: int = 2,
    seed: int = 0,
    n_adc: int = 2,
    gap: bool = False,
    early_adc: bool = False,
) -> WrittenRecording:
    """``n_channels`` CH files and ``n_adc`` ADC files per segment; lengths are whole records.

    With ``gap`` the first channel skips a record's worth of timestamps before its last
    record, which NEO fills with zeros when reading (so ``signals`` no longer holds its reads).
    """
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    names = [f"CH{c + 1}" for c in range(n_channels)] + [f"ADC{c + 1}" for c in range(n_adc)]
    signals: dict[tuple[int, int, str], np.ndarray] = {}
    files = []
    for seg in range(segments):
        n_records = -(-n_samples // RECORD_SAMPLES) + seg
        data = random_samples(rng, n_records * RECORD_SAMPLES, len(names), "int16")
        first_timestamp = 5_000 + 100_000 * seg
        for c, name in enumerate(names):
            records = np.zeros(n_records, dtype=RECORD_DTYPE)
            records["timestamp"] = first_timestamp + RECORD_SAMPLES * np.arange(n_records)
            if gap and c == 0:
                records["timestamp"][-1] += RECORD_SAMPLES
            records["nb_sample"] = RECORD_SAMPLES
            records["rec_num"] = seg
            records["samples"] = data[:, c].reshape(n_records, RECORD_SAMPLES)
            records["markers"] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 255]
            if early_adc and name.startswith("ADC"):
                extra = np.zeros(1, dtype=RECORD_DTYPE)
                extra["timestamp"] = first_timestamp - RECORD_SAMPLES
                extra["nb_sample"] = RECORD_SAMPLES
                extra["samples"] = random_samples(rng, 1, RECORD_SAMPLES, "int16")
                extra["markers"] = records["markers"][0]
                # concatenate gives native byte order: cast back to the file's big-endian samples
                records = np.concatenate([extra, records]).astype(RECORD_DTYPE)
            suffix = "" if seg == 0 else f"_{seg + 1}"
            path = directory / f"100_RhythmData_{name}{suffix}.continuous"
            with path.open("wb") as f:
                f.write(_header(name, 0.195 if name.startswith("CH") else 0.00037))
                f.write(records.tobytes())
            files.append(path)
        signals[0, seg, "CH"] = data[:, :n_channels]
        signals[0, seg, "ADC"] = data[:, n_channels:]
    return WrittenRecording(OpenEphysRawIO, {"dirname": str(directory)}, signals, tuple(files))
