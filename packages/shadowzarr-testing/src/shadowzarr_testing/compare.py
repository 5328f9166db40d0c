"""Bit-exact array comparison for tests that check our reads against the native readers."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["assert_array_equal_exact"]


def assert_array_equal_exact(
    actual: Any, expected: Any, what: str = "array", *, bitwise: bool = True
) -> None:
    """Assert same dtype, same shape and the same values, bit for bit.

    Floats compare NaN-aware and by raw bytes, so ``-0.0`` differs from ``0.0`` and a NaN
    payload change is caught; structured dtypes compare field by field so the message names the
    field. ``what`` names the compared thing in the failure message. ``bitwise=False`` compares
    floats by value instead (NaN equals NaN whatever its payload, ``-0.0`` equals ``0.0``).
    """
    actual_array = np.asarray(actual)
    expected_array = np.asarray(expected)
    if actual_array.dtype != expected_array.dtype:
        raise AssertionError(
            f"{what}: dtype {actual_array.dtype!r} differs from expected {expected_array.dtype!r}"
        )
    if actual_array.shape != expected_array.shape:
        raise AssertionError(
            f"{what}: shape {actual_array.shape} differs from expected {expected_array.shape}"
        )
    _compare_values(actual_array, expected_array, what, bitwise)


def _compare_values(actual: np.ndarray, expected: np.ndarray, what: str, bitwise: bool) -> None:
    dtype = expected.dtype
    if dtype.names is not None:
        for name in dtype.names:
            _compare_values(actual[name], expected[name], f"{what}[{name!r}]", bitwise)
        return
    if dtype.subdtype is not None or dtype.kind == "O":
        equal = _object_equal(actual, expected) if dtype.kind == "O" else None
        if equal is None:
            equal = np.array_equal(actual, expected)
        if not equal:
            raise AssertionError(
                f"{what}: values differ\nactual:   {actual!r}\nexpected: {expected!r}"
            )
        return
    if dtype.kind in "fc" and not bitwise:
        same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
    elif dtype.kind in "fcmM":
        same = _same_bits(actual, expected)
    else:
        same = actual == expected
    if not np.all(same):
        mismatches = np.argwhere(~np.asarray(same))
        first = tuple(int(i) for i in mismatches[0]) if mismatches.size else ()
        raise AssertionError(
            f"{what}: {len(mismatches)} of {expected.size} values differ; first at index "
            f"{first}: actual {actual[first]!r}, expected {expected[first]!r}"
        )


def _same_bits(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element-wise: identical bit patterns (so NaN == NaN with the same payload, -0.0 != 0.0)."""
    itemsize = expected.dtype.itemsize
    actual_bytes = np.ascontiguousarray(actual).reshape(-1).view(np.uint8).reshape(-1, itemsize)
    expected_bytes = np.ascontiguousarray(expected).reshape(-1).view(np.uint8).reshape(-1, itemsize)
    return np.all(actual_bytes == expected_bytes, axis=1).reshape(expected.shape)


def _object_equal(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Object arrays (variable-length strings): element-wise ``==`` with type checking."""
    for left, right in zip(actual.flat, expected.flat, strict=True):
        if type(left) is not type(right) or left != right:
            return False
    return True
