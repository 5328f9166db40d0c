"""The one map from an answer's status to what the transport does: data, retry, or which error."""

from __future__ import annotations

from shadowzarr_spec import (
    SourceAccessError,
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
)

from shadowzarr_store.transport.errors import RangeNotSatisfiable, TransientError

__all__ = ["REDIRECTS", "raise_for_status", "retry_after"]

REDIRECTS = frozenset({301, 302, 303, 307, 308})
_RETRY = frozenset({500, 502, 503, 504})


def raise_for_status(status: int, shown: str, retry_after: float | None = None) -> None:
    """Raise what a non-data answer means; ``shown`` names the (redacted) URL and range."""
    if status == 404:
        raise SourceNotFoundError(f"{shown}: not found (HTTP 404)")
    if status == 412:
        raise SourceChangedError(f"{shown}: the ETag no longer matches (HTTP 412): it has changed")
    if status == 416:
        raise RangeNotSatisfiable(f"{shown}: range not satisfiable (HTTP 416); the file is shorter")
    if status in (401, 403):
        raise SourceAccessError(f"{shown}: access refused (HTTP {status})")
    if status == 429:
        raise TransientError(f"{shown}: too many requests (HTTP 429)", retry_after)
    if status in _RETRY:
        raise TransientError(f"{shown}: HTTP {status}", retry_after)
    if status in REDIRECTS:
        raise SourceError(f"{shown}: HTTP {status} without a Location to follow")
    raise SourceError(f"{shown}: unexpected HTTP {status}")


def retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header given in seconds (a date is ignored)."""
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None
