"""Index expressions turned into one operation per axis, with numpy's meaning.

Every axis gets a :class:`Take` (a slice or a list of indices: a range or an int64 array) or a
:class:`Pick` (an integer, which drops the axis). What numpy would do differently from applying
these axis by axis (several lists, lists with separated integers) is refused here, so that a
virtual array always holds what the same expression gives on the numpy array.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from types import EllipsisType
from typing import Any

import numpy as np

from shadowzarr_spec.errors import NotVirtualizable

__all__ = ["NeedsDataError", "Pick", "Take", "normalize_index"]


class NeedsDataError(NotVirtualizable, IndexError):
    """An index that is valid for numpy but needs the array's values (or a copy of them) to
    apply, because the bytes it selects are not whole chunks or whole records."""


@dataclass(frozen=True, slots=True)
class Take:
    """Keep ``indices`` (in order) along ``axis``; ``full`` when that is the whole axis."""

    axis: int
    indices: range | np.ndarray

    @property
    def is_slice(self) -> bool:
        return isinstance(self.indices, range)

    def full(self, extent: int) -> bool:
        return isinstance(self.indices, range) and self.indices == range(extent)


@dataclass(frozen=True, slots=True)
class Pick:
    """Keep index ``index`` along ``axis`` and drop the axis."""

    axis: int
    index: int


def normalize_index(key: Any, shape: tuple[int, ...]) -> list[Take | Pick]:
    """One operation per axis (in axis order) for ``array[key]``; raises IndexError like numpy."""
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(1 for item in items if isinstance(item, EllipsisType)) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(item is None for item in items):
        raise IndexError("np.newaxis / None is not supported by virtual arrays")
    explicit = sum(
        1 for item in items if not isinstance(item, EllipsisType) and not _is_bool_array(item)
    ) + sum(np.ndim(item) for item in items if _is_bool_array(item))
    if explicit > len(shape):
        raise IndexError(
            f"too many indices for an array of {len(shape)} dimensions: {explicit} were given"
        )
    expanded: list[Any] = []
    for item in items:
        if isinstance(item, EllipsisType):
            expanded.extend([slice(None)] * (len(shape) - explicit))
        else:
            expanded.append(item)
    expanded.extend([slice(None)] * (len(shape) - len(expanded)))
    operations = [_axis_operation(item, axis, shape[axis]) for axis, item in enumerate(expanded)]
    _check_numpy_order(operations)
    return operations


def _is_bool_array(item: Any) -> bool:
    return isinstance(item, np.ndarray | list) and np.asarray(item).dtype == np.bool_


def _axis_operation(item: Any, axis: int, extent: int) -> Take | Pick:
    if isinstance(item, slice):
        return Take(axis, range(*item.indices(extent)))
    if isinstance(item, bool | np.bool_):
        raise IndexError("a boolean scalar is not a valid index for a virtual array")
    if isinstance(item, int | np.integer):
        index = int(item)
        if not -extent <= index < extent:
            raise IndexError(f"index {index} is out of bounds for axis {axis} with size {extent}")
        return Pick(axis, index % extent)
    if isinstance(item, list | tuple | np.ndarray | range):
        values = np.asarray(item)
        if values.ndim != 1:
            raise IndexError(
                f"axis {axis}: only one-dimensional lists of indices are supported, got shape "
                f"{values.shape}"
            )
        if values.dtype == np.bool_:
            if values.size != extent:
                raise IndexError(
                    f"boolean index of length {values.size} does not match axis {axis} of "
                    f"size {extent}"
                )
            return Take(axis, np.flatnonzero(values).astype(np.int64))
        if values.size == 0:
            return Take(axis, np.zeros(0, dtype=np.int64))
        if values.dtype.kind not in "iu":
            raise IndexError(f"axis {axis}: indices must be integers, got {values.dtype}")
        indices = values.astype(np.int64)
        bad = (indices < -extent) | (indices >= extent)
        if bad.any():
            raise IndexError(
                f"index {int(indices[bad][0])} is out of bounds for axis {axis} with size {extent}"
            )
        return Take(axis, indices % max(extent, 1))
    try:
        index = operator.index(item)
    except TypeError:
        raise IndexError(
            f"{type(item).__name__} is not a valid index (integers, slices, ellipsis and "
            "lists of integers or booleans are)"
        ) from None
    return _axis_operation(index, axis, extent)


def _check_numpy_order(operations: list[Take | Pick]) -> None:
    """Refuse what numpy's fancy indexing would give another shape than axis-by-axis indexing."""
    lists = [op.axis for op in operations if isinstance(op, Take) and not op.is_slice]
    if len(lists) > 1:
        raise IndexError(
            "virtual arrays take at most one list of indices per expression: numpy pairs the "
            "elements of several lists instead of taking each; index one axis at a time"
        )
    if not lists:
        return
    advanced = sorted([*lists, *(op.axis for op in operations if isinstance(op, Pick))])
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    kept_before = sum(1 for op in operations[: lists[0]] if isinstance(op, Take))
    if not adjacent and kept_before:
        raise IndexError(
            "a list of indices with integers on axes that are not next to it moves the list's "
            "axis to the front in numpy; index in two steps instead"
        )
