"""Extensible array chunk index (``EAHD`` → ``EAIB`` → ``EASB``/``EADB`` → pages).

Geometry (super blocks, data block sizes, paging) is not stored; it follows from the creation
parameters in the header exactly as in ``H5EAhdr.c``. Record keys are linear element indexes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .binary import column, expect_signature, records, uint
from .fixed_array import add_entries, page_initialised
from .index_walk import Collector, Node, Walk, walk_nodes

if TYPE_CHECKING:
    from collections.abc import Callable

    from .superblock import Superblock

__all__ = ["Geometry", "header_size", "walk_extensible_array"]

_FILTERED_CLIENT = 1


def header_size(sb: Superblock) -> int:
    return 12 + 6 * sb.length_size + sb.offset_size + 4


@dataclass(frozen=True, slots=True)
class SuperBlock:
    data_blocks: int
    elements: int
    """Elements per data block."""
    first: int
    """Linear index of its first element."""
    pages: int
    """Pages per data block; 0 when not paged."""


@dataclass(frozen=True, slots=True)
class Geometry:
    entry: int
    filtered: bool
    index_elements: int
    page_elements: int
    offset_width: int
    """Width of the block-offset field in secondary and data blocks."""
    direct_blocks: int
    """Data blocks addressed by the index block (super blocks below 2·log2 p)."""
    direct_super_blocks: int
    super_blocks: tuple[SuperBlock, ...]
    max_index: int
    """Element slots in use ('max index set')."""

    @classmethod
    def from_header(cls, sb: Superblock, blob: bytes) -> Geometry:
        entry, max_bits, index_elements = blob[6], blob[7], blob[8]
        min_elements, min_pointers, page_bits = blob[9], blob[10], blob[11]
        max_index = uint(blob, 12 + 4 * sb.length_size, sb.length_size)
        count = 1 + max_bits - (min_elements.bit_length() - 1)
        page_elements = 1 << page_bits
        blocks, first = [], index_elements
        for s in range(count):
            n, elements = 1 << (s // 2), min_elements << ((s + 1) // 2)
            pages = elements // page_elements if elements > page_elements else 0
            blocks.append(SuperBlock(n, elements, first, pages))
            first += n * elements
        direct_super = 2 * (min_pointers.bit_length() - 1)
        return cls(
            entry,
            blob[5] == _FILTERED_CLIENT,
            index_elements,
            page_elements,
            -(-max_bits // 8),
            2 * (min_pointers - 1),
            direct_super,
            tuple(blocks),
            max_index,
        )

    def index_block_size(self, o: int) -> int:
        secondary = len(self.super_blocks) - self.direct_super_blocks
        return 6 + o + self.index_elements * self.entry + (self.direct_blocks + secondary) * o + 4

    def data_block_prefix(self, o: int) -> int:
        return 6 + o + self.offset_width

    def secondary_block_size(self, o: int, s: SuperBlock) -> int:
        bitmap = s.data_blocks * -(-s.pages // 8) if s.pages else 0
        return 6 + o + self.offset_width + bitmap + s.data_blocks * o + 4


def walk_extensible_array(sb: Superblock, header_address: int) -> Walk:
    """Walk from the header, level by level, skipping missing blocks and uninitialised pages."""
    o = sb.offset_size
    collector = Collector()

    def header(blob: bytes) -> list[Node]:
        expect_signature(blob, b"EAHD", header_address)
        g = Geometry.from_header(sb, blob)
        index_block = uint(blob, 12 + 6 * sb.length_size, o)
        if sb.is_undefined(index_block) or g.max_index == 0:
            return []
        size = g.index_block_size(o)
        return [Node(sb.absolute(index_block), size, lambda b: index(g, b, index_block))]

    def add(g: Geometry, data: bytes, start: int, count: int, first: int) -> None:
        count = min(count, g.max_index - first)
        if count > 0:
            add_entries(collector, sb, records(data, start, count, g.entry), g.filtered, first)

    def index(g: Geometry, data: bytes, address: int) -> list[Node]:
        expect_signature(data, b"EAIB", address)
        add(g, data, 6 + o, g.index_elements, 0)
        pos = 6 + o + g.index_elements * g.entry
        pointers = column(
            records(data, pos, len(g.super_blocks) - g.direct_super_blocks + g.direct_blocks, o),
            0,
            o,
        )
        children: list[Node] = []
        direct = iter(int(a) for a in pointers[: g.direct_blocks])
        for s in g.super_blocks[: g.direct_super_blocks]:
            for d in range(s.data_blocks):
                children += data_block(g, s, next(direct), s.first + d * s.elements, None, d)
        secondary = pointers[g.direct_blocks :]
        for s, a in zip(g.super_blocks[g.direct_super_blocks :], secondary, strict=True):
            if not sb.is_undefined(int(a)) and s.first < g.max_index:
                size = g.secondary_block_size(o, s)
                children.append(Node(sb.absolute(int(a)), size, secondary_block(g, s, int(a))))
        return children

    def secondary_block(g: Geometry, s: SuperBlock, address: int) -> Callable[[bytes], list[Node]]:
        def expand(data: bytes) -> list[Node]:
            expect_signature(data, b"EASB", address)
            pos = 6 + o + g.offset_width
            bitmap = None
            if s.pages:
                width = s.data_blocks * -(-s.pages // 8)
                bitmap, pos = data[pos : pos + width], pos + width
            blocks = column(records(data, pos, s.data_blocks, o), 0, o)
            children: list[Node] = []
            for d, a in enumerate(blocks):
                children += data_block(g, s, int(a), s.first + d * s.elements, bitmap, d)
            return children

        return expand

    def data_block(
        g: Geometry, s: SuperBlock, address: int, first: int, bitmap: bytes | None, d: int
    ) -> list[Node]:
        if sb.is_undefined(address) or first >= g.max_index:
            return []
        prefix = g.data_block_prefix(o)
        if not s.pages:
            size = prefix + s.elements * g.entry + 4

            def unpaged(data: bytes) -> list[Node]:
                expect_signature(data, b"EADB", address)
                add(g, data, prefix, s.elements, first)
                return []

            return [Node(sb.absolute(address), size, unpaged)]
        # HDF5 never reads a paged block's prefix: pages follow it and its checksum.
        page_size = g.page_elements * g.entry + 4
        nodes = []
        for p in range(s.pages):
            start = first + p * g.page_elements
            if start >= g.max_index:
                break
            if bitmap is not None and not page_initialised(bitmap, d * s.pages + p):
                continue
            at = sb.absolute(address) + prefix + 4 + p * page_size

            def page(data: bytes, start: int = start) -> list[Node]:
                add(g, data, 0, g.page_elements, start)
                return []

            nodes.append(Node(at, page_size, page))
        return nodes

    return walk_nodes([Node(sb.absolute(header_address), header_size(sb), header)], collector)
