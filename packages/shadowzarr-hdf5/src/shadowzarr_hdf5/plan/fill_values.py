"""A dataset's fill value as h5py reads it, including the undefined fill value of old files."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

from ..header_reader.dataset import HeaderDataset

__all__ = ["fill_is_undefined", "stored_fill"]


def stored_fill(dataset: h5py.Dataset | HeaderDataset) -> Any:
    """``dataset.fillvalue``, or zero when the file leaves the fill value undefined (HDF5 1.6
    era files): HDF5 then writes nothing into a read's buffer for unwritten elements, and h5py
    reads into a zeroed buffer, so h5py reads zeros there."""
    try:
        return dataset.fillvalue
    except (RuntimeError, OSError):
        if not fill_is_undefined(dataset):
            raise
        return np.zeros((), dataset.dtype)[()]


def fill_is_undefined(dataset: h5py.Dataset | HeaderDataset) -> bool:
    """Whether the file leaves the dataset's fill value undefined (asks h5py)."""
    opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
    return bool(opened.id.get_create_plist().fill_value_defined() == h5py.h5d.FILL_VALUE_UNDEFINED)
