"""What one HTTP attempt hands back: the bytes, the file's size and ETag, where redirects led."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Answer"]


@dataclass(frozen=True, slots=True)
class Answer:
    """Bytes read, and what the server said about the whole file."""

    data: bytes | memoryview
    """A read-only ``memoryview`` instead only where the caller asked for one
    (`Transport.read`'s ``view``)."""
    total: int | None
    """The file's size (Content-Range's total, or the length of a whole-file answer)."""
    etag: str | None
    final: str | None = None
    """Where redirects led, when the answer came from another URL than the one asked for."""
    not_modified: bool = False
    """A ``304 Not Modified`` to a read asked with ``If-None-Match`` (no data: the caller
    has it)."""
