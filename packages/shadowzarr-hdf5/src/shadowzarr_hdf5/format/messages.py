"""The header messages of groups and datasets: links, attributes, fill value, filters.

Each parser returns plain values or raises :class:`NotNative` for a form it does not read
(dense storage in fractal heaps, creation-order indexes, old layout versions, virtual layouts).
"""

from __future__ import annotations

from dataclasses import dataclass

from .binary import uint
from .errors import NotNative

__all__ = [
    "ATTRIBUTE",
    "ATTRIBUTE_INFO",
    "DATASPACE",
    "DATATYPE",
    "EXTERNAL_FILES",
    "FILL_VALUE",
    "FILL_VALUE_OLD",
    "FILTERS",
    "LAYOUT",
    "LINK",
    "LINK_INFO",
    "SYMBOL_TABLE",
    "AttributeMessage",
    "FilterSpec",
    "Link",
    "parse_attribute",
    "parse_fill_value",
    "parse_filters",
    "parse_link",
    "require_compact",
    "stored_attributes",
]

DATASPACE, LINK_INFO, DATATYPE, FILL_VALUE_OLD, FILL_VALUE = 0x01, 0x02, 0x03, 0x04, 0x05
LINK, EXTERNAL_FILES, LAYOUT, FILTERS, ATTRIBUTE = 0x06, 0x07, 0x08, 0x0B, 0x0C
SYMBOL_TABLE, ATTRIBUTE_INFO = 0x11, 0x15
SHARED = 0x02
"""Message flag: the message lives elsewhere (a committed datatype, a shared message)."""


@dataclass(frozen=True, slots=True)
class Link:
    name: bytes
    address: int | None
    """Object header address of a hard link; None for soft and external links."""


@dataclass(frozen=True, slots=True)
class FilterSpec:
    """One filter of a dataset's pipeline, as HDF5 reports it."""

    code: int
    flags: int
    values: tuple[int, ...]
    name: str


@dataclass(frozen=True, slots=True)
class AttributeMessage:
    name: bytes
    datatype: bytes
    dataspace: bytes
    data: bytes


def require_compact(data: bytes, offset_size: int, what: str) -> None:
    """Link-info and attribute-info messages: refuse dense storage and creation order."""
    if len(data) < 2:
        raise NotNative(f"{what} info message too short")
    flags = data[1]
    if flags & 0x01:
        raise NotNative(f"{what} creation order is tracked")
    heap = uint(data, 2, offset_size)
    if heap != (1 << (8 * offset_size)) - 1:
        raise NotNative(f"{what}s in dense storage")


def parse_link(data: bytes, offset_size: int) -> Link:
    """A link message of a compact group."""
    if len(data) < 3 or data[0] != 1:
        raise NotNative("link message version")
    flags, pos = data[1], 2
    link_type = 0
    if flags & 0x08:
        link_type, pos = data[pos], pos + 1
    if flags & 0x04:
        pos += 8
    if flags & 0x10:
        pos += 1
    width = 1 << (flags & 0x03)
    length = uint(data, pos, width)
    pos += width
    name = bytes(data[pos : pos + length])
    if len(name) != length:
        raise NotNative("link message truncated")
    pos += length
    if link_type == 0:
        return Link(name, uint(data, pos, offset_size))
    return Link(name, None)


def parse_attribute(data: bytes) -> AttributeMessage:
    """Split an attribute message (versions 1–3) into name, datatype, dataspace and data."""
    version = data[0] if data else 0
    if version not in (1, 2, 3):
        raise NotNative(f"attribute message version {version}")
    if version >= 2 and data[1] & 0x03:
        raise NotNative("attribute with a shared datatype or dataspace")
    name_size, type_size, space_size = uint(data, 2, 2), uint(data, 4, 2), uint(data, 6, 2)
    pos = 8 if version < 3 else 9

    def take(size: int) -> bytes:
        nonlocal pos
        part = bytes(data[pos : pos + size])
        pos += (size + 7) & ~7 if version == 1 else size
        return part

    name = take(name_size)
    datatype, dataspace = take(type_size), take(space_size)
    if len(name) != name_size or not name.endswith(b"\x00"):
        raise NotNative("attribute name not null-terminated")
    return AttributeMessage(name[:-1], datatype, dataspace, bytes(data[pos:]))


def parse_fill_value(data: bytes) -> bytes | None:
    """The stored fill value bytes (None: the default, zeros)."""
    version = data[0] if data else 0
    if version in (1, 2):
        if not data[3]:  # "fill value defined": without it there is no size or value
            return None
        size = uint(data, 4, 4)
        return bytes(data[8 : 8 + size]) or None
    if version == 3:
        if not data[1] & 0x20:
            return None
        size = uint(data, 2, 4)
        return bytes(data[6 : 6 + size]) or None
    raise NotNative(f"fill value message version {version}")


_BUILTIN_FILTER_NAMES = {
    1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset",
}  # fmt: skip


def parse_filters(data: bytes) -> tuple[FilterSpec, ...]:
    """Filter pipeline message versions 1 and 2, as ``H5Pget_filter2`` reports each filter."""
    version, count = data[0], data[1]
    if version not in (1, 2):
        raise NotNative(f"filter pipeline version {version}")
    pos = 8 if version == 1 else 2
    out = []
    for _ in range(count):
        code = uint(data, pos, 2)
        pos += 2
        name_length = 0
        if version == 1 or code >= 256:
            name_length = uint(data, pos, 2)
            pos += 2
        flags, nvalues = uint(data, pos, 2), uint(data, pos + 2, 2)
        pos += 4
        raw_name = bytes(data[pos : pos + name_length])
        pos += (name_length + 7) & ~7 if version == 1 else name_length
        values = tuple(uint(data, pos + 4 * i, 4) for i in range(nvalues))
        pos += 4 * nvalues
        if version == 1 and nvalues % 2:
            pos += 4
        name = raw_name.split(b"\x00", 1)[0].decode("utf-8", "replace")
        out.append(FilterSpec(code, flags, values, name or _BUILTIN_FILTER_NAMES.get(code, "")))
    return tuple(out)


def stored_attributes(
    messages: list[tuple[int, int, bytes]], offset_size: int
) -> list[tuple[bytes, AttributeMessage]]:
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
