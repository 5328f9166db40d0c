"""Recordings written byte for byte as each format's documentation and NEO's reader expect.

NEO's own test data server is out of reach, so every test writes the recording it reads. Each
module has one ``write_<format>(directory, *, n_channels, n_samples, segments, seed, ...)`` that
returns a :class:`WrittenRecording`: how NEO opens it and the raw values that were written.
"""

from __future__ import annotations

from ._common import WrittenRecording, random_samples

__all__ = ["WrittenRecording", "random_samples"]
