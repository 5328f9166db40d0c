"""What a recording writer hands back, and the random samples it writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from neo.rawio.baserawio import BaseRawIO


@dataclass(frozen=True, slots=True)
class WrittenRecording:
    """A recording on disk and the raw values its streams hold.

    ``signals`` maps ``(block_index, segment_index, stream_id)`` to the time-by-channel raw
    values of that stream, in NEO's channel order; ``files`` are the files written.
    """

    reader_class: type[BaseRawIO]
    reader_kwargs: dict[str, Any]
    signals: dict[tuple[int, int, str], np.ndarray]
    files: tuple[Path, ...] = field(default=())

    def open(self) -> BaseRawIO:
        """A NEO raw reader of the recording with its header parsed."""
        reader = self.reader_class(**self.reader_kwargs)
        reader.parse_header()
        return reader


def random_samples(
    rng: np.random.Generator, n_samples: int, n_channels: int, dtype: str | np.dtype
) -> np.ndarray:
    """Samples spread over the whole range of ``dtype`` so byte order or offset mistakes show."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.normal(0.0, 100.0, size=(n_samples, n_channels)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=(n_samples, n_channels), endpoint=True).astype(
        dtype
    )


def ephys_data() -> Path:
    """The real recordings kept with the tests (``tests/data/ephys``; sources in its README)."""
    return Path(__file__).resolve().parents[1] / "data" / "ephys"
