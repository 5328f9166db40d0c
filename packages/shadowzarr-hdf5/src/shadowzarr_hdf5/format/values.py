"""Stored element bytes → the values h5py reads: numbers, fixed and variable strings, addresses."""

from __future__ import annotations

import math
import struct

import numpy as np

from .binary import uint
from .datatypes import Datatype, DatatypeKind
from .errors import NotNative
from .heaps import GlobalHeap

__all__ = ["decode_elements"]


def decode_elements(
    data: bytes, datatype: Datatype, shape: tuple[int, ...], heap: GlobalHeap, offset_size: int
) -> np.ndarray:
    """The elements as h5py's low-level read gives them: numbers and fixed strings in their
    numpy type, variable strings as an object array of bytes, references as uint64 addresses."""
    count = math.prod(shape)
    if len(data) < count * datatype.size:
        raise NotNative(f"{count} elements need {count * datatype.size} bytes, found {len(data)}")
    if datatype.kind is DatatypeKind.NUMBER:
        return np.frombuffer(data, datatype.dtype, count).reshape(shape)
    if datatype.kind is DatatypeKind.FIXED_STRING:
        values = np.frombuffer(data, datatype.dtype, count).reshape(shape)
        if datatype.null_terminated:
            return _cut_at_null(values)
        return values
    if datatype.kind is DatatypeKind.REFERENCE:
        raw = np.frombuffer(data, np.uint8, count * offset_size).reshape(count, offset_size)
        weights = np.uint64(1) << (np.uint64(8) * np.arange(offset_size, dtype=np.uint64))
        return (raw.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64).reshape(shape)
    return _vlen_strings(data, count, shape, heap, offset_size)


def _cut_at_null(values: np.ndarray) -> np.ndarray:
    """HDF5 stops a null-terminated string at its first null; a string that fills its width
    without one is read differently by HDF5 versions, so h5py decides."""
    cut = []
    for raw in values.ravel().tolist():
        end = raw.find(b"\x00")
        if end < 0 and len(raw) == values.dtype.itemsize:
            raise NotNative("null-terminated string without a null")
        cut.append(raw if end < 0 else raw[:end])
    return np.array(cut, dtype=values.dtype).reshape(values.shape)


_VLEN_ELEMENT = struct.Struct("<IQI")
"""A variable-length element with 8-byte addresses: length, heap collection, object index."""


def _vlen_strings(
    data: bytes, count: int, shape: tuple[int, ...], heap: GlobalHeap, offset_size: int
) -> np.ndarray:
    step = 8 + offset_size
    out = np.empty(count, dtype=object)
    if offset_size == 8:
        elements = _VLEN_ELEMENT.iter_unpack(data[: count * step])
    else:
        elements = (
            (uint(data, p, 4), uint(data, p + 4, offset_size), uint(data, p + 4 + offset_size, 4))
            for p in range(0, count * step, step)
        )
    for i, (length, collection, index) in enumerate(elements):
        if length == 0:
            out[i] = b""
            continue
        stored = heap.get(collection, index)
        if len(stored) < length:
            raise NotNative(f"string of {length} bytes stored in {len(stored)}")
        # h5py turns HDF5's C string into bytes: an embedded null ends it.
        out[i] = stored[:length].split(b"\x00", 1)[0]
    return out.reshape(shape)
