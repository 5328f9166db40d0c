"""The parts of a ``multipart/byteranges`` answer to a multi-range request (RFC 9110 §14.6).

Bodies are binary, so parts are cut by their Content-Range lengths, never by searching for the
boundary inside them. No library on the path parses this answer for a client (aiohttp's
multipart reader is for form uploads and streams parts without their byte positions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shadowzarr_store.transport.errors import FramingError

__all__ = ["Part", "boundary_of", "parse_byteranges"]

_BOUNDARY = re.compile(r'boundary="?([^";]+)"?', re.IGNORECASE)
_PART_RANGE = re.compile(rb"(?im)^content-range:\s*bytes (\d+)-(\d+)/(\d+|\*)\s*$")


@dataclass(frozen=True, slots=True)
class Part:
    start: int
    total: int | None
    data: bytes


def boundary_of(content_type: str) -> str | None:
    """The boundary of a ``multipart/byteranges`` content type, else None."""
    if not content_type.lower().startswith("multipart/byteranges"):
        return None
    match = _BOUNDARY.search(content_type)
    return match[1] if match else None


def parse_byteranges(body: bytes, boundary: str, shown: str) -> list[Part]:
    """Every part of ``body``; a malformed body is a `FramingError` naming ``shown``."""
    delimiter = b"--" + boundary.encode("latin-1")
    parts: list[Part] = []
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
            raise FramingError(f"{shown}: a multipart/byteranges part has no Content-Range")
        first, last = int(match[1]), int(match[2])
        total = None if match[3] == b"*" else int(match[3])
        start, end = head_end + 4, head_end + 4 + last - first + 1
        if last < first or end > len(body):
            raise FramingError(f"{shown}: a multipart/byteranges part is truncated")
        parts.append(Part(first, total, body[start:end]))
        pos = body.find(delimiter, end)
    raise FramingError(f"{shown}: multipart/byteranges body ends without its closing boundary")
