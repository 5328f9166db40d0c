"""Jenkins lookup3 ``hashlittle``, the checksum closing every newer HDF5 metadata structure.

Used to make sure a read that merely starts with ``FAHD`` (say, inside raw chunk data) is really
an index header before a prefetch trusts its sizes.
"""

from __future__ import annotations

__all__ = ["checksum_ok", "lookup3"]

_MASK = 0xFFFFFFFF


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _MASK


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - c) & _MASK
    a ^= _rot(c, 4)
    c = (c + b) & _MASK
    b = (b - a) & _MASK
    b ^= _rot(a, 6)
    a = (a + c) & _MASK
    c = (c - b) & _MASK
    c ^= _rot(b, 8)
    b = (b + a) & _MASK
    a = (a - c) & _MASK
    a ^= _rot(c, 16)
    c = (c + b) & _MASK
    b = (b - a) & _MASK
    b ^= _rot(a, 19)
    a = (a + c) & _MASK
    c = (c - b) & _MASK
    c ^= _rot(b, 4)
    b = (b + a) & _MASK
    return a, b, c


def _final(a: int, b: int, c: int) -> int:
    c ^= b
    c = (c - _rot(b, 14)) & _MASK
    a ^= c
    a = (a - _rot(c, 11)) & _MASK
    b ^= a
    b = (b - _rot(a, 25)) & _MASK
    c ^= b
    c = (c - _rot(b, 16)) & _MASK
    a ^= c
    a = (a - _rot(c, 4)) & _MASK
    b ^= a
    b = (b - _rot(a, 14)) & _MASK
    c ^= b
    c = (c - _rot(b, 24)) & _MASK
    return c


def lookup3(data: bytes, initval: int = 0) -> int:
    """``hashlittle(data, initval)`` as HDF5's ``H5_checksum_lookup3`` computes it."""
    length = len(data)
    a = b = c = (0xDEADBEEF + length + initval) & _MASK
    pos = 0
    while length - pos > 12:
        a = (a + int.from_bytes(data[pos : pos + 4], "little")) & _MASK
        b = (b + int.from_bytes(data[pos + 4 : pos + 8], "little")) & _MASK
        c = (c + int.from_bytes(data[pos + 8 : pos + 12], "little")) & _MASK
        a, b, c = _mix(a, b, c)
        pos += 12
    tail = data[pos:]
    if not tail:
        return c
    tail = tail + bytes(12 - len(tail))
    a = (a + int.from_bytes(tail[0:4], "little")) & _MASK
    b = (b + int.from_bytes(tail[4:8], "little")) & _MASK
    c = (c + int.from_bytes(tail[8:12], "little")) & _MASK
    return _final(a, b, c)


def checksum_ok(block: bytes) -> bool:
    """True when the last 4 bytes of ``block`` are the lookup3 checksum of the rest."""
    return len(block) > 4 and lookup3(block[:-4]) == int.from_bytes(block[-4:], "little")
