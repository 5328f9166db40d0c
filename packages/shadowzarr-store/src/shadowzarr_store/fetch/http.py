"""HTTP range requests that either return exactly the bytes asked for or raise.

Transient failures (resets, timeouts, truncated bodies, 5xx, 429) are retried with bounded
exponential backoff. Anything that could hand back wrong bytes (a 200 to a range request, a
Content-Range other than the one asked for, a short body, a changed file) is an error that names
the source and the range.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

import aiohttp
from shadowzarr_spec import (
    SourceAccessError,
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
)

from shadowzarr_store.fetch.errors import RangeNotSatisfiable

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadowzarr_store.fetch.headers import HeaderRules

__all__ = ["RetryPolicy", "TransientHTTPError", "fetch_range", "new_session"]

_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
_RETRY_STATUSES = frozenset({500, 502, 503, 504})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 10


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 6
    backoff: float = 0.1
    max_backoff: float = 5.0
    max_retry_after: float = 30.0

    def delay(self, attempt: int) -> float:
        """Full-jitter exponential backoff, bounded by ``max_backoff``."""
        ceiling = float(min(self.max_backoff, self.backoff * 2**attempt))
        return ceiling / 2 + random.random() * ceiling / 2


class TransientHTTPError(SourceError):
    """A failure worth trying again (reset, timeout, 5xx, 429, truncated body)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def new_session(max_connections: int, timeout: float) -> aiohttp.ClientSession:
    """One session per event loop: connection reuse, a cap on connections, no decompression."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max_connections, limit_per_host=max_connections),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout),
        auto_decompress=False,
    )


def _describe(url: str, start: int, end: int | None) -> str:
    if start == 0 and end is None:
        return url
    return f"{url} bytes {start}-{'' if end is None else end - 1}"


async def fetch_range(
    session: aiohttp.ClientSession,
    url: str,
    start: int,
    end: int | None,
    *,
    etag: str | None = None,
    expected_size: int | None = None,
    policy: RetryPolicy = RetryPolicy(),
    name: str | None = None,
    on_retry: Callable[[], None] | None = None,
    check_url: Callable[[str], None] | None = None,
    headers: HeaderRules | None = None,
) -> bytes:
    """Bytes ``[start, end)`` of ``url`` (``end`` None: to the end; ``0, None``: the whole file).

    The body is shorter than asked only when the server clipped the range at the end of the file.
    ``name`` is the URL shown in errors (the reference's URL when ``url`` is a presigned one).
    Redirects are followed here, not by aiohttp, so ``check_url`` (raising `SourceAccessError`)
    vets every place a redirect points to before it is requested, and each request carries only
    the user ``headers`` bound to its own URL (none after a redirect to another host).
    """
    shown = _describe(name or url, start, end)
    last: TransientHTTPError | None = None
    for attempt in range(max(policy.attempts, 1)):
        if attempt:
            if on_retry is not None:
                on_retry()
            wait = policy.delay(attempt - 1)
            if last is not None and last.retry_after is not None:
                wait = min(max(last.retry_after, wait), policy.max_retry_after)
            await asyncio.sleep(wait)
        try:
            return await _fetch_once(
                session, url, start, end, etag, expected_size, shown, check_url, headers
            )
        except TransientHTTPError as exc:
            last = exc
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            last = TransientHTTPError(f"{shown}: {type(exc).__name__}: {exc}")
            last.__cause__ = exc
        except TimeoutError as exc:
            last = TransientHTTPError(f"{shown}: timed out")
            last.__cause__ = exc
        except (aiohttp.ClientError, ValueError) as exc:  # a URL aiohttp cannot request
            raise SourceError(f"{shown}: cannot be requested: {type(exc).__name__}: {exc}") from exc
    assert last is not None
    raise SourceError(f"{last} (gave up after {policy.attempts} attempts)") from last


async def _fetch_once(
    session: aiohttp.ClientSession,
    url: str,
    start: int,
    end: int | None,
    etag: str | None,
    expected_size: int | None,
    shown: str,
    check_url: Callable[[str], None] | None = None,
    user_headers: HeaderRules | None = None,
) -> bytes:
    whole = start == 0 and end is None
    headers: dict[str, str] = {}
    if not whole:
        headers["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
    if etag:
        headers["If-Match"] = etag
    target = url
    for _ in range(_MAX_REDIRECTS + 1):
        sent = {**user_headers.for_url(target), **headers} if user_headers else headers
        async with session.get(target, headers=sent, allow_redirects=False) as response:
            location = response.headers.get("Location")
            if response.status not in _REDIRECTS or not location:
                return await _read_answer(response, start, end, expected_size, shown)
        target = urljoin(target, location)
        if check_url is not None:
            check_url(target)
    raise SourceError(f"{shown}: more than {_MAX_REDIRECTS} redirects")


async def _read_answer(
    response: aiohttp.ClientResponse,
    start: int,
    end: int | None,
    expected_size: int | None,
    shown: str,
) -> bytes:
    whole = start == 0 and end is None
    status = response.status
    if status == 206 and not whole:
        first, last, total = _content_range(response, shown)
        _check_range(first, last, total, start, end, expected_size, shown)
        body = await response.read()
        if len(body) != last - first + 1:
            raise TransientHTTPError(
                f"{shown}: body of {len(body)} bytes, Content-Range says {last - first + 1}"
            )
        return body
    if status == 200 and whole:
        body = await response.read()
        length = response.content_length
        if length is not None and len(body) != length:
            raise TransientHTTPError(
                f"{shown}: body of {len(body)} bytes, Content-Length says {length}"
            )
        if expected_size is not None and len(body) != expected_size:
            raise SourceChangedError(
                f"{shown} is {len(body)} bytes, the references were made for "
                f"{expected_size} bytes: the source has changed"
            )
        return body
    _raise_for_status(response, shown)
    raise AssertionError("unreachable")


def _content_range(response: aiohttp.ClientResponse, shown: str) -> tuple[int, int, int | None]:
    header = response.headers.get("Content-Range", "")
    match = _CONTENT_RANGE.match(header.strip())
    if match is None:
        raise SourceError(f"{shown}: 206 answer with an unusable Content-Range {header!r}")
    total = None if match[3] == "*" else int(match[3])
    return int(match[1]), int(match[2]), total


def _check_range(
    first: int,
    last: int,
    total: int | None,
    start: int,
    end: int | None,
    expected_size: int | None,
    shown: str,
) -> None:
    if expected_size is not None and total is not None and total != expected_size:
        raise SourceChangedError(
            f"{shown}: the source is now {total} bytes, the references were made for "
            f"{expected_size} bytes: the source has changed"
        )
    clipped_at_end = total is not None and last == total - 1
    if first != start or (
        (end is None and not clipped_at_end)
        or (end is not None and last != end - 1 and not (last < end - 1 and clipped_at_end))
    ):
        raise SourceError(
            f"{shown}: the server answered Content-Range bytes {first}-{last}/{total}, "
            "not the range asked for"
        )


def _raise_for_status(response: aiohttp.ClientResponse, shown: str) -> None:
    status = response.status
    if status == 200:
        raise SourceError(f"{shown}: the server ignored the Range header (200 instead of 206)")
    if status == 404:
        raise SourceNotFoundError(f"{shown}: not found (HTTP 404)")
    if status == 412:
        raise SourceChangedError(f"{shown}: the ETag no longer matches (HTTP 412): it has changed")
    if status == 416:
        raise RangeNotSatisfiable(
            f"{shown}: range not satisfiable (HTTP 416); the file is shorter"
        )
    if status in (401, 403):
        raise SourceAccessError(f"{shown}: access refused (HTTP {status})")
    if status == 429:
        raise TransientHTTPError(f"{shown}: too many requests (HTTP 429)", _retry_after(response))
    if status in _RETRY_STATUSES:
        raise TransientHTTPError(f"{shown}: HTTP {status}", _retry_after(response))
    raise SourceError(f"{shown}: unexpected HTTP {status}")


def _retry_after(response: aiohttp.ClientResponse) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None
