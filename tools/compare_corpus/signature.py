"""What marks an HDF5 file: its signature, at 0 or after a user block."""

from __future__ import annotations

from pathlib import Path

SIGNATURE = b"\x89HDF\r\n\x1a\n"


def is_hdf5(path: Path) -> bool:
    """The HDF5 signature at 0, 512, 1024, 2048, … (a user block before the superblock)."""
    with path.open("rb") as f:
        offset = 0
        while True:
            f.seek(offset)
            head = f.read(8)
            if len(head) < 8:
                return False
            if head == SIGNATURE:
                return True
            offset = 512 if offset == 0 else offset * 2


def has_signature(data: bytes) -> bool:
    """``is_hdf5`` for bytes in memory."""
    offset = 0
    while offset + 8 <= len(data):
        if data[offset : offset + 8] == SIGNATURE:
            return True
        offset = 512 if offset == 0 else offset * 2
    return False
