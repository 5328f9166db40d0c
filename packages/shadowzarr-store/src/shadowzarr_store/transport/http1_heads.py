"""An HTTP/1.1 answer's head read strictly: the status line, headers joined per name (so two
Content-Lengths are no length), whether the connection may be used again, and a Content-Length
of ASCII digits only. A head that breaks RFC 9112's rules is refused, never cleaned."""

from __future__ import annotations

import re

from shadowzarr_store.transport.errors import FramingError
from shadowzarr_store.transport.head_values import escaped, is_header_name

__all__ = ["HEAD_END", "MAX_INTERIM", "Head", "content_length", "parse_head"]


class Head:
    """Status and headers (names in lower case) of an answer."""

    __slots__ = ("headers", "status")

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status, self.headers = status, headers


HEAD_END = re.compile(rb"\n\r?\n")
"""The blank line ending a head: CRLF line ends, or bare LF ones (RFC 9112 §2.2 lets a
recipient take LF alone as a line end)."""
_STATUS_LINE = re.compile(r"HTTP/1\.[01] ([1-5][0-9][0-9])(?: .*)?")
MAX_INTERIM = 16
"""The most 1xx answers (``100 Continue``, ``103 Early Hints``) taken before the final one."""


_HEAD = re.compile(
    r"HTTP/1\.[01] [1-5][0-9][0-9](?: [^\r\n]*)?\r?(?:\n[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\r\n]*\r?)*"
)
"""A head that `parse_head`'s line by line reading takes, in one match: a status line, then
lines of a token, a colon and a value, each ending in LF or CRLF, no CR elsewhere."""
_FIELD = re.compile(r"\n([^:]*):([^\n]*)")
"""A header line of a head `_HEAD` matched: its name and its value (a CR at its end)."""


def parse_head(raw: bytes | bytearray) -> tuple[Head, bool]:
    """The head, and whether the connection may be used again. A repeated header's values
    are joined with commas (so two Content-Lengths are no length); a bare CR, a folded line or
    a name that is no token is a ValueError (RFC 9112 §2.2, §5)."""
    text = raw.decode("latin-1")
    if _HEAD.fullmatch(text) is None:
        return _parse_lines(text)  # says what is wrong
    headers: dict[str, str] = {}
    for name, value in _FIELD.findall(text):
        name, value = name.lower(), value.strip(" \t\r")  # a CR only at the end
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return Head(int(text[9:12]), headers), _reusable(text, headers)


def _parse_lines(text: str) -> tuple[Head, bool]:
    """`parse_head` line by line: the ValueError of the first line that breaks the rules."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    status_line = _STATUS_LINE.fullmatch(lines[0])
    if status_line is None or "\r" in lines[0]:
        raise ValueError(f"not a status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not is_header_name(name) or "\r" in value:
            raise ValueError(f"an unreadable header line: {line[:80]!r}")
        name, value = name.lower(), value.strip(" \t")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return Head(int(status_line[1]), headers), _reusable(text, headers)


def _reusable(text: str, headers: dict[str, str]) -> bool:
    connection = headers.get("connection", "").lower()
    if text.startswith("HTTP/1.1"):
        return connection != "close"
    return connection == "keep-alive"


def content_length(value: str) -> int:
    """A ``Content-Length``: ASCII digits only (``str.isdigit`` also takes ``²``); anything
    else, a list of lengths included, is a `FramingError`."""
    if not (value.isascii() and value.isdigit()):
        raise FramingError(f"Content-Length {escaped(value, 40)} is not a length")
    return int(value)
