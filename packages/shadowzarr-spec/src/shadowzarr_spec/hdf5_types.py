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

Compounds Zarr can name (numbers, fixed-size strings and nested compounds of those) are Zarr
``struct`` arrays, which zarr-python reads as numpy structured arrays with no convention.
:func:`read_native` reads any array as h5py would, whichever of these it is, and
:func:`convention_datasets` lists the arrays of a reference file that need it (generators name
them in a ``ConventionTypeWarning``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from shadowzarr_spec.errors import ReferenceFormatError
from shadowzarr_spec.file_refs import InlineRef
from shadowzarr_spec.json_text import parse_json

if TYPE_CHECKING:
    from shadowzarr_spec.model import ReferenceFileSystem

__all__ = [
    "STRUCTURED_DTYPE_ATTR",
    "VLEN_DTYPE_ATTR",
    "as_sequences",
    "as_structured",
    "convention_datasets",
    "read_native",
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
    if base.kind not in "biuf" or base.names is not None or base.subdtype is not None:
        raise ReferenceFormatError(f"_VLEN_DTYPE {base} is not a number type")
    stored = np.asarray(values, dtype=object)
    out = np.empty(stored.shape, dtype=object)
    for index, item in np.ndenumerate(stored):
        data = _element_bytes(item)
        if len(data) % base.itemsize:
            raise ReferenceFormatError(f"{len(data)} bytes are not {base} values")
        out[index] = np.frombuffer(data, dtype=base).copy()
    return out


def _element_bytes(item: Any) -> bytes:
    """One stored element's bytes; zarr-python wraps a single element in 0-d object arrays, and
    ``bytes()`` of anything but bytes would give its memory, not its value."""
    while isinstance(item, np.ndarray) and item.ndim == 0:
        item = item[()]
    if not isinstance(item, bytes | np.bytes_):
        raise ReferenceFormatError(f"a sequence stored as {type(item).__name__}, not bytes")
    return bytes(item)


def read_native(array: Any, selection: Any = Ellipsis) -> Any:
    """``array[selection]`` (a zarr array, or anything indexed the same way with ``attrs``) as
    h5py reads it: raw records as their structured dtype, sequences as an object array of numpy
    arrays (one sequence alone for a scalar), any other array unchanged."""
    attributes = array.attrs
    values = array[selection]
    if STRUCTURED_DTYPE_ATTR in attributes:
        return as_structured(values, attributes)
    if VLEN_DTYPE_ATTR in attributes:
        sequences = as_sequences(values, attributes)
        return sequences[()] if sequences.ndim == 0 else sequences
    return values


def convention_datasets(rfs: ReferenceFileSystem) -> dict[str, str]:
    """Path → convention attribute (``_STRUCTURED_DTYPE``, ``_VLEN_DTYPE``) of each array that
    a plain Zarr reader sees as bytes."""
    found: dict[str, str] = {}
    for key, ref in rfs.refs.items():
        if not (key == "zarr.json" or key.endswith("/zarr.json")) or not isinstance(ref, InlineRef):
            continue
        text = bytes(ref.data)
        if b"_STRUCTURED_DTYPE" not in text and b"_VLEN_DTYPE" not in text:
            continue
        document = parse_json(text)
        if not isinstance(document, dict) or document.get("node_type") != "array":
            continue
        attributes = document.get("attributes") or {}
        path = key[: -len("zarr.json")].rstrip("/")
        for name in (STRUCTURED_DTYPE_ATTR, VLEN_DTYPE_ATTR):
            if isinstance(attributes, dict) and name in attributes:
                found[path] = name
    return found
