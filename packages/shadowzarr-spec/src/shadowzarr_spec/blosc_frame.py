"""Checking a Blosc (version 1 format) frame before a native decoder sees it.

numcodecs' ``Blosc.decode`` trusts the frame's 16-byte header: it allocates what the header's
``nbytes`` says, and c-blosc bounds its reads by the header's ``cbytes`` rather than by the
buffer it was handed. A frame of a hundred bytes that claims a gigabyte of compressed bytes and
block offsets far away makes the decoder read outside its buffer (a segmentation fault). So
every Blosc frame is walked here first, exactly as c-blosc 1.21 walks it while decoding:

- the header: format version 2 (the only one c-blosc 1.x decodes), no reserved flag bits, a
  compressor numcodecs' c-blosc was built with, a type size of 1 to 255, ``nbytes`` within the
  caller's bound, ``0 < blocksize <= nbytes`` and ``cbytes`` equal to the frame's length;
- a copied frame (``memcpyed`` flag) holds exactly ``nbytes`` after the header;
- otherwise the table of block starts fits the frame, and every block's streams (one, or
  ``typesize`` of them when c-blosc splits the block) each state a size that is at least 1, at
  most the part of the block it decodes, and inside the frame; blocks do not overlap and tile
  the frame after the table (what c-blosc writes, whatever its number of threads); a split
  block divides evenly (otherwise c-blosc leaves bytes of the output unwritten).

The walk is vectorised over blocks, so a hostile frame of a million tiny blocks costs
milliseconds, not a Python loop per block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from shadowzarr_spec.errors import ChunkDecodeError

__all__ = ["BLOSC_HEADER_BYTES", "BloscHeader", "check_blosc_frame", "read_blosc_header"]

BLOSC_HEADER_BYTES: Final = 16
_FORMAT_VERSION: Final = 2
_MAX_BUFFER: Final = 2**31 - 1 - BLOSC_HEADER_BYTES
_MAX_BLOCKSIZE: Final = (2**31 - 1 - 255 * 4) // 3
_DOSHUFFLE: Final = 0x01
_MEMCPYED: Final = 0x02
_DOBITSHUFFLE: Final = 0x04
_RESERVED: Final = 0x08
_DONT_SPLIT: Final = 0x10
# Compressor codes (the top three flag bits) of the c-blosc numcodecs is built with:
# blosclz, lz4 (and lz4hc), zlib, zstd. Snappy (2) is not built in.
_COMPRESSORS: Final = {0: "blosclz", 1: "lz4", 3: "zlib", 4: "zstd"}
_MAX_SPLITS: Final = 16
_MIN_BUFFERSIZE: Final = 128


@dataclass(frozen=True, slots=True)
class BloscHeader:
    """The 16-byte header of a Blosc frame."""

    version: int
    flags: int
    typesize: int
    nbytes: int
    """Decompressed size: what the decoder allocates."""
    blocksize: int
    cbytes: int
    """Size of the whole frame, header included."""

    @property
    def memcpyed(self) -> bool:
        return bool(self.flags & _MEMCPYED)

    @property
    def compressor(self) -> str | None:
        return _COMPRESSORS.get(self.flags >> 5)


def read_blosc_header(data: bytes | memoryview) -> BloscHeader:
    """The header of ``data``; `ChunkDecodeError` if it is too short to hold one."""
    view = memoryview(data).cast("B")
    if len(view) < BLOSC_HEADER_BYTES:
        raise _invalid(f"{len(view)} bytes, shorter than the {BLOSC_HEADER_BYTES}-byte header")
    return BloscHeader(
        version=view[0],
        flags=view[2],
        typesize=view[3],
        nbytes=int.from_bytes(view[4:8], "little"),
        blocksize=int.from_bytes(view[8:12], "little"),
        cbytes=int.from_bytes(view[12:16], "little"),
    )


def check_blosc_frame(data: bytes | memoryview, max_nbytes: int) -> BloscHeader:
    """The header of a frame that c-blosc decodes within its buffer to at most ``max_nbytes``.

    Raises `ChunkDecodeError` saying what is wrong otherwise (callers add which chunk).
    """
    view = memoryview(data).cast("B")
    header = read_blosc_header(view)
    _check_header(header, len(view), max_nbytes)
    if not header.memcpyed:
        _check_blocks(np.frombuffer(view, dtype=np.uint8), header)
    return header


def _check_header(header: BloscHeader, length: int, max_nbytes: int) -> None:
    if header.version != _FORMAT_VERSION:
        raise _invalid(f"format version {header.version}; only version 2 frames can be decoded")
    if header.flags & _RESERVED:
        raise _invalid(f"reserved flag bits set (flags {header.flags:#04x})")
    if header.flags & _DOSHUFFLE and header.flags & _DOBITSHUFFLE:
        raise _invalid("both byte and bit shuffle flags set")
    if not header.memcpyed and header.compressor is None:
        raise _invalid(f"unknown or unavailable compressor code {header.flags >> 5}")
    if header.typesize == 0:
        raise _invalid("type size 0")
    if header.nbytes == 0:
        raise _invalid("it holds no data (0 bytes decompressed)")
    if header.nbytes > min(max_nbytes, _MAX_BUFFER):
        raise _invalid(
            f"it decompresses to {header.nbytes} bytes, more than the {max_nbytes} allowed"
        )
    if header.cbytes != length:
        raise _invalid(f"its header says {header.cbytes} bytes, the frame holds {length}")
    if not 0 < header.blocksize <= min(header.nbytes, _MAX_BLOCKSIZE):
        raise _invalid(f"block size {header.blocksize} for {header.nbytes} bytes")
    if header.memcpyed and header.cbytes != header.nbytes + BLOSC_HEADER_BYTES:
        raise _invalid(
            f"a copied frame of {header.nbytes} bytes must hold {header.nbytes + 16}, "
            f"it holds {header.cbytes}"
        )


def _check_blocks(frame: np.ndarray, header: BloscHeader) -> None:
    """Walk every block's streams as c-blosc's ``blosc_d`` will, for all blocks at once."""
    full, leftover = divmod(header.nbytes, header.blocksize)
    nblocks = full + (1 if leftover else 0)
    table_end = BLOSC_HEADER_BYTES + 4 * nblocks
    if table_end > header.cbytes:
        raise _invalid(f"{nblocks} block starts do not fit a frame of {header.cbytes} bytes")
    starts = frame[BLOSC_HEADER_BYTES:table_end].view("<i4").astype(np.int64)
    if starts.min() < table_end or starts.max() > header.cbytes - 4:
        raise _invalid("a block starts outside the frame")
    sizes = np.full(nblocks, header.blocksize, dtype=np.int64)
    splits = np.ones(nblocks, dtype=np.int64)
    if (
        not header.flags & _DONT_SPLIT
        and header.typesize <= _MAX_SPLITS
        and header.blocksize // header.typesize >= _MIN_BUFFERSIZE
    ):
        splits[:full] = header.typesize  # the short last block is never split
    if leftover:
        sizes[-1] = leftover
    if np.any(sizes % splits):
        raise _invalid(f"blocks of {header.blocksize} bytes do not split into {header.typesize}")
    stream_bytes = sizes // splits
    ends = starts.copy()
    for split in range(int(splits.max())):
        active = splits > split
        position = ends[active]
        if np.any(position > header.cbytes - 4):
            raise _invalid("a block stream starts outside the frame")
        size = _int32_at(frame, position)
        if np.any(size < 1) or np.any(size > stream_bytes[active]):
            raise _invalid("a block stream states a size larger than what it decodes to")
        after = position + 4 + size
        if np.any(after > header.cbytes):
            raise _invalid("a block stream ends outside the frame")
        ends[active] = after
    order = np.argsort(starts, kind="stable")
    if np.any(ends[order][:-1] > starts[order][1:]):
        raise _invalid("blocks overlap")
    if int((ends - starts).sum()) != header.cbytes - table_end:
        raise _invalid("its blocks leave bytes of the frame unread")


def _int32_at(frame: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Little-endian signed 32-bit integers at ``positions`` of a byte array."""
    value = np.zeros(len(positions), dtype=np.int64)
    for byte in range(4):
        value |= frame[positions + byte].astype(np.int64) << (8 * byte)
    return np.where(value >= 2**31, value - 2**32, value)


def _invalid(why: str) -> ChunkDecodeError:
    return ChunkDecodeError(f"not valid Blosc data: {why}")
