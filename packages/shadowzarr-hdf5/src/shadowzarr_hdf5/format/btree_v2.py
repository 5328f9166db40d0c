"""Version 2 B-tree chunk index (``BTHD`` → ``BTIN`` → ``BTLF``, record types 10 and 11).

Internal nodes hold records too, and child pointers carry record counts whose widths depend on
the node size and depth (``H5B2hdr.c``), so they are derived here, not stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .binary import bit_width, column, expect_signature, records, uint
from .errors import Hdf5FormatError
from .index_walk import Collector, Node, Walk, walk_nodes

if TYPE_CHECKING:
    from .superblock import Superblock

__all__ = ["BTree2Header", "header_size", "parse_header", "walk_btree2"]

_UNFILTERED, _FILTERED = 10, 11
_NODE_PREFIX = 10  # signature, version, type, checksum


def header_size(sb: Superblock) -> int:
    return 22 + sb.offset_size + sb.length_size


@dataclass(frozen=True, slots=True)
class BTree2Header:
    record_type: int
    node_size: int
    record_size: int
    depth: int
    root: int
    root_records: int
    rank: int
    size_width: int
    """Width S of the stored chunk size (type 11), else 0."""


def parse_header(sb: Superblock, blob: bytes, address: int) -> BTree2Header:
    expect_signature(blob, b"BTHD", address)
    rtype = blob[5]
    if rtype not in (_UNFILTERED, _FILTERED):
        raise Hdf5FormatError(f"v2 B-tree at {address} has record type {rtype}, not chunks")
    o = sb.offset_size
    node, rs, depth = uint(blob, 6, 4), uint(blob, 10, 2), uint(blob, 12, 2)
    root, root_records = uint(blob, 16, o), uint(blob, 16 + o, 2)
    if rtype == _UNFILTERED:
        width, rank = 0, (rs - o) // 8
    else:
        width = (rs - o - 5) % 8 + 1
        rank = (rs - o - 4 - width) // 8
    return BTree2Header(rtype, node, rs, depth, root, root_records, rank, width)


def _pointer_widths(h: BTree2Header, o: int) -> list[tuple[int, int]]:
    """Per depth d ≥ 1: (bytes of a child's record count, bytes of its subtree count)."""
    leaf_max = (h.node_size - _NODE_PREFIX) // h.record_size
    count_width = bit_width(leaf_max)
    cumulative, cumulative_width = leaf_max, 0
    widths = [(0, 0)]
    for _ in range(1, h.depth + 1):
        widths.append((count_width, cumulative_width))
        pointer = o + count_width + cumulative_width
        internal_max = (h.node_size - _NODE_PREFIX - pointer) // (h.record_size + pointer)
        cumulative = (internal_max + 1) * cumulative + internal_max
        cumulative_width = bit_width(cumulative)
    return widths


def walk_btree2(sb: Superblock, header_address: int) -> Walk:
    """Walk from the header; record keys are scaled chunk offsets (n, rank)."""
    o = sb.offset_size
    collector = Collector()
    state: dict[str, BTree2Header] = {}

    def record(blob: bytes, count: int) -> None:
        h = state["h"]
        rows = records(blob, 6, count, h.record_size)
        key_at = o + (h.size_width + 4 if h.record_type == _FILTERED else 0)
        keys = np.stack([column(rows, key_at + 8 * d, 8) for d in range(h.rank)], axis=1)
        sizes = masks = None
        if h.record_type == _FILTERED:
            sizes = column(rows, o, h.size_width)
            masks = column(rows, o + h.size_width, 4)
        collector.add(column(rows, 0, o) + sb.base, keys.reshape(count, h.rank), sizes, masks)

    def tree_node(address: int, count: int, depth: int) -> Node:
        h = state["h"]

        def expand(blob: bytes) -> list[Node]:
            expect_signature(blob, b"BTIN" if depth else b"BTLF", address)
            record(blob, count)
            if depth == 0:
                return []
            count_width, total_width = _pointer_widths(h, o)[depth]
            pointer = o + count_width + total_width
            rows = records(blob, 6 + count * h.record_size, count + 1, pointer)
            children = column(rows, 0, o)
            counts = column(rows, o, count_width)
            return [
                tree_node(int(a), int(n), depth - 1) for a, n in zip(children, counts, strict=True)
            ]

        return Node(sb.absolute(address), h.node_size, expand)

    def header(blob: bytes) -> list[Node]:
        h = state["h"] = parse_header(sb, blob, header_address)
        collector.key_shape = (h.rank,)
        if sb.is_undefined(h.root) or (h.root_records == 0 and h.depth == 0):
            return []
        return [tree_node(h.root, h.root_records, h.depth)]

    root = Node(sb.absolute(header_address), header_size(sb), header)
    return walk_nodes([root], collector)
