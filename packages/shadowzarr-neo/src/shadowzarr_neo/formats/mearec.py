"""MEArec simulated recordings (HDF5): the ``recordings`` dataset, samples by channels.

NEO reads rows ``[0, int(fs * duration))`` of the dataset MEArec's loader opened, every column,
in whatever storage the file has: the HDF5 generator references it as it is.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.sources import Hdf5Dataset

if TYPE_CHECKING:
    from shadowzarr_neo.formats import Outcome

__all__ = ["stream_layout"]


def stream_layout(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    dataset = reader._recordings
    n_frames, n_channels = int(reader._num_frames), int(reader._num_channels)
    name = f"{dataset.file.filename}:{dataset.name}"
    if dataset.ndim != 2:
        return NotVirtualizable(f"{name} is {dataset.ndim}-dimensional, not samples by channels")
    rows, columns = (int(n) for n in dataset.shape)
    if columns != n_channels:
        return NotVirtualizable(
            f"{name} has {columns} columns for {n_channels} channel positions: NEO reads it "
            "as another layout (a file older than MEArec 1.5 stores channels by samples)"
        )
    if rows < n_frames:
        return NotVirtualizable(f"{name} has {rows} rows, NEO reads {n_frames}")
    return Hdf5Dataset(os.fspath(dataset.file.filename), dataset.name, n_frames, n_channels)
