"""The Non-Finite, Bytes and Complex Attributes conventions, encoding and decoding.

JSON has no NaN, no infinities, no bytes and no complex numbers. A node whose attributes hold
any is written with those values as strings ("NaN", "Infinity", "-Infinity"; "base64:<data>";
"complex:<real>,<imag>", each part a JSON number or one of the three non-finite words) and
registers the convention in ``zarr_conventions``; real strings that would be mistaken for them
get the prefix ``_str_``. A node that needs none is written exactly as before. Decoding applies
only the conventions a node registers, in one pass, so the order of registration does not
matter. (A complex number was once written as ``[real, imag]``, which reads back as a pair of
floats: the convention keeps the two apart.)
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from shadowzarr_spec.base64_text import decode_base64

__all__ = [
    "BYTES_CONVENTION",
    "COMPLEX_CONVENTION",
    "NON_FINITE_CONVENTION",
    "decode_attributes",
    "encode_attributes",
    "to_json_value",
]

NON_FINITE_CONVENTION: Final = {
    "uuid": "4b1b3f0e-6a5e-5d8a-9c57-8c1a6a0e2f11",
    "name": "non-finite-attributes",
    "description": 'NaN and infinite numbers are stored as the strings "NaN", "Infinity" and '
    '"-Infinity"; strings of those forms, or starting with "_str_", carry the prefix "_str_".',
}
BYTES_CONVENTION: Final = {
    "uuid": "9d2c6a57-0b8e-5f3c-a1e4-3e7b5c2d9f40",
    "name": "bytes-attributes",
    "description": 'Bytes are stored as "base64:" followed by their base64 encoding; strings '
    'starting with "base64:" or "_str_" carry the prefix "_str_".',
}
COMPLEX_CONVENTION: Final = {
    "uuid": "5f0c8e21-7d3a-5b6e-b2c4-1a9d7e3f6c58",
    "name": "complex-attributes",
    "description": 'Complex numbers are stored as "complex:<real>,<imag>" (each part a JSON '
    'number, "NaN", "Infinity" or "-Infinity"); strings starting with "complex:" or "_str_" '
    'carry the prefix "_str_".',
}
ESCAPE: Final = "_str_"
BYTES_PREFIX: Final = "base64:"
COMPLEX_PREFIX: Final = "complex:"
NON_FINITE_STRINGS: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
CONVENTIONS_KEY: Final = "zarr_conventions"


def to_json_value(value: Any) -> Any:
    """Turn numpy scalars and arrays, tuples and bytes-likes into plain Python values."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "SV" or value.dtype.kind == "O":
            return [to_json_value(v) for v in value.tolist()]
        return to_json_value(value.tolist())
    if isinstance(value, np.generic):
        return to_json_value(value.item())
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(v) for v in value]
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def encode_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Encode a node's attributes so they are valid JSON, registering the conventions used."""
    plain: dict[str, Any] = to_json_value(dict(attributes))
    needs = _scan(plain)
    if not any(needs):
        return plain
    listed = plain.get(CONVENTIONS_KEY)
    conventions = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
    known = {c.get("uuid") for c in conventions}
    for wanted, convention in zip(needs, _ALL, strict=True):
        if wanted and convention["uuid"] not in known:
            conventions.append(dict(convention))
    encoded = {
        key: _encode_value(value, *needs) for key, value in plain.items() if key != CONVENTIONS_KEY
    }
    encoded[CONVENTIONS_KEY] = conventions
    return encoded


def decode_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Undo the conventions, as far as the node registers them; other attributes pass through."""
    plain = dict(attributes)
    listed = plain.get(CONVENTIONS_KEY)
    listed = listed if isinstance(listed, list) else []
    registered = {c.get("uuid") for c in listed if isinstance(c, dict)}
    which = tuple(convention["uuid"] in registered for convention in _ALL)
    if not any(which):
        return plain
    decoded = {k: _decode_value(v, *which) for k, v in plain.items() if k != CONVENTIONS_KEY}
    ours = {convention["uuid"] for convention in _ALL}
    remaining = [
        c
        for c in listed
        if not (isinstance(c, dict) and c.get("uuid") in ours)
    ]
    if remaining:
        decoded[CONVENTIONS_KEY] = remaining
    return decoded


_ALL: Final = (NON_FINITE_CONVENTION, BYTES_CONVENTION, COMPLEX_CONVENTION)


def _scan(value: Any) -> tuple[bool, bool, bool]:
    """Whether ``value`` holds a non-finite float, bytes, a complex number."""
    if isinstance(value, float):
        return (not math.isfinite(value), False, False)
    if isinstance(value, bytes):
        return (False, True, False)
    if isinstance(value, complex):
        return (False, False, True)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        found = [False, False, False]
        for item in value:
            for i, hit in enumerate(_scan(item)):
                found[i] |= hit
        return (found[0], found[1], found[2])
    return (False, False, False)


def _number_text(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return repr(number)


def _encode_value(value: Any, non_finite: bool, as_bytes: bool, as_complex: bool) -> Any:
    if isinstance(value, float) and non_finite and not math.isfinite(value):
        return _number_text(value)
    if isinstance(value, bytes) and as_bytes:
        return BYTES_PREFIX + base64.b64encode(value).decode("ascii")
    if isinstance(value, complex) and as_complex:
        return f"{COMPLEX_PREFIX}{_number_text(value.real)},{_number_text(value.imag)}"
    if isinstance(value, str) and _needs_escape(value, non_finite, as_bytes, as_complex):
        return ESCAPE + value
    if isinstance(value, dict):
        return {k: _encode_value(v, non_finite, as_bytes, as_complex) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode_value(v, non_finite, as_bytes, as_complex) for v in value]
    return value


def _needs_escape(text: str, non_finite: bool, as_bytes: bool, as_complex: bool) -> bool:
    return (
        text.startswith(ESCAPE)
        or (non_finite and text in NON_FINITE_STRINGS)
        or (as_bytes and text.startswith(BYTES_PREFIX))
        or (as_complex and text.startswith(COMPLEX_PREFIX))
    )


def _decode_value(value: Any, non_finite: bool, as_bytes: bool, as_complex: bool) -> Any:
    if isinstance(value, str):
        if value.startswith(ESCAPE):
            return value[len(ESCAPE) :]
        if non_finite and value in NON_FINITE_STRINGS:
            return NON_FINITE_STRINGS[value]
        if as_bytes and value.startswith(BYTES_PREFIX):
            return decode_base64(value[len(BYTES_PREFIX) :], "attribute value")
        if as_complex and value.startswith(COMPLEX_PREFIX):
            return _complex(value)
        return value
    if isinstance(value, dict):
        return {k: _decode_value(v, non_finite, as_bytes, as_complex) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_value(v, non_finite, as_bytes, as_complex) for v in value]
    return value


def _complex(text: str) -> complex:
    parts = text[len(COMPLEX_PREFIX) :].split(",")
    try:
        real, imag = (NON_FINITE_STRINGS.get(p, None) or float(p) for p in parts)
    except ValueError as exc:
        raise ReferenceFormatError(
            f"attribute value {text[:40]!r} is not a complex number"
        ) from exc
    return complex(real, imag)
