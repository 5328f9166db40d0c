"""How much a run of Zstandard frames decodes to, read from frame and block headers only.

numcodecs' ``Zstd.decode`` allocates the content size the frames state, or, when a frame states
none, grows its output while streaming (with a window buffer as large as the frame asks for).
Both are bounded here before the decoder runs: a frame that states its content size is held
to it by the decoder; one that does not is bounded by its blocks (raw and RLE blocks state their
size, a compressed block decodes to at most the block maximum), so the bound may exceed the real
size by under one block: that much slack is returned with it. The zstd library itself checks
everything else (it is fuzzed continuously upstream).
"""

from __future__ import annotations

from typing import Final

from shadowzarr_spec.errors import ChunkDecodeError

__all__ = ["ZSTD_BLOCK_MAX", "zstd_decoded_bound"]

ZSTD_BLOCK_MAX: Final = 128 << 10
_MAGIC: Final = 0xFD2FB528
_SKIPPABLE: Final = 0x184D2A50
WINDOW_FLOOR: Final = 32 << 20
"""An unsized frame may ask for a window of at most max(this, the decoded bound)."""


def zstd_decoded_bound(data: bytes | memoryview, limit: int) -> tuple[int, int]:
    """(at most how many bytes the frames decode to, by how much that may exceed the truth).

    Raises `ChunkDecodeError` when the frames are malformed, or an unsized frame asks for a
    window larger than ``max(limit, 32 MiB)`` (what the decoder would allocate before any
    output).
    """
    view = memoryview(data).cast("B")
    try:
        return _bound(view, max(limit, WINDOW_FLOOR))
    except IndexError:
        raise _invalid("the frame ends early") from None


def _bound(view: memoryview, max_window: int) -> tuple[int, int]:
    position, total, unsized = 0, 0, False
    if not view:
        raise _invalid("no frame")
    while position < len(view):
        if len(view) - position < 4:
            raise _invalid("trailing bytes after the last frame")
        magic = int.from_bytes(view[position : position + 4], "little")
        if magic & 0xFFFFFFF0 == _SKIPPABLE:
            if len(view) - position < 8:
                raise IndexError("skippable frame header")
            position += 8 + int.from_bytes(view[position + 4 : position + 8], "little")
            if position > len(view):
                raise IndexError("skippable frame")
            continue
        if magic != _MAGIC:
            raise _invalid(f"no zstd frame at byte {position}")
        descriptor = view[position + 4]
        if descriptor & 0x08:
            raise _invalid("reserved bit set in a frame header")
        position += 5
        single_segment = bool(descriptor & 0x20)
        window: int | None = None
        if not single_segment:
            exponent, mantissa = view[position] >> 3, view[position] & 7
            base = 1 << (10 + exponent)
            window = base + (base >> 3) * mantissa
            position += 1
        position += (0, 1, 2, 4)[descriptor & 3]  # dictionary id
        content_bytes = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
        content_size: int | None = None
        if content_bytes:
            field = view[position : position + content_bytes]
            if len(field) < content_bytes:
                raise IndexError("frame header")
            content_size = int.from_bytes(field, "little") + (256 if content_bytes == 2 else 0)
            position += content_bytes
        if content_size is None and window is not None and window > max_window:
            raise _invalid(f"an unsized frame asks for a window of {window} bytes")
        block_max = min(window if window is not None else content_size or 0, ZSTD_BLOCK_MAX)
        blocks, position = _blocks(view, position, block_max)
        if descriptor & 0x04:
            position += 4  # content checksum
            if position > len(view):
                raise IndexError("checksum")
        if content_size is None:
            unsized = True
        total += blocks if content_size is None else content_size
    # An unsized frame's last block may be counted whole although it is short.
    return total, ZSTD_BLOCK_MAX if unsized else 0


def _blocks(view: memoryview, position: int, block_max: int) -> tuple[int, int]:
    """Upper bound of what a frame's blocks decode to, and where the frame's blocks end."""
    bound = 0
    while True:
        if len(view) - position < 3:
            raise IndexError("block header")
        header = int.from_bytes(view[position : position + 3], "little")
        position += 3
        block_type, size = (header >> 1) & 3, header >> 3
        if block_type == 0:  # raw
            bound, position = bound + size, position + size
        elif block_type == 1:  # RLE: one byte repeated size times
            bound, position = bound + size, position + 1
        elif block_type == 2:
            bound, position = bound + block_max, position + size
        else:
            raise _invalid("reserved block type")
        if position > len(view):
            raise IndexError("block")
        if header & 1:
            return bound, position


def _invalid(why: str) -> ChunkDecodeError:
    return ChunkDecodeError(f"not valid zstd data: {why}")
