"""The one place an answer's ``Content-Encoding`` is undone: gzip and deflate, within a limit.

Every request asks for ``Accept-Encoding: identity``, but a server may compress anyway. The
bytes of such an answer are not the file's: served raw they are wrong data (and short of the
size, padded with fill). A whole-file answer in gzip or deflate is decoded here, never past the
most bytes the read may take; one in any other coding is refused (`ContentCodingError`), as is
a range answer in any coding (its Content-Range counts coded bytes, not the file's).
"""

from __future__ import annotations

import zlib

from shadowzarr_store.transport.errors import ContentCodingError, FramingError
from shadowzarr_store.transport.head_values import escaped
from shadowzarr_store.transport.http1_bodies import AnswerTooLong

__all__ = ["decode_whole", "refuse_coded_range"]

_IDENTITY = frozenset({"", "identity"})
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def _codings(header: str | None) -> list[str]:
    """The codings applied, first to last, identity left out."""
    if header is None:
        return []
    return [c for c in (part.strip().lower() for part in header.split(",")) if c not in _IDENTITY]


def refuse_coded_range(header: str | None, shown: str) -> None:
    """`ContentCodingError` for a range answer in a coding other than identity."""
    if _codings(header):
        raise ContentCodingError(
            f"{shown}: a range answered with Content-Encoding {escaped(header or '', 40)}; "
            "its bytes are not the file's"
        )


def decode_whole(
    body: bytes | memoryview, header: str | None, most: int | None, shown: str
) -> bytes | memoryview:
    """``body`` with its content codings undone (``body`` itself when there are none); at most
    ``most`` bytes (`AnswerTooLong` past them), a damaged or cut stream a `FramingError`."""
    codings = _codings(header)
    for coding in reversed(codings):
        wbits = _WBITS.get(coding)
        if wbits is None:
            raise ContentCodingError(
                f"{shown}: answered with Content-Encoding {escaped(header or '', 40)}; only "
                "gzip and deflate are decoded"
            )
        body = _inflate(body, wbits, coding, most, shown)
    return body


def _inflate(
    body: bytes | memoryview, wbits: int, coding: str, most: int | None, shown: str
) -> bytes:
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, 0 if most is None else most + 1)
    except zlib.error as exc:
        if coding == "deflate" and wbits > 0:  # deflate sent without its zlib wrapper
            return _inflate(body, -zlib.MAX_WBITS, "raw deflate", most, shown)
        raise FramingError(f"{shown}: a damaged {coding} body ({exc})") from exc
    if most is not None and len(out) > most:
        raise AnswerTooLong(len(out))
    if not inflater.eof or inflater.unused_data:
        raise FramingError(f"{shown}: a {coding} body cut short or followed by other bytes")
    return out
