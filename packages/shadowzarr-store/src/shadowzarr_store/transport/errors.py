"""Errors of the transport that callers handle on purpose, in the shared error tree.

::

    SourceError (OSError)
    ├── RangeNotSatisfiable        the range starts at or past the end of the file (HTTP 416)
    ├── SourceTimeoutError         the request's deadline passed (TimeoutError too)
    ├── UnsafeRequestError         a value would break out of its line of a request head
    ├── RedirectError              a redirect loop, or more redirects than are followed
    ├── ContentCodingError         an answer in a content coding that is not decoded
    ├── AnswerTooLargeError        a whole-file answer longer than the read may take
    ├── ProxyError                 the forward proxy cannot be reached, or refused the request
    └── TransientError             worth trying again: reset, 5xx, 429, short body, bad framing
        └── FramingError           the answer's Content-Range or length is not what was asked
"""

from __future__ import annotations

from shadowzarr_spec import SourceError

__all__ = [
    "AnswerTooLargeError",
    "ContentCodingError",
    "FramingError",
    "ProxyError",
    "RangeNotSatisfiable",
    "RedirectError",
    "SourceTimeoutError",
    "TransientError",
    "UnsafeRequestError",
]


class RangeNotSatisfiable(SourceError):
    """The range starts at or past the end of the file (HTTP 416).

    An error for a chunk that must be there; for the part of an uncompressed chunk that a short
    last slab leaves past the end of the file it means "all padding".
    """


class SourceTimeoutError(SourceError, TimeoutError):
    """A request (with its retries) did not finish within its deadline."""


class UnsafeRequestError(SourceError):
    """A request refused before it was sent: a value bound for its head (an ETag, a URL, a
    header, a redirect's Location) holds a control byte or is no valid name, and would have
    written lines of its own into the head (header injection, request smuggling). Not retried:
    the same request would be refused again."""


class RedirectError(SourceError):
    """Redirects that lead back to a URL of their own chain, or on past the hops followed; not
    retried (the same chain would be followed again)."""


class ContentCodingError(SourceError):
    """An answer in a content coding this reader does not undo (only gzip and deflate are),
    or a range answer in any coding but identity (its Content-Range counts coded bytes)."""


class AnswerTooLargeError(SourceError):
    """A whole-file answer longer than the read may take (``max_whole_file_bytes`` where no
    size is recorded), refused before it is read."""


class ProxyError(SourceError):
    """The forward proxy the settings name cannot be reached, or refused to forward (407 asks
    for credentials, a refused tunnel). Never answered by going directly instead: a user who
    configured a proxy may be unable, or not allowed, to reach the server without it. The
    message names the proxy, never its credentials."""


class TransientError(SourceError):
    """A failure worth trying again; raised to the caller only when the retries ran out."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class FramingError(TransientError):
    """A short body or a Content-Range other than the one asked for.

    The file did not change (that is what the size and ETag say); the answer was cut or mangled
    on the way, so it is retried like a reset connection.
    """
