"""NWB specifics: recognising NWB files, and non-finite attributes hdmf-zarr 0.14.0 can read.

hdmf-zarr 0.14.0 hands attributes to pynwb as stored, so a ``resolution`` stored as the string
"NaN" (Non-Finite convention) fails pynwb's type check. Until the hdmf-zarr release that decodes
the convention (hdmf-dev/hdmf-zarr#408), NWB files keep non-finite numbers as bare JSON tokens,
the legacy form every Python reader (and RfsStore) accepts.
"""

from __future__ import annotations

import json
from typing import Any

import h5py
from shadowzarr_spec import BYTES_CONVENTION, NON_FINITE_CONVENTION, InlineRef, ReferenceFileSystem
from shadowzarr_spec.attribute_conventions import ESCAPE, NON_FINITE_STRINGS, decode_attributes

__all__ = ["bare_non_finite_attributes", "is_nwb"]

_CONVENTIONS = "zarr_conventions"


def is_nwb(file: h5py.File) -> bool:
    return "nwb_version" in file.attrs or ".specloc" in file.attrs


def bare_non_finite_attributes(rfs: ReferenceFileSystem) -> ReferenceFileSystem:
    """``rfs`` with non-finite attribute values written as bare NaN/Infinity tokens."""
    marker = NON_FINITE_CONVENTION["uuid"].encode("utf-8")
    for key, ref in list(rfs.refs.items()):
        if not (key == "zarr.json" or key.endswith("/zarr.json")) or not isinstance(ref, InlineRef):
            continue
        if marker not in ref.data:  # no node of this document uses the convention
            continue
        document = json.loads(ref.data)
        if _rewrite(document):
            text = json.dumps(document, allow_nan=True, separators=(",", ":"))
            rfs.refs[key] = InlineRef(text.encode("utf-8"))
    return rfs


def _rewrite(document: dict[str, Any]) -> bool:
    changed = False
    attributes = document.get("attributes")
    if isinstance(attributes, dict) and _uses_non_finite(attributes):
        document["attributes"] = _decoded(attributes)
        changed = True
    consolidated = document.get("consolidated_metadata")
    if isinstance(consolidated, dict):
        for child in (consolidated.get("metadata") or {}).values():
            if isinstance(child, dict):
                changed = _rewrite(child) or changed
    return changed


def _uses_non_finite(attributes: dict[str, Any]) -> bool:
    conventions = attributes.get(_CONVENTIONS) or []
    return any(
        isinstance(c, dict) and c.get("uuid") == NON_FINITE_CONVENTION["uuid"] for c in conventions
    )


def _decoded(attributes: dict[str, Any]) -> dict[str, Any]:
    """Decode only the Non-Finite convention; keep the Bytes convention as stored."""
    conventions = [
        c
        for c in attributes.get(_CONVENTIONS) or []
        if not (isinstance(c, dict) and c.get("uuid") == NON_FINITE_CONVENTION["uuid"])
    ]
    if any(isinstance(c, dict) and c.get("uuid") == BYTES_CONVENTION["uuid"] for c in conventions):
        # The Bytes convention stays: its escapes ("_str_base64:…", "_str__str_…") must stay
        # too, so only the escapes of non-finite words are undone.
        decoded = {k: _only_non_finite(v) for k, v in attributes.items() if k != _CONVENTIONS}
        decoded[_CONVENTIONS] = conventions
        return decoded
    only_non_finite = {**attributes, _CONVENTIONS: [dict(NON_FINITE_CONVENTION)]}
    decoded = decode_attributes(only_non_finite)
    decoded.pop(_CONVENTIONS, None)
    if conventions:
        decoded[_CONVENTIONS] = conventions
    return decoded


def _only_non_finite(value: Any) -> Any:
    if isinstance(value, str):
        if value in NON_FINITE_STRINGS:
            return NON_FINITE_STRINGS[value]
        if value.startswith(ESCAPE) and value[len(ESCAPE) :] in NON_FINITE_STRINGS:
            return value[len(ESCAPE) :]
        return value
    if isinstance(value, dict):
        return {k: _only_non_finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_only_non_finite(v) for v in value]
    return value
