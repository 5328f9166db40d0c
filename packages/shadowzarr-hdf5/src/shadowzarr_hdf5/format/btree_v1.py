"""Version 1 B-tree chunk index (``TREE``, node type 1): layout version 3, libver earliest."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .binary import column, expect_signature
from .errors import Hdf5FormatError
from .index_walk import Collector, Walk

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
    """Walk a chunk B-tree from its root (relative address); records keep element offsets.

    A level's nodes are decoded together, as one array: node by node, the numpy calls cost
    more than the request that fetched the node (2,700 leaves of a fragmented file)."""
    size = node_size(sb, rank)
    collector = Collector(key_shape=(rank + 1,))
    level = [root]
    while level:
        blobs = yield [(sb.absolute(address), size) for address in level]
        rows, is_leaf = _level_records(sb, rank, level, blobs, size)
        children = column(rows, key_size(rank), sb.offset_size)
        if is_leaf.any():
            leaf = rows[is_leaf]
            offsets = np.ascontiguousarray(leaf[:, 8 : 16 + 8 * rank]).view("<u8")
            collector.add(
                children[is_leaf] + sb.base,
                offsets.reshape(-1, rank + 1),
                sizes=column(leaf, 0, 4),
                masks=column(leaf, 4, 4),
            )
        level = [int(child) for child in children[~is_leaf]]
    return collector.finish()


def _level_records(
    sb: Superblock, rank: int, level: list[int], blobs: list[bytes], size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every (key, child) record of the nodes of one level, in order, as a (n, width) uint8
    array, and for each whether its node is a leaf."""
    o, k2 = sb.offset_size, 2 * sb.chunk_btree_k
    width, first = key_size(rank) + o, 8 + 2 * o
    joined = b"".join(blob[:size].ljust(size, b"\0") for blob in blobs)
    nodes = np.frombuffer(joined, np.uint8).reshape(len(blobs), size)
    used = nodes[:, 6].astype(np.int64) | (nodes[:, 7].astype(np.int64) << 8)
    room = np.array([(len(blob) - first) // width for blob in blobs])
    bad = (
        (nodes[:, :4] != np.frombuffer(b"TREE", np.uint8)).any(axis=1)
        | (nodes[:, 4] != _CHUNK_TREE)
        | (used > np.minimum(room, k2))
    )
    if bad.any():
        i = int(np.argmax(bad))
        address, blob = level[i], blobs[i]
        expect_signature(blob, b"TREE", address)
        if blob[4] != _CHUNK_TREE:
            raise Hdf5FormatError(f"B-tree at {address} is of node type {blob[4]}, not chunks")
        raise Hdf5FormatError(
            f"B-tree node at {address} claims {int(used[i])} entries, room for {min(room[i], k2)}"
        )
    entries = nodes[:, first : first + k2 * width].reshape(len(blobs), k2, width)
    rows = entries[np.arange(k2) < used[:, None]]
    return rows, np.repeat(nodes[:, 5] == 0, used)
