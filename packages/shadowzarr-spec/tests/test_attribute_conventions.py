"""The Non-Finite and Bytes attribute conventions round-trip every value and stay valid JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from shadowzarr_spec.attribute_conventions import (
    BYTES_CONVENTION,
    NON_FINITE_CONVENTION,
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
