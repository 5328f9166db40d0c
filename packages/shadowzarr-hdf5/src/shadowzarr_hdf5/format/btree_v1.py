"""Version 1 B-tree chunk index (``TREE``, node type 1): layout version 3, libver earliest."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .binary import column, expect_signature, records, uint
from .errors import Hdf5FormatError
from .index_walk import Collector, Node, Walk, walk_nodes

if TYPE_CHECKING:
    from .superblock import Superblock

__all__ = ["key_size", "node_size", "rank_from_node_size", "walk_btree1"]

_CHUNK_TREE = 1


def key_size(rank: int) -> int:
    """Chunk key: stored size (4), filter mask (4), rank + 1 element offsets (8 each)."""
    return 16 + 8 * rank


def node_size(sb: Superblock, rank: int) -> int:
    """Nodes are allocated for 2K children whatever they hold, and HDF5 reads them whole."""
    k, o = sb.chunk_btree_k, sb.offset_size
    return 8 + 2 * o + 2 * k * o + (2 * k + 1) * key_size(rank)


def rank_from_node_size(sb: Superblock, size: int) -> int | None:
    """The dataspace rank implied by a whole-node read of ``size`` bytes, if any."""
    k, o = sb.chunk_btree_k, sb.offset_size
    rest = size - 8 - 2 * o - 2 * k * o
    if rest <= 0 or rest % (2 * k + 1):
        return None
    key = rest // (2 * k + 1)
    if key < 24 or (key - 16) % 8:
        return None
    return (key - 16) // 8


def walk_btree1(sb: Superblock, root: int, rank: int) -> Walk:
    """Walk a chunk B-tree from its root (relative address); records keep element offsets."""
    size = node_size(sb, rank)
    ks, o = key_size(rank), sb.offset_size
    collector = Collector(key_shape=(rank + 1,))

    def expand(address: int, blob: bytes) -> list[Node]:
        expect_signature(blob, b"TREE", address)
        if blob[4] != _CHUNK_TREE:
            raise Hdf5FormatError(f"B-tree at {address} is of node type {blob[4]}, not chunks")
        level, used = blob[5], uint(blob, 6, 2)
        rows = records(blob, 8 + 2 * o, used, ks + o)
        children = column(rows, ks, o)
        if level > 0:
            return [node(int(child)) for child in children]
        offsets = [column(rows, 8 + 8 * d, 8) for d in range(rank + 1)]
        collector.add(
            children + sb.base,
            np.stack(offsets, axis=1),
            sizes=column(rows, 0, 4),
            masks=column(rows, 4, 4),
        )
        return []

    def node(address: int) -> Node:
        return Node(sb.absolute(address), size, lambda blob: expand(address, blob))

    return walk_nodes([node(root)], collector)
