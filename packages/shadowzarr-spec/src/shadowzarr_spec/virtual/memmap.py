"""Virtual arrays from numpy memory maps: the file offset of every element of a view.

A view of a ``numpy.memmap`` (slices, field selections, transposes, reshapes) still points into
the mapped file, and its data address, strides and dtype say where each element is. The root
memmap's address is at file offset ``offset``, so ``file offset = offset + (address - root)``.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

import numpy as np

from shadowzarr_spec.errors import NotVirtualizable
from shadowzarr_spec.virtual.strided import StridedBytes, default_chunk_rows

__all__ = ["MemmapView", "memmap_view"]


@dataclass(frozen=True, slots=True)
class MemmapView:
    """How `VirtualArray.from_memmap` builds the array a memmap view shows (this module names
    no VirtualArray, so the two do not import each other)."""

    url: str
    shape: tuple[int, ...]
    dtype: np.dtype
    strided: StridedBytes | None
    """Evenly spaced records; None: an empty array, contiguous at ``offset``."""
    offset: int = 0
    first_only: bool = False
    """A 0-d view: element 0 of the one-record array ``strided`` describes."""
    axes: tuple[int, ...] | None = None
    """Transpose the records' array by these axes (rows were found along another axis)."""


def memmap_view(array: np.ndarray, url: str | None) -> MemmapView:
    root = _root_memmap(array)
    if url is None:
        if root.filename is None:
            raise NotVirtualizable("this memmap maps no named file; pass url=")
        url = os.fspath(root.filename)
    address = array.__array_interface__["data"][0]
    root_address = root.__array_interface__["data"][0]
    first = int(root.offset) + (address - root_address)
    dtype, item_ranges = _packed(array.dtype)
    if array.ndim == 0:
        size = array.dtype.itemsize
        one = StridedBytes(url, first, size, 1, (), item_ranges, first + size, 1)
        return MemmapView(url, (1,), dtype, one, first_only=True)
    if array.size == 0:
        return MemmapView(url, array.shape, dtype, None, offset=first)
    rows = _strided(url, array, first, item_ranges, root)
    if rows is not None:
        return MemmapView(url, array.shape, dtype, rows)
    # Rows along another axis (a transposed view): describe that order, transpose back.
    for axis in np.argsort([-abs(s) for s in array.strides], kind="stable"):
        axis = int(axis)
        if axis == 0 or array.strides[axis] <= 0:
            continue
        order = [axis, *(a for a in range(array.ndim) if a != axis)]
        rows = _strided(url, array.transpose(order), first, item_ranges, root)
        if rows is not None:
            axes = tuple(int(a) for a in np.argsort(order))
            return MemmapView(url, rows.shape, dtype, rows, axes=axes)
    raise NotVirtualizable(
        f"the view of shape {array.shape} with strides {array.strides} has no axis along which "
        "its elements form evenly spaced records (a negative or zero first stride, or rows "
        "that overlap)"
    )


def _root_memmap(array: np.ndarray) -> np.memmap:
    """The memmap that owns the mapping: the one whose base is the ``mmap`` object."""
    node: object = array
    while isinstance(node, np.ndarray):
        if isinstance(node, np.memmap) and isinstance(node.base, mmap.mmap):
            return node
        node = node.base
    raise NotVirtualizable(
        f"a {type(array).__name__} that is not a view of a numpy.memmap holds data in memory, "
        "not at a place in a file"
    )


def _packed(dtype: np.dtype) -> tuple[np.dtype, tuple[tuple[int, int], ...]]:
    """The dtype the array's values have without gaps, and where an element's bytes are."""
    if dtype.names is None:
        return dtype, ((0, dtype.itemsize),)
    fields = [(name, *dtype.fields[name][:2]) for name in dtype.names]  # type: ignore[index]
    packed = np.dtype([(name, field_dtype) for name, field_dtype, _ in fields])
    ranges = tuple((offset, offset + field_dtype.itemsize) for _, field_dtype, offset in fields)
    if packed == dtype:
        return dtype, ((0, dtype.itemsize),)
    return packed, ranges


def _strided(
    url: str,
    array: np.ndarray,
    first: int,
    item_ranges: tuple[tuple[int, int], ...],
    root: np.memmap,
) -> StridedBytes | None:
    """Rows along the first axis, records within the mapped region (which the file holds)."""
    row_stride = int(array.strides[0])
    if row_stride <= 0:
        return None
    positions = tuple(
        np.arange(extent, dtype=np.int64) * stride
        for extent, stride in zip(array.shape[1:], array.strides[1:], strict=True)
    )
    rows = StridedBytes(
        url=url,
        first=first,
        row_stride=row_stride,
        n_rows=int(array.shape[0]),
        positions=positions,
        item_ranges=item_ranges,
        upper=int(root.offset) + root.nbytes,
        chunk_rows=default_chunk_rows(int(array.shape[0]), row_stride),
    )
    try:
        rows.records()
    except NotVirtualizable:
        return None
    return rows
