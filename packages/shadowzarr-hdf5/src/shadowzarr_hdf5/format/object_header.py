"""Object headers (v1 and v2, with continuation blocks): the messages of one object.

Reads mimic the library: a speculative 512-byte read at the header address, then every
continuation block of a round in one concurrent batch.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .binary import uint
from .errors import Hdf5FormatError
from .index_walk import drive

if TYPE_CHECKING:
    from collections.abc import Generator

    from .byte_source import RangeFetcher
    from .superblock import Superblock

__all__ = [
    "DATASPACE",
    "LAYOUT",
    "Message",
    "ObjectHeader",
    "header_walk",
    "read_object_header",
    "read_object_headers",
]

DATASPACE = 0x01
LAYOUT = 0x08
FILTER_PIPELINE = 0x0B
CONTINUATION = 0x10
_SPECULATIVE_READ = 512


@dataclass(frozen=True, slots=True)
class Message:
    """One header message: its type, flags and raw data."""

    type: int
    flags: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ObjectHeader:
    """The messages of one object, from all of its blocks, in file order."""

    address: int
    version: int
    messages: tuple[Message, ...]

    def find(self, message_type: int) -> Message | None:
        for message in self.messages:
            if message.type == message_type:
                return message
        return None


def read_object_header(source: RangeFetcher, sb: Superblock, address: int) -> ObjectHeader:
    """Read the header at ``address`` (relative) with all its continuation blocks."""
    return read_object_headers(source, sb, [address])[0]


def read_object_headers(
    source: RangeFetcher, sb: Superblock, addresses: list[int]
) -> list[ObjectHeader]:
    """Read many headers in lockstep: one batch for all first blocks, one per continuation depth."""
    return drive([header_walk(sb, address) for address in addresses], source.fetch_many)


def header_walk(
    sb: Superblock, address: int
) -> Generator[list[tuple[int, int]], list[bytes], ObjectHeader]:
    """Yield the ranges of the header's next blocks, receive their bytes, return the header."""
    start = sb.absolute(address)
    (head,) = yield [(start, _SPECULATIVE_READ)]
    if head[:4] == b"OHDR":
        version, (lo, hi) = 2, _v2_first_block(head)
        # Message headers carry a 2-byte creation order when the header flags say so.
        head_len = 6 if head[5] & 0x04 else 4
    elif head and head[0] == 1:
        version, lo, hi, head_len = 1, 16, 16 + uint(head, 8, 4), 8
    else:
        raise Hdf5FormatError(f"no object header at address {address}")
    if hi > len(head):
        (head,) = yield [(start, hi + 4)]
    messages: list[Message] = []
    pending = _parse_messages(head, lo, hi, head_len, sb, messages)
    while pending:
        blocks = yield [(sb.absolute(a), n) for a, n in pending]
        next_pending: list[tuple[int, int]] = []
        for (addr, length), block in zip(pending, blocks, strict=True):
            if version == 2:
                if block[:4] != b"OCHK":
                    raise Hdf5FormatError(f"no OCHK continuation block at address {addr}")
                lo, hi = 4, length - 4
            else:
                lo, hi = 0, length
            next_pending += _parse_messages(block, lo, hi, head_len, sb, messages)
        pending = next_pending
    return ObjectHeader(address, version, tuple(messages))


def _v2_first_block(head: bytes) -> tuple[int, int]:
    flags = head[5]
    pos = 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
    width = 1 << (flags & 0x03)
    size = uint(head, pos, width)
    return pos + width, pos + width + size


_V1_PREFIX = struct.Struct("<HHB")
"""Version 1 message header: type, size, flags (then 3 reserved bytes)."""
_V2_PREFIX = struct.Struct("<BHB")
"""Version 2 message header: type, size, flags (then, maybe, a creation order)."""


def _parse_messages(
    block: bytes, lo: int, hi: int, head_len: int, sb: Superblock, out: list[Message]
) -> list[tuple[int, int]]:
    """Append the messages of ``block[lo:hi]``; return the continuation blocks it points to."""
    if hi > len(block):
        raise Hdf5FormatError(f"object header block of {hi} bytes truncated to {len(block)}")
    continuations: list[tuple[int, int]] = []
    pos = lo
    prefix = _V1_PREFIX if head_len == 8 else _V2_PREFIX
    while pos + head_len <= hi:
        mtype, size, flags = prefix.unpack_from(block, pos)
        data = bytes(block[pos + head_len : pos + head_len + size])
        pos += head_len + size
        if mtype == CONTINUATION:
            o = sb.offset_size
            continuations.append((uint(data, 0, o), uint(data, o, sb.length_size)))
        elif mtype != 0:
            out.append(Message(mtype, flags, data))
    return continuations
