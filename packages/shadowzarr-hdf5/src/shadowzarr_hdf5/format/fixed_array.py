"""Fixed array chunk index (``FAHD`` → ``FADB``, optionally paged): fixed maximum dimensions.

The data block is one contiguous allocation whose size the header fixes, so all records arrive
in one range request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .binary import column, expect_signature, records, uint
from .index_walk import Collector, Node, Walk, walk_nodes

if TYPE_CHECKING:
    from .superblock import Superblock

__all__ = ["add_entries", "header_size", "page_initialised", "walk_fixed_array"]

_FILTERED_CLIENT = 1


def header_size(sb: Superblock) -> int:
    return 8 + sb.length_size + sb.offset_size + 4


def page_initialised(bitmap: bytes, page: int) -> bool:
    """Page-init bitmaps are read most significant bit first."""
    return bool(bitmap[page // 8] & (0x80 >> (page % 8)))


def add_entries(
    collector: Collector,
    sb: Superblock,
    rows: np.ndarray,
    filtered: bool,
    first_index: int,
) -> None:
    """Record array entries (address [, size, mask]) whose address is defined."""
    o, entry = sb.offset_size, rows.shape[1]
    addresses = column(rows, 0, o)
    keep = addresses != np.uint64((1 << (8 * o)) - 1)
    linear = np.arange(first_index, first_index + len(rows), dtype=np.int64)[keep]
    sizes = masks = None
    if filtered:
        sizes = column(rows, o, entry - o - 4)[keep]
        masks = column(rows, entry - 4, 4)[keep]
    collector.add(addresses[keep] + sb.base, linear, sizes, masks)


def walk_fixed_array(sb: Superblock, header_address: int) -> Walk:
    """Walk from the header; record keys are linear indexes over the max chunk grid."""
    o = sb.offset_size
    collector = Collector()

    def header(blob: bytes) -> list[Node]:
        expect_signature(blob, b"FAHD", header_address)
        filtered = blob[5] == _FILTERED_CLIENT
        entry, page_bits = blob[6], blob[7]
        count = uint(blob, 8, sb.length_size)
        block = uint(blob, 8 + sb.length_size, o)
        if sb.is_undefined(block) or count == 0:
            return []
        per_page = 1 << page_bits
        if count <= per_page:
            size = 6 + o + count * entry + 4
            return [
                Node(sb.absolute(block), size, lambda b: unpaged(b, block, count, entry, filtered))
            ]
        pages = -(-count // per_page)
        prefix = 6 + o + -(-pages // 8) + 4
        size = prefix + count * entry + pages * 4

        def paged(data: bytes) -> list[Node]:
            expect_signature(data, b"FADB", block)
            bitmap = data[6 + o : prefix - 4]
            for page in range(pages):
                if not page_initialised(bitmap, page):
                    continue
                n = min(per_page, count - page * per_page)
                start = prefix + page * (per_page * entry + 4)
                rows = records(data, start, n, entry)
                add_entries(collector, sb, rows, filtered, page * per_page)
            return []

        return [Node(sb.absolute(block), size, paged)]

    def unpaged(data: bytes, block: int, count: int, entry: int, filtered: bool) -> list[Node]:
        expect_signature(data, b"FADB", block)
        add_entries(collector, sb, records(data, 6 + o, count, entry), filtered, 0)
        return []

    return walk_nodes([Node(sb.absolute(header_address), header_size(sb), header)], collector)
