"""The ``zarr.json`` documents a repository (or a reference file system) gets for each node.

Icechunk refuses bare NaN/Infinity in metadata, and a second copy of all metadata (the
consolidated metadata hdmf-zarr writes in the root group) would go stale as soon as the
repository changes, so both are rewritten here, in one place for both directions.
"""

from __future__ import annotations

import math
from typing import Any

from shadowzarr_spec import encode_attributes
from shadowzarr_spec.json_text import dumps_strict, parse_json

__all__ = ["clean_document", "clean_metadata_bytes"]

_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def clean_document(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` without consolidated metadata, with non-finite attributes stored as the
    strings of the Non-Finite Attributes convention and a non-finite fill value as Zarr's."""
    cleaned = {k: v for k, v in document.items() if k != "consolidated_metadata"}
    if "attributes" in cleaned:
        cleaned["attributes"] = encode_attributes(cleaned.get("attributes") or {})
    fill = cleaned.get("fill_value")
    if isinstance(fill, float) and not math.isfinite(fill):
        cleaned["fill_value"] = _NON_FINITE[repr(fill)]
    return cleaned


def clean_metadata_bytes(data: bytes) -> bytes:
    """:func:`clean_document` on the bytes of a ``zarr.json``."""
    document = parse_json(data)
    if not isinstance(document, dict):
        return data
    return dumps_strict(clean_document(document)).encode("utf-8")
