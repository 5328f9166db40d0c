"""Bodies of our HTTP/1.1 client whose length the head does not give: a chunked body, decoded
with strict framing as it arrives (RFC 9112 §7.1), and a body that ends when the server closes
the connection. Both grow into one buffer only up to the most bytes the request may take."""

from __future__ import annotations

import re

from shadowzarr_store.transport.errors import FramingError

__all__ = ["AnswerTooLong", "ChunkedBody", "UntilCloseBody"]

_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
"""A chunk's size: hexadecimal digits only (no sign, no space, no 0x), under 2**60."""
_MAX_LINE = 4096
"""The longest chunk-size line (with its extensions) or trailer line taken."""
_MAX_TRAILERS = 64 * 1024


class AnswerTooLong(Exception):
    """The body is longer than the request may take (its ``most``); carries what is known of
    its length (a ``Content-Length``, or how far a growing body got) and the answer's status."""

    def __init__(self, length: int, status: int | None = None) -> None:
        super().__init__(length)
        self.length, self.status = length, status


class ChunkedBody:
    """A ``Transfer-Encoding: chunked`` body, fed as it arrives; `done` once its last chunk
    and trailers are in. Anything but hex sizes, CRLF (or LF) after each chunk's data and a
    blank line after the trailers is a `FramingError`."""

    __slots__ = ("_left", "_most", "_pending", "_state", "_trailers", "data", "done", "extra")

    def __init__(self, most: int | None) -> None:
        self.data = bytearray()
        self.done = False
        self.extra = False
        """Bytes came after the body's end (the connection cannot be used again)."""
        self._most = most
        self._pending = bytearray()
        self._state = "size"
        self._left = 0
        self._trailers = 0

    def feed(self, piece: bytes | memoryview) -> None:
        if self.done:
            self.extra = self.extra or len(piece) > 0
            return
        self._pending += piece
        at = 0
        pending = self._pending
        while not self.done:
            if self._state == "data":
                take = min(self._left, len(pending) - at)
                self.data += pending[at : at + take]
                at += take
                self._left -= take
                if self._left:
                    break
                self._state = "data-end"
                continue
            line_end = pending.find(b"\n", at)
            if line_end < 0:
                if len(pending) - at > _MAX_LINE:
                    raise FramingError("a chunked body's line longer than 4 KiB")
                break
            line = bytes(pending[at:line_end])
            at = line_end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if b"\r" in line:
                raise FramingError("a bare CR in a chunked body's framing")
            self._line(line)
        del pending[:at]
        if self.done and pending:
            self.extra = True
            pending.clear()

    def _line(self, line: bytes) -> None:
        if self._state == "data-end":
            if line:
                raise FramingError("a chunk longer than its size said")
            self._state = "size"
        elif self._state == "size":
            size_text = line.split(b";", 1)[0].rstrip(b" \t")
            if _CHUNK_SIZE.fullmatch(size_text) is None:
                raise FramingError(f"an unreadable chunk size {line[:40]!r}")
            size = int(size_text, 16)
            if self._most is not None and len(self.data) + size > self._most:
                raise AnswerTooLong(len(self.data) + size)
            self._left = size
            self._state = "data" if size else "trailers"
        else:  # trailers, ignored, up to the blank line that ends the body
            self._trailers += len(line) + 2
            if self._trailers > _MAX_TRAILERS:
                raise FramingError("a chunked body's trailers longer than 64 KiB")
            self.done = not line


class UntilCloseBody:
    """A body with neither ``Content-Length`` nor ``Transfer-Encoding``: it ends when the
    server closes the connection (RFC 9112 §6.3)."""

    __slots__ = ("_most", "data", "done", "extra")

    def __init__(self, most: int | None) -> None:
        self.data = bytearray()
        self.done = False
        self.extra = False
        self._most = most

    def feed(self, piece: bytes | memoryview) -> None:
        if self._most is not None and len(self.data) + len(piece) > self._most:
            raise AnswerTooLong(len(self.data) + len(piece))
        self.data += piece
