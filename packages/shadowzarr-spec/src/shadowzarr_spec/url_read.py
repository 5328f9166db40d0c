"""Reading a reference file from a URL, with the caller's headers kept to its origin.

urllib carries every request header along a redirect, to whatever host it points at; a token
for the server holding the references must not reach another one.
"""

from __future__ import annotations

import functools
import urllib.parse
import urllib.request
from collections.abc import Mapping

__all__ = ["read_url"]


def read_url(url: str, headers: Mapping[str, str], timeout: float = 60.0) -> bytes:
    """The body at ``url``, sending ``headers`` there and to redirects within its origin only."""
    request = urllib.request.Request(url, headers=dict(headers))
    with _opener().open(request, timeout=timeout) as response:
        return bytes(response.read())


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    """Built once: building an opener loads the system's CA certificates (about 30 ms)."""
    return urllib.request.build_opener(_OriginBoundRedirects())


class _OriginBoundRedirects(urllib.request.HTTPRedirectHandler):
    """Drops the caller's headers (the only ones a Request carries along a redirect) when a
    redirect leaves the origin. Stateless, so one opener serves every thread."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and origin(newurl) != origin(req.full_url):
            new.headers.clear()
        return new
