"""DANDI asset download URLs: resolved through their 302 once, the presigned URL reused a while.

The API key (``DANDI_API_KEY``, or ``DANDI_SANDBOX_API_KEY`` for the sandbox) goes only to the
matching DANDI API host, in the one request that asks for the redirect. Redirects are never
followed automatically, so the key cannot travel on to the presigned (S3) host.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import aiohttp
from shadowzarr_spec import SourceAccessError, SourceError, SourceNotFoundError

from shadowzarr_store.fetch.http import RetryPolicy, TransientHTTPError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DandiResolver"]

_DOWNLOAD_PATH = re.compile(r"^/api/(dandisets/[^/]+/versions/[^/]+/)?assets/[^/]+/download/?$")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_POLICY = RetryPolicy()


class DandiResolver:
    """Presigned URLs of DANDI download URLs, shared by every event loop of one store."""

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

    async def resolve(
        self, session: aiohttp.ClientSession, url: str, policy: RetryPolicy = _DEFAULT_POLICY
    ) -> str:
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
                task = loop.create_task(self._resolve_with_retries(session, url, policy))
                self._resolving[(loop, url)] = task
                task.add_done_callback(lambda _: self._resolving.pop((loop, url), None))
        return await asyncio.shield(task)

    async def _resolve_with_retries(
        self, session: aiohttp.ClientSession, url: str, policy: RetryPolicy
    ) -> str:
        for attempt in range(max(policy.attempts, 1)):
            try:
                return await self._resolve_once(session, url)
            except (TransientHTTPError, aiohttp.ClientConnectionError, TimeoutError):
                if attempt + 1 >= policy.attempts:
                    raise
            await asyncio.sleep(policy.delay(attempt))
        raise AssertionError("unreachable")

    async def _resolve_once(self, session: aiohttp.ClientSession, url: str) -> str:
        headers: dict[str, str] = {}
        variable = self._api_hosts[urlsplit(url).netloc]
        token = os.environ.get(variable)
        if token:
            headers["Authorization"] = f"token {token}"
        async with session.get(url, headers=headers, allow_redirects=False) as response:
            status = response.status
            location = response.headers.get("Location")
        if status in _REDIRECTS and location:
            presigned = urljoin(url, location)
            with self._lock:
                self._presigned[url] = (presigned, time.monotonic() + self._ttl)
            return presigned
        if status == 404:
            raise SourceNotFoundError(f"{url}: no such DANDI asset (HTTP 404)")
        if status == 429 or status >= 500:
            raise TransientHTTPError(f"{url}: DANDI answered HTTP {status}")
        if status in (401, 403):
            hint = "" if token else f"; set {variable} for embargoed data"
            raise SourceAccessError(f"{url}: DANDI refused access (HTTP {status}){hint}")
        raise SourceError(f"{url}: DANDI answered HTTP {status}, expected a redirect")
