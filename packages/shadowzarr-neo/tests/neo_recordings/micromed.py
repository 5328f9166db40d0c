"""Micromed ``.TRC`` files, header version 4.

A fixed binary header holds the patient, the date, the data offset, the channel count, the
minimum rate and the sample size, then a table of named zones (``ORDER``, ``LABCOD``,
``TRONCA``, …: name, offset, length). ``ORDER`` lists the electrode codes, ``LABCOD`` has one
128-byte record per electrode (label, reference, logical and physical ranges, unit, rate),
``TRONCA`` lists the segments as (first sample time, first sample index) pairs ending with two
zeros. Samples are interleaved unsigned integers of ``Bytes`` bytes.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import MicromedRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

ZONES = (
    "ORDER", "LABCOD", "NOTE", "FLAGS", "TRONCA", "IMPED_B", "IMPED_E", "MONTAGE",
    "COMPRESS", "AVERAGE", "HISTORY", "DVIDEO", "EVENT A", "EVENT B", "TRIGGER",
)  # fmt: skip
ZONE_SIZE = 1024
RATE_MIN = 256


def _electrode_record(label: str, bytes_per_sample: int, unit_code: int, rate_factor: int) -> bytes:
    logical_max = 2 ** (8 * bytes_per_sample) - 1
    record = bytearray(128)
    record[0] = 1  # status: electrode acquired
    record[1] = 0  # type
    record[2:8] = label.encode("ascii").ljust(6, b"\x00")
    record[8:14] = b"G2".ljust(6, b"\x00")
    record[14:34] = struct.pack("<iiiii", 0, logical_max, logical_max // 2 + 1, -3200, 3200)
    record[34:36] = struct.pack("<h", unit_code)
    # 8 bytes of filter settings, then the rate as a multiple of Rate_Min
    record[44:46] = struct.pack("<H", rate_factor)
    return bytes(record)


def write_micromed(
    directory: Path,
    *,
    n_channels: int = 5,
    n_samples: int = 1_000,
    segments: int = 2,
    seed: int = 0,
    bytes_per_sample: int = 2,
) -> WrittenRecording:
    """``segments`` pieces of one data block; each piece is a NEO segment of its own."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    dtype = f"<u{bytes_per_sample}"
    lengths = [n_samples + 41 * s for s in range(segments)]
    data = random_samples(rng, sum(lengths), n_channels, dtype)
    zone_start = 640
    positions = {name: zone_start + i * ZONE_SIZE for i, name in enumerate(ZONES)}
    labcod_size = 640 * 128
    positions["NOTE"] += labcod_size  # LABCOD needs room for all 640 possible electrodes
    for name in ZONES[ZONES.index("FLAGS") :]:
        positions[name] += labcod_size
    data_start = positions["TRIGGER"] + ZONE_SIZE
    header = bytearray(data_start)
    header[0:32] = b"MICROMED  Brain-Quick file".ljust(32)
    header[64:86] = b"Doe".ljust(22)
    header[86:106] = b"Jane".ljust(20)
    header[128:134] = struct.pack("bbbbbb", 3, 2, 126, 10, 20, 30)
    header[138:150] = struct.pack("<IHHHH", data_start, n_channels, 0, RATE_MIN, bytes_per_sample)
    header[175] = 4
    for i, name in enumerate(ZONES):
        header[176 + 16 * i : 192 + 16 * i] = struct.pack(
            "<8sII", name.ljust(8).encode("ascii"), positions[name], ZONE_SIZE
        )
    codes = np.arange(n_channels, dtype="<u2")[::-1] * 2  # electrodes are not in order
    header[positions["ORDER"] : positions["ORDER"] + 2 * n_channels] = codes.tobytes()
    for c, code in enumerate(codes):
        start = positions["LABCOD"] + int(code) * 128
        header[start : start + 128] = _electrode_record(f"E{c + 1}", bytes_per_sample, 0, 2)
    if segments > 1:
        tronca = positions["TRONCA"]
        first = 0
        for s, length in enumerate(lengths):
            time = 100 + s * 10_000  # the first sample's time, in samples
            header[tronca + 8 * s : tronca + 8 * s + 8] = struct.pack("<II", time, first)
            first += length
    if len(header) != data_start:
        raise AssertionError("a header field was written with the wrong size")
    path = directory / "recording.TRC"
    with path.open("wb") as f:
        f.write(bytes(header))
        f.write(data.astype(dtype).tobytes())
    signals = {}
    first = 0
    for s, length in enumerate(lengths):
        signals[0, s, "0"] = data[first : first + length]
        first += length
    return WrittenRecording(MicromedRawIO, {"filename": str(path)}, signals, (path,))
