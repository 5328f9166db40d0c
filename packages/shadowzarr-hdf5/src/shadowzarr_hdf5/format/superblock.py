"""The HDF5 superblock: where the file starts (user block), field widths, the root object header."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .binary import uint, undefined
from .errors import Hdf5FormatError

if TYPE_CHECKING:
    from .byte_source import RangeFetcher

__all__ = ["SIGNATURE", "Superblock", "read_superblock_fields"]

SIGNATURE = b"\x89HDF\r\n\x1a\n"
_DEFAULT_CHUNK_BTREE_K = 32


@dataclass(frozen=True, slots=True)
class Superblock:
    """What every other structure needs from the superblock."""

    version: int
    base: int
    """Absolute offset that file addresses are relative to (512 in MATLAB files)."""
    offset_size: int
    """'Size of Offsets' (O)."""
    length_size: int
    """'Size of Lengths' (L)."""
    root_address: int
    """Root group object header, relative to ``base``."""
    chunk_btree_k: int
    """K of v1 chunk B-trees: nodes hold up to 2K children."""
    extension_address: int | None = None

    def absolute(self, address: int) -> int:
        """File offset of a (relative) HDF5 address."""
        return self.base + address

    def is_undefined(self, address: int) -> bool:
        return address == undefined(self.offset_size)


def _locate(source: RangeFetcher) -> tuple[int, bytes]:
    """Find the signature at 0, 512, 1024, 2048, … and return its offset and 128 bytes."""
    offset = 0
    while offset + len(SIGNATURE) <= source.size:
        (head,) = source.fetch_many([(offset, 128)])
        if head.startswith(SIGNATURE):
            return offset, head
        offset = 512 if offset == 0 else offset * 2
    raise Hdf5FormatError("no HDF5 signature at 0, 512, 1024, …: not an HDF5 file")


def read_superblock_fields(source: RangeFetcher) -> Superblock:
    """Parse the superblock (versions 0–3) itself; ``chunk_btree_k`` is the default when a
    v2/3 extension may hold another (`superblock_extension.read_superblock` reads it)."""
    at, head = _locate(source)
    version = head[8]
    if version in (0, 1):
        o, ln = head[13], head[14]
        k = uint(head, 24, 2) if version == 1 else _DEFAULT_CHUNK_BTREE_K
        pos = 24 if version == 0 else 28
        # base, free-space, EOF, driver info; then the root symbol-table entry: name, header.
        root = uint(head, pos + 4 * o + o, o)
        ext = None
    elif version in (2, 3):
        o, ln = head[9], head[10]
        ext_addr = uint(head, 12 + o, o)
        root = uint(head, 12 + 3 * o, o)
        ext = None if ext_addr == undefined(o) else ext_addr
        k = _DEFAULT_CHUNK_BTREE_K
    else:
        raise Hdf5FormatError(f"superblock version {version} is not supported")
    if o not in (2, 4, 8) or ln not in (2, 4, 8):
        raise Hdf5FormatError(f"unusual field sizes O={o}, L={ln}")
    # Like the library, take the superblock's own offset as the base address, whatever the
    # stored field says: a user block (MATLAB's 512 bytes) shifts every address by it.
    return Superblock(version, at, o, ln, root, k, ext)
