"""Compact attributes of one object header → the JSON values ``read_attributes`` gives."""

from __future__ import annotations

from typing import Any

import numpy as np
from shadowzarr_spec.nwb_convention import SPECLOC_ATTR, reference_value

from ..attributes import SKIPPED_ATTRIBUTES, bytes_or_text, decoded_name, nested
from ..object_paths import ObjectPaths
from .errors import NotNative
from .heaps import GlobalHeap
from .messages import ATTRIBUTE, ATTRIBUTE_INFO, SHARED, parse_attribute, require_compact
from .types import Kind, parse_dataspace, parse_datatype
from .values import decode_elements

__all__ = ["decode_attributes", "stored_attributes"]


def stored_attributes(
    messages: list[tuple[int, int, bytes]], offset_size: int
) -> list[tuple[bytes, Any]]:
    """The attribute messages by name (h5py's order when creation order is not tracked)."""
    found = []
    for mtype, flags, data in messages:
        if mtype == ATTRIBUTE_INFO:
            require_compact(data, offset_size, "attribute")
        elif mtype == ATTRIBUTE:
            if flags & SHARED:
                raise NotNative("shared attribute message")
            message = parse_attribute(data)
            found.append((message.name, message))
    found.sort(key=lambda item: item[0])
    return found


def decode_attributes(
    stored: list[tuple[bytes, Any]],
    heap: GlobalHeap,
    paths: ObjectPaths,
    offset_size: int,
    length_size: int,
) -> dict[str, Any]:
    """Every attribute's JSON value (references as ``_REFERENCE`` objects)."""
    out: dict[str, Any] = {}
    for raw_name, message in stored:
        name = decoded_name(raw_name)
        if name in SKIPPED_ATTRIBUTES:
            continue
        datatype = parse_datatype(message.datatype, offset_size)
        shape, _ = parse_dataspace(message.dataspace, length_size)
        if shape is None:
            out[name] = None
            continue
        values = decode_elements(message.data, datatype, shape, heap, offset_size)
        out[name] = _json(values, datatype.kind, shape, paths, name == SPECLOC_ATTR)
    return out


def _json(
    values: np.ndarray, kind: Kind, shape: tuple[int, ...], paths: ObjectPaths, specloc: bool
) -> Any:
    if kind is Kind.NUMBER:
        return values.tolist()
    flat = values.ravel().tolist()
    if kind is Kind.FIXED_STRING:
        return nested([bytes_or_text(v) for v in flat], shape)
    if kind is Kind.VLEN_STRING:
        return nested([v.decode("utf-8", "surrogateescape") for v in flat], shape)
    found = [paths.at_address(int(a)) for a in flat]
    if any(path is None for path in found):
        raise NotNative("a reference whose target no hard link reaches")
    if specloc and not shape:
        return str(found[0]).lstrip("/")
    return nested([reference_value(str(path)) for path in found], shape)
