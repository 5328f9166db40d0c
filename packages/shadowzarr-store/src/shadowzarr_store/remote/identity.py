"""Who a source is right now: its URL plus ETag or size, read with one HEAD (or a stat)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import aiohttp
from shadowzarr_spec import SourceError, SourceNotFoundError

__all__ = ["SourceIdentity", "probe_identity"]


@dataclass(frozen=True, slots=True)
class SourceIdentity:
    """A source as it is now; a replaced file has a different ETag or size."""

    url: str
    etag: str | None
    size: int | None

    @property
    def digest(self) -> str:
        """A file-name-safe key of this identity."""
        text = f"{self.url}\x00{self.etag or ''}\x00{'' if self.size is None else self.size}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]


async def probe_identity(url: str, *, timeout: float = 60.0) -> SourceIdentity:
    """The current ETag and size of ``url`` (HEAD), or the size and mtime of a local file."""
    if "://" not in url or url.startswith("file://"):
        path = url.removeprefix("file://")
        try:
            stat = os.stat(path)
        except FileNotFoundError as exc:
            raise SourceNotFoundError(f"no such source: {path}") from exc
        # A local file has no ETag; its mtime stands in so a rewrite of equal size is noticed.
        return SourceIdentity(url, f"mtime:{stat.st_mtime_ns}", stat.st_size)
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(timeout=client_timeout) as session:
        try:
            async with session.head(url, allow_redirects=True) as response:
                if response.status == 404:
                    raise SourceNotFoundError(f"{url}: not found (HTTP 404)")
                if response.status >= 400:
                    raise SourceError(f"{url}: HEAD answered HTTP {response.status}")
                length = response.headers.get("Content-Length")
                return SourceIdentity(
                    url, response.headers.get("ETag"), int(length) if length else None
                )
        except aiohttp.ClientError as exc:
            raise SourceError(f"{url}: {exc}") from exc
