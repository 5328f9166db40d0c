"""Recognising a chunk-index root from the bytes h5py reads, and the cache of prefetched ranges.

HDF5 reads an index one node at a time, depth first (§5 of the notes). When a read turns out to
be an index root, the whole index is walked level by level with one concurrent batch per level,
so h5py's later node reads are all served from memory.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from ..format import btree_v2, extensible_array, fixed_array
from ..format.binary import uint
from ..format.btree_v1 import rank_from_node_size, walk_btree1
from ..format.checksum import checksum_ok

if TYPE_CHECKING:
    from ..format.index_walk import Walk
    from ..format.superblock import Superblock

__all__ = ["INDEX_SIGNATURES", "ConnectionsAhead", "RangeCache", "recognise_index"]

INDEX_SIGNATURES = (b"TREE", b"BTHD", b"FAHD", b"EAHD")
_CHUNK_TREE = 1
_CHUNK_RECORD_TYPES = (10, 11)
_ARRAY_CLIENTS = (0, 1)


def recognise_index(sb: Superblock, offset: int, data: bytes) -> Walk | None:
    """The walk of the chunk index whose root h5py just read at ``offset``, if it is one."""
    signature = data[:4]
    address = offset - sb.base
    if len(data) < 8 or signature not in INDEX_SIGNATURES:
        return None
    if signature == b"TREE":
        # HDF5 reads a v1 B-tree node whole, so the read size tells the rank. No checksum here:
        # check what can be checked.
        # A leaf root has nothing to prefetch.
        rank = rank_from_node_size(sb, len(data))
        if data[4] != _CHUNK_TREE or data[5] == 0 or rank is None:
            return None
        if uint(data, 6, 2) > 2 * sb.chunk_btree_k:
            return None
        return walk_btree1(sb, address, rank)
    # The newer headers end in a checksum: a read that merely starts with the signature (say,
    # raw chunk data) must not send the prefetcher after sizes it made up.
    if signature == b"BTHD":
        size, ok = btree_v2.header_size(sb), data[5] in _CHUNK_RECORD_TYPES
        walk = btree_v2.walk_btree2
    elif signature == b"FAHD":
        size, ok = fixed_array.header_size(sb), data[5] in _ARRAY_CLIENTS
        walk = fixed_array.walk_fixed_array
    else:
        size, ok = extensible_array.header_size(sb), data[5] in _ARRAY_CLIENTS
        walk = extensible_array.walk_extensible_array
    if not ok or len(data) < size or not checksum_ok(data[:size]):
        return None
    return walk(sb, address)


class RangeCache:
    """Fetched byte ranges kept for the life of the file (index bytes are MBs, not GBs)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._data: dict[int, bytes] = {}
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._starts)

    def add(self, offset: int, data: bytes) -> None:
        old = self._data.get(offset)
        if old is not None and len(old) >= len(data):
            return
        if old is None:
            bisect.insort(self._starts, offset)
        self.bytes += len(data) - (len(old) if old is not None else 0)
        self._data[offset] = data

    def get(self, offset: int, size: int) -> bytes | None:
        """The bytes of ``[offset, offset + size)`` if one cached range holds all of them."""
        i = bisect.bisect_right(self._starts, offset) - 1
        # Ranges may overlap; a few neighbours to the left are enough in practice.
        for j in range(i, max(i - 8, -1), -1):
            start = self._starts[j]
            data = self._data[start]
            if offset + size <= start + len(data):
                lo = offset - start
                return data[lo : lo + size]
        return None


WARM_ABOVE = 0.08
"""Seconds of the first request (set-up and a round trip) above which `ConnectionsAhead` opens
connections ahead: about 40 ms of latency. Below it, on the benchmark's loopback, opening them
early gained nothing measurable (their CPU lands on the round before the leaves)."""


class ConnectionsAhead:
    """How many connections to open ahead of an index's widest level, and when.

    At high latency a connection's set-up (TCP, TLS) costs a round trip or two. The leaves of a
    B-tree are its widest level, needing as many connections as requests can be in flight;
    opened when the leaves are asked for, their set-up is a round of its own. Told the widest
    round to come (`expect`), the first narrow round before it (the roots, or the level above
    the leaves) opens the connections the wide one will use, in parallel with its own
    requests, so that set-up overlaps a round already paid for."""

    def __init__(self, limit: int, first_round: float = 1.0) -> None:
        self._limit = limit
        # Where the first request (a connection's set-up and one round trip) took less than
        # this, set-up is cheap next to the CPU the extra connections cost: none ahead.
        self._worth = first_round >= WARM_ABOVE
        self._expected = 0

    def expect(self, requests: int) -> None:
        """A round of about ``requests`` requests is coming."""
        self._expected = max(self._expected, requests)

    def before_round(self, requests: int) -> int:
        """Connections to open now, beside a round of ``requests`` requests: room up to the
        limit for the wide round, leaving this round's requests (and the connection that is
        already open) their own; then nothing until told of another wide round."""
        if self._expected <= requests or not self._worth:
            return 0
        wanted = min(self._limit, self._expected) - requests - 1
        self._expected = 0
        return max(0, wanted)
