"""3Brain BioCam (HDF5): frames of every channel, flat or two-dimensional."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.sources import Chunks, Rows

if TYPE_CHECKING:
    from shadowzarr_neo.formats import Outcome

__all__ = ["stream_layout"]


def stream_layout(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    from neo.rawio import biocamrawio

    read = reader._read_function
    if read in (biocamrawio.readHDF5t_100_i, biocamrawio.readHDF5t_101_i):
        return NotVirtualizable("this BioCam file stores inverted values, which NEO turns back")
    if read is biocamrawio.readHDF5t_brw4_sparse:
        return NotVirtualizable("this BioCam file stores only events, which NEO fills in")
    handle = reader._filehandle
    if read is biocamrawio.readHDF5t_brw4:
        dataset = next(handle[key]["Raw"] for key in handle if key.startswith("Well_"))
    else:
        dataset = handle["3BData/Raw"]
    n_frames, n_channels = int(reader._num_frames), int(reader._num_channels)
    return _hdf5_frames(dataset, n_frames, n_channels)


def _hdf5_frames(dataset: Any, n_frames: int, n_channels: int) -> Outcome:
    """An HDF5 dataset of frames by channels, flat or two-dimensional, uncompressed."""
    name = f"{dataset.file.filename}:{dataset.name}"
    plist = dataset.id.get_create_plist()
    if plist.get_nfilters():
        return NotVirtualizable(f"{name} is compressed; only uncompressed datasets are referenced")
    path = os.fspath(dataset.file.filename)
    dtype = dataset.dtype
    if dataset.chunks is None:
        offset = dataset.id.get_offset()
        if offset is None:
            return NotVirtualizable(f"{name} has no stored data")
        return Rows(
            path,
            int(offset),
            dtype,
            n_frames,
            n_channels * dtype.itemsize,
            tuple(range(n_channels)),
        )
    stored = tuple(int(c) for c in dataset.chunks)
    if len(stored) == 1:
        if stored[0] % n_channels:
            return NotVirtualizable(f"{name}: its chunks do not hold whole frames")
        chunk_shape = (stored[0] // n_channels, n_channels)
    else:
        chunk_shape = (stored[0], stored[1])
    chunks = {}
    for i in range(dataset.id.get_num_chunks()):
        info = dataset.id.get_chunk_info(i)
        row = int(info.chunk_offset[0]) // stored[0]
        column = int(info.chunk_offset[1]) // stored[1] if len(stored) == 2 else 0
        chunks[(row, column)] = (int(info.byte_offset), int(info.size))
    return Chunks(path, dtype, (n_frames, n_channels), chunk_shape, False, chunks)
