"""assert_array_equal_exact: dtype, shape and bits, with messages naming what differs."""

from __future__ import annotations

import numpy as np
import pytest

from shadowzarr_testing import assert_array_equal_exact


def test_equal_arrays_pass() -> None:
    values = np.arange(12, dtype="<i4").reshape(3, 4)
    assert_array_equal_exact(values.copy(), values, "ints")
    floats = np.array([1.5, np.nan, -0.0, np.inf])
    assert_array_equal_exact(floats.copy(), floats, "floats")
    assert_array_equal_exact(np.float32(np.nan), np.float32(np.nan), "scalar")


def test_dtype_mismatch_names_what() -> None:
    with pytest.raises(AssertionError, match=r"dataset /a: dtype .*int64.* expected .*int32"):
        assert_array_equal_exact(np.zeros(3, "i8"), np.zeros(3, "i4"), "dataset /a")
    with pytest.raises(AssertionError, match="dtype"):
        assert_array_equal_exact(np.zeros(3, ">i4"), np.zeros(3, "<i4"), "endianness")


def test_shape_mismatch() -> None:
    with pytest.raises(AssertionError, match=r"x: shape \(3,\) differs from expected \(1, 3\)"):
        assert_array_equal_exact(np.zeros(3), np.zeros((1, 3)), "x")


def test_value_mismatch_reports_first_index() -> None:
    expected = np.arange(6).reshape(2, 3)
    actual = expected.copy()
    actual[1, 2] = 99
    with pytest.raises(AssertionError, match=r"v: 1 of 6 values differ; first at index \(1, 2\)"):
        assert_array_equal_exact(actual, expected, "v")


def test_float_bits_versus_values() -> None:
    with pytest.raises(AssertionError, match="values differ"):
        assert_array_equal_exact(np.array([0.0]), np.array([-0.0]), "signed zero")
    with pytest.raises(AssertionError, match="values differ"):
        assert_array_equal_exact(np.array([np.nan]), np.array([1.0]), "nan")
    other_nan = np.array([0x7FF8000000000001], dtype="<u8").view("<f8")
    with pytest.raises(AssertionError, match="values differ"):
        assert_array_equal_exact(other_nan, np.array([np.nan]), "payload")
    assert_array_equal_exact(other_nan, np.array([np.nan]), "payload", bitwise=False)
    assert_array_equal_exact(np.array([0.0]), np.array([-0.0]), "zero", bitwise=False)


def test_complex_and_datetime() -> None:
    complex_values = np.array([1 + 2j, complex(np.nan, 1)])
    assert_array_equal_exact(complex_values.copy(), complex_values, "complex")
    times = np.array(["2024-01-01", "NaT"], dtype="datetime64[s]")
    assert_array_equal_exact(times.copy(), times, "times")
    with pytest.raises(AssertionError):
        assert_array_equal_exact(times[::-1].copy(), times, "times")


def test_structured_dtype_names_the_field() -> None:
    dtype = np.dtype([("id", "<i4"), ("value", "<f8"), ("pos", "<f4", (2,))])
    expected = np.zeros(3, dtype)
    expected["value"] = [1.0, np.nan, 3.0]
    assert_array_equal_exact(expected.copy(), expected, "table")
    actual = expected.copy()
    actual["value"][2] = 4.0
    with pytest.raises(AssertionError, match=r"table\['value'\]: 1 of 3"):
        assert_array_equal_exact(actual, expected, "table")
    actual = expected.copy()
    actual["pos"][0, 1] = 1.0
    with pytest.raises(AssertionError, match=r"table\['pos'\]"):
        assert_array_equal_exact(actual, expected, "table")


def test_strings_and_objects() -> None:
    fixed = np.array([b"ab", b"c"], dtype="S2")
    assert_array_equal_exact(fixed.copy(), fixed, "bytes")
    with pytest.raises(AssertionError):
        assert_array_equal_exact(np.array([b"ab", b"d"], dtype="S2"), fixed, "bytes")
    variable = np.array(["a", "bcd"], dtype=object)
    assert_array_equal_exact(variable.copy(), variable, "vlen")
    with pytest.raises(AssertionError, match="vlen: values differ"):
        assert_array_equal_exact(np.array([b"a", b"bcd"], dtype=object), variable, "vlen")
