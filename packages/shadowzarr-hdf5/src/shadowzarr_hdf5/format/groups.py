"""The links of a group: symbol tables (v1 B-tree, symbol nodes, local heap) or link messages."""

from __future__ import annotations

from collections.abc import Callable

from .binary import uint
from .errors import NotNative
from .heaps import local_heap_data
from .messages import LINK, LINK_INFO, SYMBOL_TABLE, Link, parse_link, require_compact

__all__ = ["group_links"]

ReadAt = Callable[[int, int], bytes]
_MAX_DEPTH = 64


def group_links(
    messages: list[tuple[int, int, bytes]], read_at: ReadAt, offset_size: int, length_size: int
) -> list[Link]:
    """Every link of a group header's ``(type, flags, data)`` messages, sorted by name (h5py's
    order for groups that do not track creation order)."""
    links: list[Link] = []
    for mtype, _flags, data in messages:
        if mtype == SYMBOL_TABLE:
            btree, heap = uint(data, 0, offset_size), uint(data, offset_size, offset_size)
            names = local_heap_data(read_at, heap, offset_size, length_size)
            links += _symbol_table(read_at, btree, names, offset_size, length_size)
        elif mtype == LINK_INFO:
            require_compact(data, offset_size, "link")
        elif mtype == LINK:
            links.append(parse_link(data, offset_size))
    links.sort(key=lambda link: link.name)
    return links


def _symbol_table(
    read_at: ReadAt, root: int, names: bytes, offset_size: int, length_size: int
) -> list[Link]:
    o, ln = offset_size, length_size
    found: list[Link] = []
    frontier, depth = [root], 0
    while frontier:
        depth += 1
        if depth > _MAX_DEPTH:
            raise NotNative("group B-tree deeper than any real file")
        children: list[int] = []
        for address in frontier:
            head = read_at(address, 8 + 2 * o)
            if head[:4] != b"TREE" or head[4] != 0:
                raise NotNative(f"no group B-tree node at {address}")
            level, used = head[5], uint(head, 6, 2)
            start = 8 + 2 * o
            body = read_at(address + start, used * (ln + o) + ln)
            pointers = [uint(body, ln + i * (ln + o), o) for i in range(used)]
            if level > 0:
                children += pointers
            else:
                for node in pointers:
                    found += _symbol_node(read_at, node, names, o)
        frontier = children
    return found


def _symbol_node(read_at: ReadAt, address: int, names: bytes, o: int) -> list[Link]:
    head = read_at(address, 8)
    if head[:4] != b"SNOD" or head[4] != 1:
        raise NotNative(f"no symbol table node at {address}")
    count = uint(head, 6, 2)
    entry = 2 * o + 24
    body = read_at(address + 8, count * entry)
    links = []
    for i in range(count):
        pos = i * entry
        name_offset, header = uint(body, pos, o), uint(body, pos + o, o)
        cache_type = uint(body, pos + 2 * o, 4)
        end = names.find(b"\x00", name_offset)
        if end < 0:
            raise NotNative("symbol name runs past its local heap")
        name = names[name_offset:end]
        links.append(Link(name, None if cache_type == 2 else header))
    return links
