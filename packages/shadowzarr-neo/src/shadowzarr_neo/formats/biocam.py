"""3Brain BioCam (HDF5): frames of every channel, flat or two-dimensional.

A contiguous dataset is rows of the file; a chunked one (compressed or not) is referenced as the
HDF5 generator references it, its flat chunks read as blocks of whole frames.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.sources import Hdf5Dataset, Rows

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
    """An HDF5 dataset of frames by channels, flat or two-dimensional."""
    name = f"{dataset.file.filename}:{dataset.name}"
    path = os.fspath(dataset.file.filename)
    flat = dataset.ndim == 1
    if dataset.ndim == 2 and int(dataset.shape[1]) != n_channels:
        return NotVirtualizable(f"{name} has {dataset.shape[1]} columns for {n_channels} channels")
    stored_frames = int(dataset.shape[0]) // n_channels if flat else int(dataset.shape[0])
    if stored_frames < n_frames:
        return NotVirtualizable(f"{name} holds {stored_frames} frames, NEO reads {n_frames}")
    if dataset.chunks is not None:
        return Hdf5Dataset(path, dataset.name, n_frames, n_channels, flat=flat)
    offset = dataset.id.get_offset()
    if offset is None:
        return NotVirtualizable(f"{name} has no stored data")
    dtype = dataset.dtype
    return Rows(
        path, int(offset), dtype, n_frames, n_channels * dtype.itemsize, tuple(range(n_channels))
    )
