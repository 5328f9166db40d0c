"""The data layout message (versions 3, 4 and 5): compact, contiguous or chunked storage.

`parse_layout` says which (and where contiguous data is); `parse_chunked_layout` reads what a
chunked dataset's index needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from .binary import uint
from .errors import Hdf5FormatError, NotChunkedError, NotNative

if TYPE_CHECKING:
    from .superblock import Superblock

__all__ = ["ChunkedLayoutMessage", "IndexKind", "Layout", "parse_chunked_layout", "parse_layout"]

_CHUNKED = 2
_SINGLE_CHUNK_FILTERED = 0x02  # the spec says bit 0; the library writes and reads bit 1


class IndexKind(IntEnum):
    """Chunk index types; the v1 B-tree (layout version 3) has no number of its own, so 0."""

    BTREE_V1 = 0
    SINGLE_CHUNK = 1
    IMPLICIT = 2
    FIXED_ARRAY = 3
    EXTENSIBLE_ARRAY = 4
    BTREE_V2 = 5


@dataclass(frozen=True, slots=True)
class ChunkedLayoutMessage:
    """Where a chunked dataset's index is, and the parameters its kind needs."""

    version: int
    kind: IndexKind
    chunk_shape: tuple[int, ...]
    element_size: int
    address: int
    """Index root (or the chunk itself for single chunk / implicit), relative to the base."""
    params: tuple[int, ...] = ()
    """Index information bytes, e.g. the extensible array's five creation parameters."""
    single_size: int | None = None
    """Stored size of a filtered single chunk."""
    single_mask: int = 0

    @property
    def chunk_bytes(self) -> int:
        """Size of an unfiltered chunk."""
        return math.prod(self.chunk_shape) * self.element_size


def parse_chunked_layout(data: bytes, sb: Superblock) -> ChunkedLayoutMessage:
    """Decode a layout message; compact, contiguous and virtual layouts raise NotChunkedError."""
    o = sb.offset_size
    version, layout_class = data[0], data[1]
    if version < 3:
        raise Hdf5FormatError(f"data layout message version {version} (HDF5 < 1.6.3)")
    if layout_class != _CHUNKED:
        raise NotChunkedError(f"layout class {layout_class} is not chunked")
    if version == 3:
        ndims = data[2]
        address = uint(data, 3, o)
        dims = [uint(data, 3 + o + 4 * i, 4) for i in range(ndims)]
        return ChunkedLayoutMessage(3, IndexKind.BTREE_V1, tuple(dims[:-1]), dims[-1], address)
    if version not in (4, 5):
        raise Hdf5FormatError(f"data layout message version {version} is not supported")
    flags, ndims, width = data[2], data[3], data[4]
    dims = [uint(data, 5 + width * i, width) for i in range(ndims)]
    pos = 5 + width * ndims
    kind = IndexKind(data[pos])
    pos += 1
    single_size, single_mask = None, 0
    params: tuple[int, ...] = ()
    if kind == IndexKind.SINGLE_CHUNK and flags & _SINGLE_CHUNK_FILTERED:
        single_size = uint(data, pos, sb.length_size)
        single_mask = uint(data, pos + sb.length_size, 4)
        pos += sb.length_size + 4
    elif kind == IndexKind.FIXED_ARRAY:
        params, pos = (data[pos],), pos + 1
    elif kind == IndexKind.EXTENSIBLE_ARRAY:
        params, pos = tuple(data[pos : pos + 5]), pos + 5
    elif kind == IndexKind.BTREE_V2:
        params, pos = (uint(data, pos, 4), data[pos + 4], data[pos + 5]), pos + 6
    address = uint(data, pos, o)
    return ChunkedLayoutMessage(
        version, kind, tuple(dims[:-1]), dims[-1], address, params, single_size, single_mask
    )


@dataclass(frozen=True, slots=True)
class Layout:
    kind: str
    """'compact', 'contiguous' or 'chunked'."""
    address: int | None = None
    """Contiguous data's address (None when never written)."""
    size: int = 0
    chunks: tuple[int, ...] | None = None
    compact_data: bytes = b""


def parse_layout(data: bytes, superblock: Superblock) -> Layout:
    """Data layout message versions 3 to 5: compact, contiguous, or chunked (whose message the
    chunk-index reader parses; version 5, HDF5 2.0's filtered chunks, differs from 4 only
    inside the index)."""
    if len(data) < 2 or data[0] not in (3, 4, 5):
        raise NotNative(f"layout message version {data[0] if data else None}")
    offset_size, length_size = superblock.offset_size, superblock.length_size
    cls = data[1]
    if cls == 0:
        size = uint(data, 2, 2)
        return Layout("compact", size=size, compact_data=bytes(data[4 : 4 + size]))
    if cls == 1:
        address = uint(data, 2, offset_size)
        size = uint(data, 2 + offset_size, length_size)
        undefined = address == (1 << (8 * offset_size)) - 1
        return Layout("contiguous", address=None if undefined else address, size=size)
    if cls == 2:
        chunked = parse_chunked_layout(data, superblock)
        return Layout("chunked", chunks=chunked.chunk_shape)
    raise NotNative(f"layout class {cls}")
