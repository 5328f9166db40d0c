"""The Non-Finite, Bytes, Complex and Attribute Types conventions, encoding and decoding.

JSON has no NaN, no infinities, no bytes and no complex numbers. A node whose attributes hold
any is written with those values as strings ("NaN", "Infinity", "-Infinity"; "base64:<data>";
"complex:<real>,<imag>", each part a JSON number or one of the three non-finite words) and
registers the convention in ``zarr_conventions``; real strings that would be mistaken for them
get the prefix ``_str_``. A node that needs none is written exactly as before. Decoding applies
only the conventions a node registers, in one pass, so the order of registration does not
matter. (A complex number was once written as ``[real, imag]``, which reads back as a pair of
floats: the convention keeps the two apart.)

JSON numbers have no width and JSON has no one-element array that a netCDF reader would not
hand over as its element: a float32 ``scale_factor`` would read back as a float64, and xarray
would decode its variable as float64. The Attribute Types convention records, under the reserved
attribute ``_ATTRIBUTE_TYPES``, ``{name: {"dtype": "<f4", "shape": [1]}}`` for each number (or
array of numbers) whose JSON value alone would not give back its numpy type and shape;
decoding turns those into numpy scalars (shape ``[]``) and arrays, as h5py gives them.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from shadowzarr_spec.base64_text import decode_base64
from shadowzarr_spec.errors import ReferenceFormatError

__all__ = [
    "ATTRIBUTE_TYPES_CONVENTION",
    "ATTRIBUTE_TYPES_KEY",
    "BYTES_CONVENTION",
    "COMPLEX_CONVENTION",
    "NON_FINITE_CONVENTION",
    "attribute_type",
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
ATTRIBUTE_TYPES_CONVENTION: Final = {
    "uuid": "c3a7e1d2-4f6b-5a8c-9e0d-2b7f4c1a6e93",
    "name": "attribute-types",
    "description": 'The attribute "_ATTRIBUTE_TYPES" maps an attribute\'s name to the numpy type '
    'string and shape of its number or array of numbers ({"dtype": "<f4", "shape": [1]}), '
    "where the JSON value alone does not give them back.",
}
ATTRIBUTE_TYPES_KEY: Final = "_ATTRIBUTE_TYPES"
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
    types = _lost_types(plain)
    if types:
        plain[ATTRIBUTE_TYPES_KEY] = types
    needs = (*_scan(plain), bool(types))
    if not any(needs):
        return plain
    listed = plain.get(CONVENTIONS_KEY)
    conventions = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
    known = {c.get("uuid") for c in conventions}
    for wanted, convention in zip(needs, _ALL, strict=True):
        if wanted and convention["uuid"] not in known:
            conventions.append(dict(convention))
    encoded = {
        key: _encode_value(value, *needs[:3])
        for key, value in plain.items()
        if key != CONVENTIONS_KEY
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
    decoded = {k: _decode_value(v, *which[:3]) for k, v in plain.items() if k != CONVENTIONS_KEY}
    if which[3]:
        _apply_types(decoded, decoded.pop(ATTRIBUTE_TYPES_KEY, None))
    ours = {convention["uuid"] for convention in _ALL}
    remaining = [c for c in listed if not (isinstance(c, dict) and c.get("uuid") in ours)]
    if remaining:
        decoded[CONVENTIONS_KEY] = remaining
    return decoded


_ALL: Final = (
    NON_FINITE_CONVENTION,
    BYTES_CONVENTION,
    COMPLEX_CONVENTION,
    ATTRIBUTE_TYPES_CONVENTION,
)

_NUMBER_KINDS: Final = "biufc"
_NUMBER_TYPE: Final = re.compile(r"[<>|]?[biufc][0-9]{1,2}\Z")
"""A numpy type string of numbers ("<f4", "|i1", "|b1"), nothing np.dtype would read otherwise."""
_JSON_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_MAX_TYPED_ELEMENTS: Final = 2**24
"""A recorded shape larger than this is refused before numpy sees it (the JSON value must hold
that many numbers anyway)."""


def attribute_type(value: Any) -> dict[str, Any] | None:
    """``{"dtype", "shape"}`` of a numpy number or array of numbers (little-endian type
    string), as ``_ATTRIBUTE_TYPES`` records it; None for anything else."""
    if not isinstance(value, np.ndarray | np.generic):
        return None
    dtype = value.dtype
    if dtype.kind not in _NUMBER_KINDS or dtype.names is not None or dtype.subdtype is not None:
        return None
    little = dtype.newbyteorder("<") if dtype.itemsize > 1 and dtype.kind != "b" else dtype
    return {"dtype": little.str, "shape": list(np.shape(value))}


def _lost_types(plain: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``plain[_ATTRIBUTE_TYPES]`` (recorded by a generator for every numeric
    attribute) that the JSON values would not give back; the rest, and the names no longer
    present, are dropped."""
    recorded = plain.pop(ATTRIBUTE_TYPES_KEY, None)
    if not isinstance(recorded, dict):
        return {}
    kept: dict[str, Any] = {}
    for name, record in recorded.items():
        if name not in plain or not isinstance(record, dict):
            continue
        value = plain[name]
        try:
            inferred = np.asarray(value)
        except (TypeError, ValueError):
            continue
        if inferred.dtype.kind not in _NUMBER_KINDS:
            continue
        if inferred.dtype.str != record["dtype"] or list(inferred.shape) != record["shape"]:
            kept[name] = record
    return kept


