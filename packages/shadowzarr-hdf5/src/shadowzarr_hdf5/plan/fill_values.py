"""A dataset's fill value as h5py reads it (including the undefined fill value of old files), as
Zarr stores it, and whether HDF5 reads anything where nothing was written."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import SourceError, UnsupportedFeatureError

from ..header_reader.dataset import HeaderDataset

__all__ = ["fill_is_undefined", "fill_value", "stored_fill"]


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


def fill_value(
    dataset: h5py.Dataset, storage: np.dtype, path: str, *, unwritten: bool = False
) -> Any:
    """The Zarr fill value of a dataset stored as ``storage`` (raw bytes for records).

    ``unwritten``: nothing of the dataset is written. It is refused when its fill value is
    undefined and HDF5 refuses to read it ("dataset doesn't exist, no data can be read"): its
    references would otherwise serve zeros where h5py serves an error. One element read tells,
    without any I/O."""
    unreadable: Exception | None = None
    try:
        fill = dataset.fillvalue
    except (RuntimeError, OSError) as exc:
        fill, unreadable = None, exc
    if unreadable is not None or unwritten:
        opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
        plist = opened.id.get_create_plist()
        undefined = plist.fill_value_defined() == h5py.h5d.FILL_VALUE_UNDEFINED
        if unreadable is not None:
            if not undefined:
                raise unreadable
            fill = np.zeros((), dataset.dtype)[()]  # what h5py reads there: see stored_fill
        if unwritten and undefined:
            try:
                opened[(0,) * opened.ndim]
            except SourceError:
                raise
            except OSError as exc:
                raise UnsupportedFeatureError(
                    f"dataset {path!r}: never written, with an undefined fill value: HDF5 reads "
                    "no values from it"
                ) from exc
    array = np.asarray(fill)
    if array.dtype.names is not None or array.dtype.kind == "V":
        if not array.tobytes().strip(b"\x00"):
            return None
        if array.dtype.names and storage.names:
            return np.asarray(fill).astype(storage)[()]
        return array.tobytes()  # raw records (or opaque values): the stored bytes
    if array.ndim:  # an HDF5 array type's fill is an array: Zarr needs one scalar
        flat = array.ravel()
        if not np.all(flat == flat[0]):
            raise UnsupportedFeatureError(
                f"dataset {path!r}: a fill value that differs along its array type axes"
            )
        return flat[0].item()
    return array.item()
