"""JSON reading and writing that tolerates legacy bare NaN/Infinity and never writes them."""

from __future__ import annotations

import json
from typing import Any

from shadowzarr_spec.errors import ReferenceFormatError

__all__ = ["dumps_strict", "parse_json"]

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
