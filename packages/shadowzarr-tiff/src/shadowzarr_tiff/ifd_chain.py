"""Walk the IFD chain of a remote TIFF ahead of tifffile, guessing where the next IFDs are.

Each IFD says where the next one is, so the chain is a sequence of dependent reads: over HTTP
one round trip per page. But the pages of a stack are written one after another with the same
layout, so the IFDs are evenly spaced, exactly for uncompressed pages and nearly for compressed
ones (their sizes vary a little). After a few IFDs we guess the positions of the next ones,
with a window around each guess that widens like a random walk, and fetch all the windows in
one round of multi-range requests; twice as many each round (up to ``max_ahead``, as the
windows widen with the distance). What the windows held besides the IFDs is dropped from the
cache as the walk passes it, so that tifffile, parsing the file next, finds the IFDs there.
"""

from __future__ import annotations

import itertools
import math
import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowzarr_store.transport import RangeFile

__all__ = ["prefetch_ifd_chain"]

_TAIL = 1024
"""Bytes after an IFD's entries fetched with it: tifffile writes tag values there."""
_MAX_MARGIN = 16 * 1024


def prefetch_ifd_chain(
    handle: RangeFile, *, max_ifds: int = 1_000_000, max_ahead: int = 512
) -> int:
    """Read the main IFD chain of ``handle`` into its cache; return the number of IFDs."""
    header = handle.read_at(0, 16)
    if len(header) < 8 or header[:2] not in (b"II", b"MM"):
        return 0
    order = "<" if header[:2] == b"II" else ">"
    (version,) = struct.unpack(order + "H", header[2:4])
    if version == 42:
        count_format, entry_size, pointer_format = "H", 12, "I"
        (position,) = struct.unpack(order + "I", header[4:8])
    elif version == 43 and len(header) >= 16:
        count_format, entry_size, pointer_format = "Q", 20, "Q"
        (position,) = struct.unpack(order + "Q", header[8:16])
    else:
        return 0
    count_size = struct.calcsize(count_format)
    pointer_size = struct.calcsize(pointer_format)
    positions: list[int] = []
    seen: set[int] = set()
    ahead = 8
    kept: list[tuple[int, int]] = [(0, 65536)]  # (offset, size): the header and what follows
    trimmed_to = 0
    while position and position not in seen and len(positions) < max_ifds:
        if position + count_size > handle.size:
            break
        seen.add(position)
        positions.append(position)
        (entries,) = struct.unpack(order + count_format, handle.read_at(position, count_size))
        ifd_size = count_size + entries * entry_size + pointer_size
        kept.append((position, ifd_size + _TAIL))
        pointer_at = position + count_size + entries * entry_size
        if pointer_at + pointer_size > handle.size:
            break
        (following,) = struct.unpack(
            order + pointer_format, handle.read_at(pointer_at, pointer_size)
        )
        if following and not handle.cached(following, ifd_size):
            if following > trimmed_to:
                handle.trim(trimmed_to, following - trimmed_to, kept)
                trimmed_to, kept = following, []
            windows = _guesses(positions, following, ifd_size, ahead, handle.size)
            if windows:
                handle.prefetch([(start, stop - start) for start, stop in windows])
                ahead = min(ahead * 2, max_ahead)
        position = following
    return len(positions)


def _guesses(
    positions: list[int], following: int, ifd_size: int, ahead: int, size: int
) -> list[tuple[int, int]]:
    """Byte windows likely to hold the ``ahead`` IFDs from ``following`` on."""
    recent = [*positions[-16:], following]
    strides = [b - a for a, b in itertools.pairwise(recent)]
    if len(strides) < 2 or min(strides) <= 0:
        return []
    mean = sum(strides) / len(strides)
    spread = math.sqrt(sum((s - mean) ** 2 for s in strides) / len(strides))
    if spread > mean / 4:  # no regular layout to follow
        return []
    windows = []
    for step in range(ahead):
        guess = following + round(step * mean)
        margin = min(_MAX_MARGIN, 64 + int(4 * spread * math.sqrt(step)))
        start = max(0, guess - margin)
        stop = min(size, guess + ifd_size + _TAIL + margin)
        if start >= size:
            break
        windows.append((start, stop))
    return windows
