"""What a source's first bytes say beyond its format: text that no generator reads, and an
HDF5 file shorter than its superblock says (a partial download), both told before a generator
fails with its library's own words (h5py's message names neither the file nor the cause)."""

from __future__ import annotations

__all__ = ["hdf5_recorded_size", "looks_like_text"]

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_CONTROL = set(range(32)) - {9, 10, 12, 13}


def looks_like_text(head: bytes) -> bool:
    """Whether ``head`` reads as text (UTF-8 without NULs or control characters): an HTML
    error page, a listing, a CSV file. Empty counts as text (nothing to read either way)."""
    if not head:
        return True
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the head
            return False
        text = head[: exc.start].decode("utf-8")
    return not any(ord(char) in _CONTROL for char in text)


def hdf5_recorded_size(head: bytes) -> int | None:
    """The end-of-file address an HDF5 superblock in ``head`` records (the file is at least
    that long), or None when ``head`` holds no superblock this understands."""
    offset = 0
    while offset + len(_HDF5_SIGNATURE) <= len(head):
        if head[offset : offset + len(_HDF5_SIGNATURE)] == _HDF5_SIGNATURE:
            return _end_of_file(head, offset)
        offset = 512 if offset == 0 else offset * 2
    return None


def _end_of_file(head: bytes, at: int) -> int | None:
    """The superblock's "end of file address": after the base and free-space (versions 0 and
    1) or the base and extension (versions 2 and 3) addresses."""
    if at + 9 > len(head):
        return None
    version = head[at + 8]
    if version in (0, 1):
        if at + 14 > len(head):
            return None
        size = head[at + 13]
        first = at + (24 if version == 0 else 28)
    elif version in (2, 3):
        size = head[at + 9]
        first = at + 12
    else:
        return None
    if size not in (2, 4, 8):
        return None
    start = first + 2 * size
    if start + size > len(head):
        return None
    field = head[start : start + size]
    if field == b"\xff" * size:  # the undefined address
        return None
    return int.from_bytes(field, "little")
