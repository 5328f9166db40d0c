"""DANDI asset download URLs: resolved through their 302 once, the presigned URL reused a while.

The API key (``DANDI_API_KEY``, or ``DANDI_SANDBOX_API_KEY`` for the sandbox) goes only to the
matching DANDI API host, in the one request that asks for the redirect, and never over plain
``http://`` (except to this machine, where it does not travel). Redirects are never followed
automatically, so the key cannot travel on to the presigned (S3) host.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from shadowzarr_spec import SourceAccessError, SourceError, SourceNotFoundError

from shadowzarr_store.transport.errors import TransientError
from shadowzarr_store.transport.locations import is_loopback, redact
from shadowzarr_store.transport.status import REDIRECTS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from shadowzarr_store.transport.http import HttpBackend
    from shadowzarr_store.transport.options import TransportOptions

__all__ = ["DandiResolver", "token_header"]

_DOWNLOAD_PATH = re.compile(r"^/api/(dandisets/[^/]+/versions/[^/]+/)?assets/[^/]+/download/?$")


def token_header(url: str, variable: str) -> dict[str, str]:
    """``Authorization`` for a request to ``url`` when the token may go there: https, or
    http to this machine. Empty otherwise (the token is never sent in the clear)."""
    token = os.environ.get(variable)
    parts = urlsplit(url)
    if not token or not (parts.scheme == "https" or is_loopback(parts.hostname)):
        return {}
    return {"Authorization": f"token {token}"}


class DandiResolver:
    """Presigned URLs of DANDI download URLs, shared by every event loop of one transport."""

    def __init__(self, api_hosts: Mapping[str, str], ttl: float) -> None:
        self._api_hosts = dict(api_hosts)
        self._ttl = ttl
        self._lock = threading.Lock()
        self._presigned: dict[str, tuple[str, float]] = {}
        self._resolving: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Task[str]] = {}

    def handles(self, url: str) -> bool:
        parts = urlsplit(url)
        return (
            parts.scheme in ("http", "https")
            and parts.netloc in self._api_hosts
            and _DOWNLOAD_PATH.match(parts.path) is not None
        )

    def cached(self, url: str) -> str | None:
        with self._lock:
            entry = self._presigned.get(url)
        if entry is None or entry[1] <= time.monotonic():
            return None
        return entry[0]

    def forget(self, url: str, presigned: str) -> None:
        """Drop ``presigned`` (expired or refused) so the next read resolves ``url`` again."""
        with self._lock:
            entry = self._presigned.get(url)
            if entry is not None and entry[0] == presigned:
                del self._presigned[url]

    async def resolve(self, http: HttpBackend, url: str, options: TransportOptions) -> str:
        """The presigned URL behind ``url``, from the cache or by asking the API.

        Concurrent callers on one event loop share one request; transient failures are retried.
        """
        cached = self.cached(url)
        if cached is not None:
            return cached
        loop = asyncio.get_running_loop()
        with self._lock:
            task = self._resolving.get((loop, url))
            if task is None:
                task = loop.create_task(self._resolve_with_retries(http, url, options))
                self._resolving[(loop, url)] = task
                task.add_done_callback(lambda _: self._resolving.pop((loop, url), None))
        return await asyncio.shield(task)

    async def _resolve_with_retries(
        self, http: HttpBackend, url: str, options: TransportOptions
    ) -> str:
        for attempt in range(options.attempts):
            try:
                return await self._resolve_once(http, url)
            except TransientError as exc:
                if attempt + 1 >= options.attempts:
                    raise
                await asyncio.sleep(options.delay(attempt, exc.retry_after))
        raise AssertionError("unreachable")

    async def _resolve_once(self, http: HttpBackend, url: str) -> str:
        variable = self._api_hosts[urlsplit(url).netloc]
        headers = token_header(url, variable)
        shown = redact(url)
        status, location, wait = await http.ask_redirect(url, headers, shown)
        if status in REDIRECTS and location:
            with self._lock:
                self._presigned[url] = (location, time.monotonic() + self._ttl)
            return location
        if status == 404:
            raise SourceNotFoundError(f"{shown}: no such DANDI asset (HTTP 404)")
        if status == 429 or status >= 500:
            raise TransientError(f"{shown}: DANDI answered HTTP {status}", wait)
        if status in (401, 403):
            if headers:
                hint = ""
            elif os.environ.get(variable):
                hint = f"; {variable} is set but is not sent over plain http"
            else:
                hint = f"; set {variable} for embargoed data"
            raise SourceAccessError(f"{shown}: DANDI refused access (HTTP {status}){hint}")
        raise SourceError(f"{shown}: DANDI answered HTTP {status}, expected a redirect")
