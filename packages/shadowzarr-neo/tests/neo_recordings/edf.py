"""EDF (European Data Format): a fixed-width ASCII header, then data records.

The 256-byte header gives the start date and time, the header size, the number of data records,
their duration and the number of signals ``ns``; then come ``ns`` values of each signal field in
turn (label 16 bytes, transducer 80, physical dimension 8, physical minimum and maximum 8 each,
digital minimum and maximum 8 each, prefiltering 80, samples per record 8, reserved 32). Each
data record holds, signal after signal, that signal's samples per record as int16. Signals of
different rates form different NEO streams, and here they alternate in the records. With
``plus`` the file is EDF+C and ends each record with an ``EDF Annotations`` signal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import EDFRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def _field(value: object, width: int) -> bytes:
    text = str(value).encode("ascii")
    if len(text) > width:
        raise ValueError(f"{value!r} does not fit {width} characters")
    return text.ljust(width)


def write_edf(
    directory: Path,
    *,
    n_channels: int = 5,
    n_samples: int = 4 * 200,
    segments: int = 1,
    seed: int = 0,
    plus: bool = False,
    fast: int = 200,
    slow: int = 50,
    bdf: bool = False,
) -> WrittenRecording:
    """Channels alternate between ``fast`` and ``slow`` samples per one-second record.

    With ``bdf`` the file is BioSemi's BDF variant: version ``\\xffBIOSEMI``, 24-bit samples.
    """
    if segments != 1:
        raise ValueError("continuous EDF files hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    n_records = -(-n_samples // fast)
    per_record = [fast if c % 3 != 1 else slow for c in range(n_channels)]
    labels = [f"EEG C{c + 1}" for c in range(n_channels)]
    data = [random_samples(rng, n_records * n, 1, "int16")[:, 0] for n in per_record]
    annotation_bytes = 60 if plus else 0
    signals_count = n_channels + (1 if plus else 0)
    header_bytes = 256 * (1 + signals_count)
    fields = {
        "label": [*labels, *(["EDF Annotations"] if plus else [])],
        "transducer": ["AgAgCl electrode"] * n_channels + ([""] if plus else []),
        "dimension": ["uV"] * n_channels + ([""] if plus else []),
        "physical_min": [-3276.8 + c for c in range(n_channels)] + ([-1] if plus else []),
        "physical_max": [3276.7 + c for c in range(n_channels)] + ([1] if plus else []),
        "digital_min": [-32768] * signals_count,
        "digital_max": [32767] * signals_count,
        "prefiltering": ["HP:0.1Hz LP:75Hz"] * n_channels + ([""] if plus else []),
        "samples": [*per_record, *([annotation_bytes // 2] if plus else [])],
    }
    widths = {
        "label": 16, "transducer": 80, "dimension": 8, "physical_min": 8, "physical_max": 8,
        "digital_min": 8, "digital_max": 8, "prefiltering": 80, "samples": 8,
    }  # fmt: skip
    if bdf:
        fields["digital_min"] = [-(2**23)] * signals_count
        fields["digital_max"] = [2**23 - 1] * signals_count
    header = b"".join(
        [
            b"\xffBIOSEMI" if bdf else _field(0, 8),
            _field("X M 01-JAN-1980 Subject" if plus else "subject", 80),
            _field("Startdate 03-FEB-2026 X X shadowzarr" if plus else "recording", 80),
            _field("03.02.26", 8),
            _field("10.20.30", 8),
            _field(header_bytes, 8),
            _field("EDF+C" if plus else ("24BIT" if bdf else ""), 44),
            _field(n_records, 8),
            _field(1, 8),
            _field(signals_count, 4),
            *(_field(v, widths[name]) for name, values in fields.items() for v in values),
            _field("", 32 * signals_count),
        ]
    )
    if len(header) != header_bytes:
        raise AssertionError("EDF header fields were written with the wrong widths")
    path = directory / ("recording.bdf" if bdf else "recording.edf")
    with path.open("wb") as f:
        f.write(header)
        for r in range(n_records):
            for c, n in enumerate(per_record):
                values = data[c][r * n : (r + 1) * n]
                if bdf:  # little-endian 24-bit: the low three bytes of each int32
                    f.write(values.astype("<i4").view("u1").reshape(-1, 4)[:, :3].tobytes())
                else:
                    f.write(values.astype("<i2").tobytes())
            if plus:
                f.write(f"+{r}\x14\x14\x00".encode("ascii").ljust(annotation_bytes, b"\x00"))
    signals = {}
    for stream, n in enumerate(dict.fromkeys(per_record)):
        columns = [data[c] for c in range(n_channels) if per_record[c] == n]
        signals[0, 0, str(stream)] = np.stack(columns, axis=1)
    return WrittenRecording(EDFRawIO, {"filename": str(path)}, signals, (path,))
