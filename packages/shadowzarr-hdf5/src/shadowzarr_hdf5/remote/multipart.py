"""Parsing ``multipart/byteranges`` answers to multi-range requests (RFC 9110 §14.6).

Bodies are binary, so parts are cut by their Content-Range lengths, never by searching for the
boundary inside them.
"""

from __future__ import annotations

import re

from .errors import RangeRequestError

__all__ = ["boundary_of", "parse_byteranges"]

_BOUNDARY = re.compile(r'boundary="?([^";]+)"?', re.IGNORECASE)
_PART_RANGE = re.compile(rb"(?im)^content-range:\s*bytes (\d+)-(\d+)/(\d+|\*)\s*$")


def boundary_of(content_type: str) -> str | None:
    """The boundary of a ``multipart/byteranges`` content type, else None."""
    if not content_type.lower().startswith("multipart/byteranges"):
        return None
    match = _BOUNDARY.search(content_type)
    return match[1] if match else None


def parse_byteranges(body: bytes, boundary: str) -> list[tuple[int, int | None, bytes]]:
    """Return ``(first byte, total size or None, bytes)`` of every part."""
    delimiter = b"--" + boundary.encode("latin-1")
    parts: list[tuple[int, int | None, bytes]] = []
    pos = body.find(delimiter)
    while pos >= 0:
        pos += len(delimiter)
        if body[pos : pos + 2] == b"--":
            return parts
        head_end = body.find(b"\r\n\r\n", pos)
        if head_end < 0:
            break
        match = _PART_RANGE.search(body, pos, head_end + 2)
        if match is None:
            raise RangeRequestError("a multipart/byteranges part has no Content-Range")
        first, last = int(match[1]), int(match[2])
        total = None if match[3] == b"*" else int(match[3])
        start, end = head_end + 4, head_end + 4 + last - first + 1
        if end > len(body):
            raise RangeRequestError("a multipart/byteranges part is truncated")
        parts.append((first, total, body[start:end]))
        pos = body.find(delimiter, end)
    raise RangeRequestError("multipart/byteranges body ends without its closing boundary")
