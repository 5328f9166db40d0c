"""The attribute conventions (Non-Finite, Bytes, Complex, Attribute Types) round-trip every value
and stay valid JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from shadowzarr_spec import ReferenceFormatError
from shadowzarr_spec.attribute_conventions import (
    ATTRIBUTE_TYPES_CONVENTION,
    ATTRIBUTE_TYPES_KEY,
    BYTES_CONVENTION,
    COMPLEX_CONVENTION,
    NON_FINITE_CONVENTION,
    attribute_type,
    decode_attributes,
    encode_attributes,
)

tricky_text = st.sampled_from(
    ["NaN", "Infinity", "-Infinity", "_str_", "_str_NaN", "base64:AA==", "plain", ""]
)
leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    tricky_text,
    st.binary(max_size=8),
)
values = st.recursive(
    leaf,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@given(
    st.dictionaries(
        st.text(max_size=6).filter(lambda k: k != "zarr_conventions"), values, max_size=6
    )
)
def test_round_trip_through_strict_json(attributes: dict[str, Any]) -> None:
    encoded = encode_attributes(attributes)
    text = json.dumps(encoded, allow_nan=False)
    assert same(decode_attributes(json.loads(text)), attributes)


def test_nodes_without_special_values_are_unchanged() -> None:
    attributes = {"a": "NaN", "b": "base64:xyz", "c": [1, 2.5], "d": "_str_q"}
    assert encode_attributes(attributes) == attributes
    assert decode_attributes(attributes) == attributes


def test_strings_are_escaped_and_conventions_registered() -> None:
    encoded = encode_attributes({"resolution": float("nan"), "unit": "NaN", "limit": -np.inf})
    assert encoded["resolution"] == "NaN"
    assert encoded["unit"] == "_str_NaN"
    assert encoded["limit"] == "-Infinity"
    assert [c["uuid"] for c in encoded["zarr_conventions"]] == [NON_FINITE_CONVENTION["uuid"]]
    encoded = encode_attributes({"digest": b"\x00\xff", "text": "base64:AA=="})
    assert encoded == {
        "digest": "base64:AP8=",
        "text": "_str_base64:AA==",
        "zarr_conventions": [BYTES_CONVENTION],
    }


def test_decoding_does_not_depend_on_registration_order() -> None:
    attributes = {"x": float("inf"), "y": b"\x01", "z": "_str__str_"}
    encoded = encode_attributes(attributes)
    encoded["zarr_conventions"].reverse()
    decoded = decode_attributes(encoded)
    assert decoded == {"x": math.inf, "y": b"\x01", "z": "_str__str_"}


def test_numpy_values_become_plain_json() -> None:
    encoded = encode_attributes(
        {"a": np.float32(np.nan), "b": np.arange(3), "c": np.bytes_(b"\xff")}
    )
    assert encoded["a"] == "NaN"
    assert encoded["b"] == [0, 1, 2]
    assert encoded["c"] == "base64:/w=="


def test_other_conventions_are_kept() -> None:
    other = {"uuid": "d35379db-88df-4056-af3a-620245f8e347", "name": "multiscales"}
    encoded = encode_attributes({"zarr_conventions": [other], "v": float("nan")})
    assert encoded["zarr_conventions"][0] == other
    assert decode_attributes(encoded)["zarr_conventions"] == [other]


def test_complex_numbers_stay_complex() -> None:
    from shadowzarr_spec import COMPLEX_CONVENTION

    attributes = {
        "z": 1 + 2j,
        "zs": [0.5 - 1j, complex(float("nan"), float("inf"))],
        "pair": [1.0, 2.0],
        "looks_complex": "complex:1,2",
    }
    encoded = encode_attributes(attributes)
    assert encoded["z"] == "complex:1.0,2.0"
    assert encoded["zs"][1] == "complex:NaN,Infinity"
    assert encoded["pair"] == [1.0, 2.0]
    assert encoded["looks_complex"] == "_str_complex:1,2"
    assert COMPLEX_CONVENTION in encoded["zarr_conventions"]
    json.dumps(encoded, allow_nan=False)
    decoded = decode_attributes(encoded)
    assert decoded["z"] == 1 + 2j
    assert decoded["zs"][0] == 0.5 - 1j
    assert math.isnan(decoded["zs"][1].real)
    assert decoded["zs"][1].imag == math.inf
    assert decoded["pair"] == [1.0, 2.0]
    assert decoded["looks_complex"] == "complex:1,2"


NUMBER_TYPES = st.sampled_from(
    ["|b1", "|i1", "|u1", "<i2", ">u2", "<i4", ">i8", "<u8", "<f2", ">f4", "<f8", "<c8", ">c16"]
)


@given(
    dtype=NUMBER_TYPES,
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
    data=st.data(),
)
def test_numbers_keep_their_type_and_shape_through_strict_json(
    dtype: str, shape: tuple[int, ...], data: st.DataObject
) -> None:
    """What h5py gives (a numpy scalar or array of any width, NaN included) comes back so."""
    value = data.draw(hnp.arrays(np.dtype(dtype), shape))
    stored = value[()] if not shape else value
    attributes = {"v": stored, ATTRIBUTE_TYPES_KEY: {"v": attribute_type(stored)}}
    text = json.dumps(encode_attributes(attributes), allow_nan=False)
    decoded = decode_attributes(json.loads(text))["v"]
    got = np.asarray(decoded)
    assert got.shape == value.shape
    assert got.dtype == value.dtype.newbyteorder("<") or got.dtype == value.dtype
    np.testing.assert_array_equal(got, value)  # NaN equal to NaN (its payload is not kept)
    if not shape:  # a scalar, as h5py gives it (a numpy scalar unless JSON's own type)
        assert not isinstance(decoded, np.ndarray)


def test_only_types_json_loses_are_recorded() -> None:
    """float64 and int64 scalars, and arrays JSON nests as they are, need no record; a float32,
    and an array of one element stored as its element (netCDF's form), do."""
    attributes = {
        "f8": 0.25, "i8": 3, "list": [1.0, 2.0], "f4": np.float32(0.1), "one": 7, "gone": 1,
        ATTRIBUTE_TYPES_KEY: {
            "f8": attribute_type(np.float64(0.25)),
            "i8": attribute_type(np.int64(3)),
            "list": attribute_type(np.array([1.0, 2.0])),
            "f4": attribute_type(np.float32(0.1)),
            "one": attribute_type(np.array([7], ">i8")),
            "missing": attribute_type(np.float32(1)),
        },
    }  # fmt: skip
    encoded = encode_attributes(attributes)
    assert encoded[ATTRIBUTE_TYPES_KEY] == {
        "f4": {"dtype": "<f4", "shape": []},
        "one": {"dtype": "<i8", "shape": [1]},
    }
    assert encoded["f4"] == float(np.float32(0.1))  # the float32's exact value, as JSON
    assert [c["uuid"] for c in encoded["zarr_conventions"]] == [ATTRIBUTE_TYPES_CONVENTION["uuid"]]
    decoded = decode_attributes(encoded)
    assert type(decoded["f4"]) is np.float32
    assert decoded["f4"] == np.float32(0.1)
    assert decoded["one"].tolist() == [7]
    assert type(decoded["f8"]) is float
    assert ATTRIBUTE_TYPES_KEY not in decoded
    assert "zarr_conventions" not in decoded
    plain = {"f8": 0.25, ATTRIBUTE_TYPES_KEY: {"f8": attribute_type(np.float64(0.25))}}
    assert encode_attributes(plain) == {"f8": 0.25}  # nothing lost: nothing recorded


@pytest.mark.parametrize(
    "record",
    [
        {"dtype": "<i4", "shape": [2]},  # three numbers
        {"dtype": "|O", "shape": []},
        {"dtype": "float32", "shape": [3]},  # numpy would read it; the convention does not
        {"dtype": "<i4", "shape": [True, 3]},
        {"dtype": "<i4", "shape": [2**20, 2**20]},
        {"dtype": "<i4"},
        "<i4",
    ],
)
def test_malformed_records_are_typed_errors(record: Any) -> None:
    stored = {
        "v": [1, 2, 3],
        ATTRIBUTE_TYPES_KEY: {"v": record},
        "zarr_conventions": [ATTRIBUTE_TYPES_CONVENTION],
    }
    with pytest.raises(ReferenceFormatError):
        decode_attributes(stored)


def test_complex_attribute_text_that_is_no_number_is_a_typed_error() -> None:
    stored = {"z": "complex:1,x", "zarr_conventions": [COMPLEX_CONVENTION]}
    with pytest.raises(ReferenceFormatError, match="not a complex number"):
        decode_attributes(stored)
