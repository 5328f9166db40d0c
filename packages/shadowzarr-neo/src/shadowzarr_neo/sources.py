"""Where the samples of one NEO stream are, for one block and segment, in three shapes.

These are the shapes the formats take, each of which a VirtualArray constructor describes:

* :class:`Rows`: sample ``t`` is a row of ``row_bytes`` at ``offset + t * row_bytes``, holding
  after ``skip`` bytes items of which the stream keeps ``columns`` (interleaved binary files,
  packets with a header).
* :class:`ChannelRuns`: each channel's samples are stored together, channel ``c`` at
  ``offsets[c]`` of ``paths[c]`` (files stored channel by channel, one file per channel).
* :class:`RecordBlocks`: record ``r`` at ``offset + r * record_size`` holds ``block`` samples
  of every channel, channel ``c``'s at ``channel_offsets[c]`` within the record (Intan's
  traditional files, EDF, Open Ephys's legacy records).
* :class:`Chunks`: an uncompressed chunked HDF5 dataset, chunk by chunk.
* :class:`Hdf5Dataset`: a time-by-channel (or flat, frame after frame) HDF5 dataset in any
  storage the HDF5 generator references (contiguous, chunked, compressed), its first
  ``n_samples`` frames.
* :class:`Stacked`: any of these side by side, as when each channel has a file of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ChannelRuns",
    "Chunks",
    "Hdf5Dataset",
    "RecordBlocks",
    "Rows",
    "Stacked",
    "StreamSource",
]


@dataclass(frozen=True, slots=True)
class Rows:
    path: str
    offset: int
    dtype: np.dtype
    n_samples: int
    row_bytes: int
    columns: tuple[int, ...]
    """Item indices (in units of ``dtype``, counted from ``skip``) kept from each row, in the
    stream's channel order."""
    skip: int = 0
    """Bytes of each row before its first item (a packet header)."""

    @property
    def n_channels(self) -> int:
        return len(self.columns)


@dataclass(frozen=True, slots=True)
class ChannelRuns:
    paths: tuple[str, ...]
    offsets: tuple[int, ...]
    dtype: np.dtype
    n_samples: int

    @property
    def n_channels(self) -> int:
        return len(self.offsets)


@dataclass(frozen=True, slots=True)
class RecordBlocks:
    path: str
    offset: int
    dtype: np.dtype
    n_samples: int
    record_size: int
    block: int
    channel_offsets: tuple[int, ...]
    """Byte offset of each channel's ``block`` samples inside a record."""

    @property
    def n_channels(self) -> int:
        return len(self.channel_offsets)

    @property
    def channels_back_to_back(self) -> bool:
        """True when the channels' blocks follow each other in order: one channels-by-samples
        block per record."""
        step = self.block * self.dtype.itemsize
        first = self.channel_offsets[0]
        return all(o == first + i * step for i, o in enumerate(self.channel_offsets))


@dataclass(frozen=True, slots=True)
class Chunks:
    """An uncompressed chunked array stored as ``stored_shape`` (channels by time when
    ``channel_major``), chunk coordinates mapped to (offset, size) in ``path``."""

    path: str
    dtype: np.dtype
    stored_shape: tuple[int, int]
    chunk_shape: tuple[int, int]
    channel_major: bool
    chunks: dict[tuple[int, int], tuple[int, int]]

    @property
    def n_samples(self) -> int:
        return self.stored_shape[1] if self.channel_major else self.stored_shape[0]


@dataclass(frozen=True, slots=True)
class Hdf5Dataset:
    """Frames ``[0, n_samples)`` of the dataset ``name`` of the HDF5 file ``path``, every
    channel; where its chunks are, and how they are encoded, the HDF5 generator says."""

    path: str
    name: str
    n_samples: int
    n_channels: int
    flat: bool = False
    """The dataset is one-dimensional: the ``n_channels`` values of a frame, frame after frame
    (otherwise it is frames by channels)."""


@dataclass(frozen=True, slots=True)
class Stacked:
    """Layouts of the same length side by side: one file per channel, each with its records."""

    parts: tuple[Rows | ChannelRuns | RecordBlocks | Chunks, ...]

    @property
    def n_samples(self) -> int:
        return self.parts[0].n_samples


type Layout = Rows | ChannelRuns | RecordBlocks | Chunks | Hdf5Dataset | Stacked


@dataclass(frozen=True, slots=True)
class StreamSource:
    """One stream of one segment: its layout and what NEO says about it."""

    stream_id: str
    block_index: int
    segment_index: int
    layout: Layout
    attributes: dict[str, Any] = field(default_factory=dict)
