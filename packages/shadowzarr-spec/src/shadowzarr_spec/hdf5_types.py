"""Two HDF5 types Zarr v3 has no data type for, as the unified convention stores them.

**Compounds with array fields** (pandas' and PyTables' tables, netCDF-4 compounds holding
character arrays): the array is ``raw_bytes`` of the record size, pointing into the file as it
is, and the attribute ``_STRUCTURED_DTYPE`` holds the record layout as numpy's ``dtype.descr``
(JSON lists: ``[name, format]`` or ``[name, format, shape]``, nested lists for nested records,
empty names for padding). :func:`as_structured` views the raw records as that numpy dtype.

**Variable-length sequences of numbers** (PyTables' VLArray, h5py's ``vlen_dtype``): the array is
``variable_length_bytes`` (codec ``vlen-bytes``), each element the sequence's values as bytes of
the numpy type in the attribute ``_VLEN_DTYPE`` (for example ``"<i4"``); :func:`as_sequences`
gives them back as h5py does, an object array of one numpy array per element.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from shadowzarr_spec.errors import ReferenceFormatError

__all__ = [
    "STRUCTURED_DTYPE_ATTR",
    "VLEN_DTYPE_ATTR",
    "as_sequences",
    "as_structured",
    "structured_descr",
    "structured_dtype",
]

STRUCTURED_DTYPE_ATTR: Final = "_STRUCTURED_DTYPE"
VLEN_DTYPE_ATTR: Final = "_VLEN_DTYPE"


def structured_descr(dtype: np.dtype) -> list[Any]:
    """``dtype.descr`` as JSON lists (without numpy metadata, such as h5py's string encoding)."""
    descr: list[Any] = _lists(_plain(dtype).descr)
    return descr


def _plain(dtype: np.dtype) -> np.dtype:
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return np.dtype((_plain(base), shape))
    if dtype.names is None:
        return np.dtype(dtype.str)
    fields: Any = dtype.fields or {}
    return np.dtype(
        {
            "names": list(dtype.names),
            "formats": [_plain(fields[name][0]) for name in dtype.names],
            "offsets": [fields[name][1] for name in dtype.names],
            "itemsize": dtype.itemsize,
        }
    )


def structured_dtype(descr: Any) -> np.dtype:
    """The numpy dtype a ``_STRUCTURED_DTYPE`` attribute describes."""
    try:
        return np.dtype([_field(entry) for entry in descr])
    except (TypeError, ValueError) as exc:
        raise ReferenceFormatError(f"not a record layout: {str(descr)[:80]!r}") from exc


def as_structured(values: Any, attributes: Mapping[str, Any]) -> np.ndarray:
    """Raw records (an array read from a ``raw_bytes`` array) as their structured dtype."""
    dtype = structured_dtype(attributes[STRUCTURED_DTYPE_ATTR])
    raw = np.ascontiguousarray(values)
    if raw.dtype.itemsize != dtype.itemsize:
        raise ReferenceFormatError(
            f"records of {raw.dtype.itemsize} bytes for a layout of {dtype.itemsize}"
        )
    return raw.view(dtype)


def as_sequences(values: Any, attributes: Mapping[str, Any]) -> np.ndarray:
    """An object array of numpy arrays, one per stored element."""
    try:
        base = np.dtype(attributes[VLEN_DTYPE_ATTR])
    except (KeyError, TypeError) as exc:
        raise ReferenceFormatError("no _VLEN_DTYPE attribute") from exc
    stored = np.asarray(values, dtype=object)
    out = np.empty(stored.shape, dtype=object)
    for index, item in np.ndenumerate(stored):
        data = bytes(item)
        if len(data) % base.itemsize:
            raise ReferenceFormatError(f"{len(data)} bytes are not {base} values")
        out[index] = np.frombuffer(data, dtype=base).copy()
    return out


def _lists(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    return value


def _field(entry: Any) -> tuple[Any, ...]:
    name, form = entry[0], entry[1]
    if isinstance(form, list):
        form = [_field(e) for e in form]
    if len(entry) > 2:
        return (name, form, tuple(entry[2]))
    return (name, form)
