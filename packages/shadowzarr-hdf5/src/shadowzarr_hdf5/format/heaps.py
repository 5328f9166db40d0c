"""Global heap collections (variable-length strings) and local heaps (symbol-table names)."""

from __future__ import annotations

from collections.abc import Callable

from .binary import uint
from .errors import NotNative

__all__ = ["GlobalHeap", "local_heap_data"]

ReadAt = Callable[[int, int], bytes]


class GlobalHeap:
    """Objects of global heap collections, each collection parsed once."""

    def __init__(self, read_at: ReadAt, offset_size: int, length_size: int) -> None:
        self._read_at = read_at
        self._o, self._l = offset_size, length_size
        self._collections: dict[int, dict[int, bytes]] = {}

    def get(self, collection: int, index: int) -> bytes:
        objects = self._collections.get(collection)
        if objects is None:
            objects = self._collections[collection] = self._parse(collection)
        try:
            return objects[index]
        except KeyError:
            raise NotNative(f"global heap object {index} missing at {collection}") from None

    def _parse(self, address: int) -> dict[int, bytes]:
        ln = self._l
        head = self._read_at(address, 8 + ln)
        if head[:4] != b"GCOL" or head[4] != 1:
            raise NotNative(f"no global heap collection at {address}")
        size = uint(head, 8, ln)
        block = self._read_at(address, size)
        if len(block) != size:
            raise NotNative(f"global heap collection at {address} truncated")
        objects: dict[int, bytes] = {}
        pos = 8 + ln
        while pos + 8 + ln <= size:
            index = uint(block, pos, 2)
            length = uint(block, pos + 8, ln)
            if index == 0:  # free space: the rest of the collection
                break
            start = pos + 8 + ln
            objects[index] = bytes(block[start : start + length])
            pos = start + ((length + 7) & ~7)
        return objects


def local_heap_data(read_at: ReadAt, address: int, offset_size: int, length_size: int) -> bytes:
    """The data segment of the local heap at ``address`` (names of a symbol-table group)."""
    ln, o = length_size, offset_size
    head = read_at(address, 8 + 2 * ln + o)
    if head[:4] != b"HEAP" or head[4] != 0:
        raise NotNative(f"no local heap at {address}")
    size = uint(head, 8, ln)
    data_address = uint(head, 8 + 2 * ln, o)
    data = read_at(data_address, size)
    if len(data) != size:
        raise NotNative(f"local heap data at {data_address} truncated")
    return data
