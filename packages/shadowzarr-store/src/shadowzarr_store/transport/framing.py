"""Strict framing of range answers: a 206's Content-Range must be the range asked for, a part of
a ``multipart/byteranges`` answer must hold the bytes asked for, and a whole-file answer may be
only a little longer on the wire than its decoded bytes (a `FramingError` otherwise, which the
client retries)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from shadowzarr_store.transport.answer import Answer
from shadowzarr_store.transport.errors import FramingError

if TYPE_CHECKING:
    from shadowzarr_spec import SourceInfo

    from shadowzarr_store.transport.multipart import Part

__all__ = [
    "check_range",
    "consistent",
    "content_range",
    "part_for",
    "same_etag",
    "wire_most",
]

_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


def wire_most(most: int) -> int:
    """The most bytes a whole-file answer of at most ``most`` bytes may take on the wire (a
    gzip stream of incompressible bytes is a little longer than they are)."""
    return most + most // 64 + 1024


def part_for(
    parts: list[Part], start: int, end: int, etag: str | None, final: str | None, shown: str
) -> Answer:
    """The bytes of ``[start, end)`` from the part holding them (servers may merge ranges; a
    part cut at the end of the file serves a range running past it)."""
    for part in parts:
        stop = part.start + len(part.data)
        if part.start <= start and (end <= stop or (part.total is not None and stop == part.total)):
            return Answer(part.data[start - part.start : end - part.start], part.total, etag, final)
    raise FramingError(f"{shown}: no part of the multipart answer holds bytes {start}-{end - 1}")


def content_range(header: str | None, shown: str) -> tuple[int, int, int | None]:
    header = header or ""
    match = _CONTENT_RANGE.match(header.strip())
    if match is None:
        raise FramingError(f"{shown}: 206 answer with an unusable Content-Range {header[:80]!r}")
    total = None if match[3] == "*" else int(match[3])
    return int(match[1]), int(match[2]), total


def check_range(
    first: int, last: int, total: int | None, start: int, end: int | None, shown: str
) -> None:
    """The server may stop early only at the end of the file."""
    at_end = total is not None and last == total - 1
    if (
        first != start
        or last < first
        or (end is None and not at_end)
        or (end is not None and last != end - 1 and not (last < end - 1 and at_end))
    ):
        raise FramingError(
            f"{shown}: the server answered Content-Range bytes {first}-{last}/{total}, "
            "not the range asked for"
        )


def consistent(answer: Answer, expect: SourceInfo, shown: str) -> None:
    """A file size other than the recorded one under the recorded ETag: the server contradicts
    itself (a short answer claiming the file ends early, a wrong Content-Range), since the ETag
    says the file did not change. A framing error, retried, never `SourceChangedError`."""
    if (
        expect.size is not None
        and answer.total is not None
        and answer.total != expect.size
        and expect.etag
        and answer.etag
        and same_etag(answer.etag, expect.etag)
    ):
        raise FramingError(
            f"{shown}: the answer says the file is {answer.total} bytes under the ETag recorded "
            f"for {expect.size} bytes (a faulty answer, not a changed file)"
        )


def same_etag(a: str, b: str) -> bool:
    """ETags compared as opaque strings (S3's multipart ETags are no MD5), weakness ignored."""
    return a.removeprefix("W/") == b.removeprefix("W/")
