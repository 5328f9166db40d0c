"""Two HDF5 types Zarr v3 has no data type for, as the unified convention stores them.

**Compounds with array fields** (pandas' and PyTables' tables, netCDF-4 compounds holding
character arrays): the array is ``raw_bytes`` of the record size, pointing into the file as it
is, and the attribute ``_STRUCTURED_DTYPE`` holds the record layout as numpy takes it:
``{"names": [..], "formats": [..], "offsets": [..], "itemsize": n}``, each format a numpy type
string (``"<f8"``, ``"|S1"``), ``[format, shape]`` for an array field, or a nested layout.
:func:`as_structured` views the raw records as that numpy dtype.

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


def structured_descr(dtype: np.dtype) -> dict[str, Any]:
    """The record layout as JSON: ``{"names", "formats", "offsets", "itemsize"}``, each format
    a numpy type string, ``[format, shape]`` for an array field, or a nested layout."""
    fields: Any = dtype.fields or {}
    return {
        "names": list(dtype.names or ()),
        "formats": [_format(fields[name][0]) for name in dtype.names or ()],
        "offsets": [int(fields[name][1]) for name in dtype.names or ()],
        "itemsize": int(dtype.itemsize),
    }


def structured_dtype(layout: Any) -> np.dtype:
    """The numpy dtype a ``_STRUCTURED_DTYPE`` attribute describes."""
    try:
        return np.dtype(
            {
                "names": [str(n) for n in layout["names"]],
                "formats": [_parse_format(f) for f in layout["formats"]],
                "offsets": [int(o) for o in layout["offsets"]],
                "itemsize": int(layout["itemsize"]),
            }
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReferenceFormatError(f"not a record layout: {str(layout)[:80]!r}") from exc


def _format(dtype: np.dtype) -> Any:
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return [_format(base), list(shape)]
    if dtype.names is not None:
        return structured_descr(dtype)
    return np.dtype(dtype.str).str  # without numpy metadata (h5py's string encoding)


def _parse_format(form: Any) -> Any:
    if isinstance(form, dict):
        return structured_dtype(form)
    if isinstance(form, list):
        return (_parse_format(form[0]), tuple(int(n) for n in form[1]))
    return np.dtype(str(form))


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