def _apply_types(decoded: dict[str, Any], recorded: Any) -> None:
    """Turn the recorded attributes into numpy scalars and arrays of their type and shape."""
    if recorded is None:
        return
    if not isinstance(recorded, dict):
        raise ReferenceFormatError(f"{ATTRIBUTE_TYPES_KEY} is not an object")
    for name, record in recorded.items():
        if name not in decoded:
            continue
        dtype, shape = _checked_type(name, record)
        try:
            array = np.asarray(decoded[name], dtype=dtype)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ReferenceFormatError(
                f"attribute {name!r} does not hold numbers of type {dtype}"
            ) from exc
        if array.size != math.prod(shape):
            raise ReferenceFormatError(
                f"attribute {name!r} holds {array.size} numbers, its recorded shape {shape} "
                f"{math.prod(shape)}"
            )
        array = array.reshape(shape)
        decoded[name] = array[()] if not shape else array


def _checked_type(name: str, record: Any) -> tuple[np.dtype, tuple[int, ...]]:
    """The numpy type and shape of one ``_ATTRIBUTE_TYPES`` entry, checked before use."""
    if not isinstance(record, dict):
        raise ReferenceFormatError(f"{ATTRIBUTE_TYPES_KEY}[{name!r}] is not an object")
    text, shape = record.get("dtype"), record.get("shape")
    if not isinstance(text, str) or not _NUMBER_TYPE.match(text) or not isinstance(shape, list):
        raise ReferenceFormatError(
            f"{ATTRIBUTE_TYPES_KEY}[{name!r}] needs a number's dtype and a shape"
        )
    try:
        dtype = np.dtype(text)
    except TypeError as exc:
        raise ReferenceFormatError(f"{ATTRIBUTE_TYPES_KEY}[{name!r}]: no type {text!r}") from exc
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ReferenceFormatError(f"{ATTRIBUTE_TYPES_KEY}[{name!r}]: bad shape {shape!r}")
    if len(shape) > 32 or math.prod(shape) > _MAX_TYPED_ELEMENTS:
        raise ReferenceFormatError(f"{ATTRIBUTE_TYPES_KEY}[{name!r}]: shape {shape} too large")
    return dtype, tuple(shape)


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
    """Two parts, each a JSON number or a non-finite word: not all that ``float`` takes
    ("inf", " 1", "1_0"), so both readers accept the same texts."""
    parts = text[len(COMPLEX_PREFIX) :].split(",")
    if len(parts) != 2 or not all(p in NON_FINITE_STRINGS or _JSON_NUMBER.match(p) for p in parts):
        raise ReferenceFormatError(f"attribute value {text[:40]!r} is not a complex number")
    real, imag = (NON_FINITE_STRINGS[p] if p in NON_FINITE_STRINGS else float(p) for p in parts)
    return complex(real, imag)
