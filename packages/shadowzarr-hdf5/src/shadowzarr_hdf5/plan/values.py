"""Every value of a small dataset, read whole: from the header reader when it can, else h5py."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

from ..context import Source
from ..header_reader.dataset import HeaderDataset

__all__ = ["as_storage", "read_values", "read_whole"]


def read_whole(dataset: h5py.Dataset) -> Any:
    """``dataset[()]`` through the low-level read (h5py's selection machinery costs more than
    the read itself for the small datasets that are inlined)."""
    dtype = dataset.dtype
    shape = dataset.shape
    if shape is None or dtype.subdtype is not None:
        return dataset[()]
    values = np.zeros(shape, dtype=dtype)
    dataset.id.read(h5py.h5s.ALL, h5py.h5s.ALL, values, mtype=h5py.h5t.py_create(dtype))
    return values


def read_values(dataset: h5py.Dataset | HeaderDataset, source: Source) -> Any:
    """Every value of a small dataset: from the header reader when it can, else h5py."""
    if isinstance(dataset, HeaderDataset):
        values = dataset.read_whole(lambda address: source.paths.at_address(address) is not None)
        if values is not None:
            return values
        dataset = dataset.h5py()
    return read_whole(dataset)


def as_storage(values: Any, storage: np.dtype) -> np.ndarray:
    """Values read by h5py in the array's stored type (records as raw bytes: a view)."""
    array = np.asarray(values)
    if storage.kind == "V" and storage.names is None and array.dtype.names is not None:
        return np.ascontiguousarray(array).view(storage)
    return array.astype(storage, copy=False)
