"""JSON reading and writing that tolerates legacy bare NaN/Infinity and never writes them."""

from __future__ import annotations

import json
from typing import Any

from shadowzarr_spec.errors import ReferenceFormatError

__all__ = ["dumps_strict", "json_integer", "parse_json"]

MAX_NESTING = 200


def parse_json(text: str | bytes) -> Any:
    """Parse JSON, accepting the bare ``NaN``, ``Infinity`` and ``-Infinity`` Python writes."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReferenceFormatError(f"not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise ReferenceFormatError("JSON nested too deeply") from exc
    return value


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
