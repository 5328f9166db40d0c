"""Compact attributes of one object header → the JSON values ``read_attributes`` gives."""

from __future__ import annotations

from typing import Any

import numpy as np
from shadowzarr_spec.attribute_conventions import attribute_type
from shadowzarr_spec.nwb_convention import SPECLOC_ATTR, reference_value

from ..attributes import SKIPPED_ATTRIBUTES, bytes_or_text, decoded_name, nested, with_types
from ..format.dataspace import dataspace_extent
from ..format.datatypes import DatatypeKind, parse_datatype
from ..format.errors import NotNative
from ..format.heaps import GlobalHeap
from ..format.messages import AttributeMessage
from ..format.values import decode_elements
from ..object_paths import ObjectPaths

__all__ = ["json_attributes"]


def json_attributes(
    stored: list[tuple[bytes, AttributeMessage]],
    heap: GlobalHeap,
    paths: ObjectPaths,
    offset_size: int,
    length_size: int,
) -> dict[str, Any]:
    """Every attribute's JSON value (references as ``_REFERENCE`` objects)."""
    out: dict[str, Any] = {}
    types: dict[str, Any] = {}
    for raw_name, message in stored:
        name = decoded_name(raw_name)
        if name in SKIPPED_ATTRIBUTES:
            continue
        datatype = parse_datatype(message.datatype, offset_size)
        shape, _ = dataspace_extent(message.dataspace, length_size)
        if shape is None:
            out[name] = None
            continue
        values = decode_elements(message.data, datatype, shape, heap, offset_size)
        out[name] = _json(values, datatype.kind, shape, paths, name == SPECLOC_ATTR)
        if datatype.kind is DatatypeKind.NUMBER and isinstance(name, str):
            typed = attribute_type(values[()] if not shape else values)
            if typed is not None:
                types[name] = typed
    return with_types(out, types)


def _json(
    values: np.ndarray,
    kind: DatatypeKind,
    shape: tuple[int, ...],
    paths: ObjectPaths,
    specloc: bool,
) -> Any:
    if kind is DatatypeKind.NUMBER:
        return values.tolist()
    flat = values.ravel().tolist()
    if kind is DatatypeKind.FIXED_STRING:
        return nested([bytes_or_text(v) for v in flat], shape)
    if kind is DatatypeKind.VLEN_STRING:
        return nested([v.decode("utf-8", "surrogateescape") for v in flat], shape)
    found = [paths.at_address(int(a)) for a in flat]
    if any(path is None for path in found):
        raise NotNative("a reference whose target no hard link reaches")
    if specloc and not shape:
        return str(found[0]).lstrip("/")
    return nested([reference_value(str(path)) for path in found], shape)
