"""The layout of a raw binary recording, which the file itself does not record.

NEO's ``RawBinarySignalRawIO`` has defaults for every parameter (2 int16 channels at 10 kHz, no
header), so a file read without them comes out with the wrong shape and rate and no warning.
The command asks for the sample type, channel count and rate and refuses to guess them; the
byte offset is 0 unless given (a file of samples alone, as most .bin/.raw recordings are).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

__all__ = ["RawBinaryLayout", "add_raw_binary_options", "raw_binary_layout"]

_OPTIONS = ("dtype", "channels", "sampling_rate", "byte_offset")


@dataclass(frozen=True, slots=True)
class RawBinaryLayout:
    """Interleaved samples of ``channels`` channels of ``dtype``, after ``byte_offset`` bytes."""

    dtype: str
    channels: int
    sampling_rate: float
    byte_offset: int

    def neo_arguments(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype,
            "nb_channel": self.channels,
            "sampling_rate": self.sampling_rate,
            "bytesoffset": self.byte_offset,
        }


def add_raw_binary_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "raw binary recordings (a .bin/.raw file, or --format neo:RawBinarySignalRawIO): "
        "--dtype, --channels and --sampling-rate are required"
    )
    group.add_argument("--dtype", help="sample type, e.g. int16, <i2, float32")
    group.add_argument("--channels", type=int, help="number of interleaved channels")
    group.add_argument("--sampling-rate", type=float, help="samples per second per channel (Hz)")
    group.add_argument(
        "--byte-offset",
        type=int,
        help="bytes before the first sample, a header (default: 0, samples from the start)",
    )


def raw_binary_layout(args: argparse.Namespace) -> RawBinaryLayout | None:
    """The layout given on the command line, None if none of it was; half of it is an error."""
    import numpy as np

    given: dict[str, Any] = {name: getattr(args, name, None) for name in _OPTIONS}
    if all(value is None for value in given.values()):
        return None
    if given["byte_offset"] is None:
        given["byte_offset"] = 0
    missing = [f"--{name.replace('_', '-')}" for name, value in given.items() if value is None]
    if missing:
        raise ValueError(f"a raw binary recording needs {', '.join(missing)} as well")
    try:
        dtype = np.dtype(given["dtype"])
    except TypeError as exc:
        raise ValueError(f"--dtype {given['dtype']!r} is not a numpy data type") from exc
    if dtype.kind not in "iuf":
        raise ValueError(f"--dtype {given['dtype']!r}: samples are integers or floats")
    if given["channels"] < 1:
        raise ValueError("--channels must be at least 1")
    if not given["sampling_rate"] > 0:
        raise ValueError("--sampling-rate must be positive")
    if given["byte_offset"] < 0:
        raise ValueError("--byte-offset must not be negative")
    return RawBinaryLayout(
        dtype.str, int(given["channels"]), float(given["sampling_rate"]), int(given["byte_offset"])
    )
