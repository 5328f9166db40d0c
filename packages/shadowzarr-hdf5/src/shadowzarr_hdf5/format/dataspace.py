"""The dataspace message (versions 1 and 2), read for two different questions.

`parse_dataspace` gives the geometry a chunk index was built for (any all-ones width of max
dimension is unlimited); `dataspace_extent` gives the shape and maxshape h5py reports (only the
8-byte all-ones form is unlimited there, as HDF5 reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .binary import uint
from .errors import Hdf5FormatError, NotNative

if TYPE_CHECKING:
    from .object_header import Message
    from .superblock import Superblock

__all__ = ["Dataspace", "dataspace_extent", "parse_dataspace"]

_SHARED_FLAG = 0x02


@dataclass(frozen=True, slots=True)
class Dataspace:
    """Current and maximum extent; ``None`` in ``maxshape`` marks an unlimited dimension."""

    shape: tuple[int, ...]
    maxshape: tuple[int | None, ...]


def parse_dataspace(message: Message, sb: Superblock) -> Dataspace:
    """Decode a dataspace message (versions 1 and 2); any all-ones max dimension is unlimited."""
    if message.flags & _SHARED_FLAG:
        raise Hdf5FormatError("shared dataspace messages are not supported")
    data, ln = message.data, sb.length_size
    version, rank, flags = data[0], data[1], data[2]
    pos = 8 if version == 1 else 4
    shape = tuple(uint(data, pos + i * ln, ln) for i in range(rank))
    if flags & 0x01:
        raw = [uint(data, pos + (rank + i) * ln, ln) for i in range(rank)]
        # Any width of all-ones means unlimited (HDF5 itself misses the 4-byte case, §6.2).
        maxshape = tuple(None if v == (1 << (8 * ln)) - 1 else v for v in raw)
    else:
        maxshape = shape
    return Dataspace(shape, maxshape)


def dataspace_extent(
    data: bytes, length_size: int
) -> tuple[tuple[int, ...] | None, tuple[int | None, ...] | None]:
    """``(shape, maxshape)`` as h5py reports them; ``(None, None)`` for a null dataspace;
    ``None`` in ``maxshape`` marks an unlimited axis. (`parse_dataspace`
    answers a different question, the geometry a chunk index was built for, and reads any
    all-ones width as unlimited.)"""
    if len(data) < 4:
        raise NotNative("dataspace message too short")
    version, rank, flags = data[0], data[1], data[2]
    if version == 1:
        pos = 8
    elif version == 2:
        pos = 4
        if data[3] == 2:
            return None, None
    else:
        raise NotNative(f"dataspace version {version}")
    if version == 1 and flags & 0x02:
        raise NotNative("dataspace with a permutation")
    ln = length_size
    shape = tuple(uint(data, pos + i * ln, ln) for i in range(rank))
    if not flags & 0x01:
        return shape, shape
    # HDF5 reads an all-ones field into its 8-byte size: only the 8-byte form means unlimited.
    unlimited = (1 << 64) - 1
    raw = (uint(data, pos + (rank + i) * ln, ln) for i in range(rank))
    return shape, tuple(None if v == unlimited else v for v in raw)
