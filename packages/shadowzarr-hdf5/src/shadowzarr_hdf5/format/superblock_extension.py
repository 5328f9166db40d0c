"""The superblock with its extension: v2/3 superblocks keep non-default B-tree K values in an
object header (the extension), so reading them needs the object-header reader, which itself
needs the superblock's field widths; this module sits above both."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .binary import uint
from .object_header import read_object_header
from .superblock import Superblock, read_superblock_fields

if TYPE_CHECKING:
    from .byte_source import RangeFetcher

__all__ = ["read_superblock"]

_BTREE_K_MESSAGE = 0x13


def read_superblock(source: RangeFetcher) -> Superblock:
    """Parse the superblock (versions 0–3), including a v2/3 extension's B-tree K message."""
    block = read_superblock_fields(source)
    if block.extension_address is None:
        return block
    header = read_object_header(source, block, block.extension_address)
    for message in header.messages:
        if message.type == _BTREE_K_MESSAGE:
            return replace(block, chunk_btree_k=uint(message.data, 1, 2))
    return block
