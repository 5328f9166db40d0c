"""Where a NEO signal buffer's samples are: NEO's buffer descriptions, normalised once.

NEO ≥ 0.14 describes the buffers of its memory-mapped and HDF5 readers
(``get_analogsignal_buffer_description``). Everything after this module works on the frozen
layouts below and never asks NEO's dictionaries again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec.errors import NotVirtualizable

if TYPE_CHECKING:
    from neo.rawio.baserawio import BaseRawIO

__all__ = ["ChunkedLayout", "ContiguousLayout", "buffer_layout"]


@dataclass(frozen=True, slots=True)
class ContiguousLayout:
    """``n_samples`` × ``n_channels`` values stored in one piece at ``offset`` of ``path``.

    ``channel_major`` is True when each channel's samples are stored together (BrainVision
    ``VECTORIZED``, a channels-by-time HDF5 dataset), False when samples are interleaved.
    """

    path: str
    offset: int
    dtype: np.dtype
    n_samples: int
    n_channels: int
    channel_major: bool = False

    @property
    def row_bytes(self) -> int:
        """Bytes of one sample of every channel (interleaved) or one channel (channel major)."""
        count = self.n_samples if self.channel_major else self.n_channels
        return count * self.dtype.itemsize


@dataclass(frozen=True, slots=True)
class ChunkedLayout:
    """An uncompressed chunked HDF5 dataset: ``chunks`` maps a chunk's (time, channel) grid
    coordinates to its (offset, size) in ``path``; ``chunk_shape`` is (time, channel)."""

    path: str
    dtype: np.dtype
    n_samples: int
    n_channels: int
    chunk_shape: tuple[int, int]
    channel_major: bool
    chunks: dict[tuple[int, int], tuple[int, int]]


type Layout = ContiguousLayout | ChunkedLayout


def buffer_layout(reader: BaseRawIO, block: int, segment: int, buffer_id: str) -> Layout:
    """The layout of one buffer of one segment, or NotVirtualizable saying why there is none."""
    if not reader.has_buffer_description_api():
        raise NotVirtualizable(
            f"{type(reader).__name__} does not describe where its signals are stored"
        )
    description = reader.get_analogsignal_buffer_description(block, segment, buffer_id)
    kind = description["type"]
    time_axis = int(description.get("time_axis", 0))
    shape = tuple(int(n) for n in description["shape"])
    n_samples, n_channels = shape if time_axis == 0 else shape[::-1]
    if kind == "raw":
        if description.get("order", "C") != "C":
            raise NotVirtualizable(f"buffer {buffer_id!r} is not stored in C order")
        return ContiguousLayout(
            path=os.fspath(description["file_path"]),
            offset=int(description["file_offset"]),
            dtype=np.dtype(description["dtype"]),
            n_samples=n_samples,
            n_channels=n_channels,
            channel_major=time_axis == 1,
        )
    if kind == "hdf5":
        return _hdf5_layout(description, n_samples, n_channels, time_axis == 1)
    raise NotVirtualizable(f"buffer {buffer_id!r} is of an unknown kind {kind!r}")


def _hdf5_layout(
    description: dict[str, Any], n_samples: int, n_channels: int, channel_major: bool
) -> Layout:
    import h5py

    path = os.fspath(description["file_path"])
    with h5py.File(path, "r") as f:
        dataset = f[description["hdf5_path"]]
        name = f"{path}:{dataset.name}"
        plist = dataset.id.get_create_plist()
        if plist.get_nfilters():
            filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
            raise NotVirtualizable(
                f"{name} is compressed with HDF5 filters {filters}, which have no Zarr codec "
                "(MaxWell's own compression); only uncompressed files can be referenced"
            )
        dtype = dataset.dtype
        if dataset.chunks is None:
            offset = dataset.id.get_offset()
            if offset is None:
                raise NotVirtualizable(f"{name} has no stored data")
            return ContiguousLayout(path, int(offset), dtype, n_samples, n_channels, channel_major)
        stored_chunk = tuple(int(c) for c in dataset.chunks)
        chunks: dict[tuple[int, int], tuple[int, int]] = {}
        for i in range(dataset.id.get_num_chunks()):
            info = dataset.id.get_chunk_info(i)
            row, column = (
                int(o) // c for o, c in zip(info.chunk_offset, stored_chunk, strict=True)
            )
            chunks[(column, row) if channel_major else (row, column)] = (
                int(info.byte_offset),
                int(info.size),
            )
    chunk_shape = stored_chunk[::-1] if channel_major else stored_chunk
    return ChunkedLayout(
        path, dtype, n_samples, n_channels, (chunk_shape[0], chunk_shape[1]), channel_major, chunks
    )
