"""JSON reading and writing that tolerates legacy bare NaN/Infinity and never writes them.

Parsing goes through orjson (a reference file listing 10**6 chunks parses in a fraction of the
stdlib's time) and falls back to the stdlib for every text orjson refuses or would read
differently: bare ``NaN``/``Infinity``, numbers that overflow a double, lone surrogates, other
encodings than UTF-8, and integers of 19 or more digits (orjson reads integers beyond 64 bits as
floats). So the values, and the errors, are always the stdlib's.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from shadowzarr_spec.errors import ReferenceFormatError

__all__ = ["dumps_strict", "json_integer", "parse_json"]

MAX_NESTING = 200


# Maps ASCII digits to 0 and every other byte to 1: a run of 19 zero bytes in the translated text
# is a run of 19 digits, found by one C-level search.
_DIGITS = bytes(0 if 0x30 <= i <= 0x39 else 1 for i in range(256))
_LONG_DIGIT_RUN = b"\x00" * 19


def parse_json(text: str | bytes) -> Any:
    """Parse JSON, accepting the bare ``NaN``, ``Infinity`` and ``-Infinity`` Python writes."""
    data = _orjson_input(text)
    if data is not None and data.translate(_DIGITS).find(_LONG_DIGIT_RUN) < 0:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # the stdlib reads what orjson refuses (NaN, 1e400...) or words the error
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReferenceFormatError(f"not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise ReferenceFormatError("JSON nested too deeply") from exc
    return value


def _orjson_input(text: str | bytes | bytearray) -> bytes | bytearray | None:
    """``text`` as UTF-8 bytes, or None when only the stdlib can read it."""
    if isinstance(text, str):
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates
            return None
    if not isinstance(text, bytes | bytearray):
        return None  # what json.loads makes of anything else, it says itself
    if text.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) or b"\x00" in text[:4]:
        return None  # a byte order mark or UTF-16/32, which json.loads detects
    return text


def dumps_strict(value: Any) -> str:
    """Serialise to compact standard JSON; a non-finite float here is a bug upstream."""
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    except ValueError as exc:
        raise ReferenceFormatError(f"value is not valid JSON (non-finite number?): {exc}") from exc


def json_integer(value: object) -> int | None:
    """``value`` as an integer if it is a JSON number with an integral value, else None.

    JSON has one number type: ``64`` and ``64.0`` are the same number, and a JavaScript reader
    cannot tell them apart, so neither does this one. Booleans are not numbers.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
