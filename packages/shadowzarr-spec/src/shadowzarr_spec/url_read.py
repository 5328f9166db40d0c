"""Reading a reference file from a URL, with the caller's headers kept to its origin.

urllib carries every request header along a redirect, to whatever host it points at; a token
for the server holding the references must not reach another one.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

__all__ = ["read_url"]


def read_url(url: str, headers: Mapping[str, str], timeout: float = 60.0) -> bytes:
    """The body at ``url``, sending ``headers`` there and to redirects within its origin only."""
    request = urllib.request.Request(url, headers=dict(headers))
    opener = urllib.request.build_opener(_OriginBoundRedirects(headers.keys()))
    with opener.open(request, timeout=timeout) as response:
        return bytes(response.read())


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


class _OriginBoundRedirects(urllib.request.HTTPRedirectHandler):
    def __init__(self, names: Any) -> None:
        super().__init__()
        self._names = {str(name).lower() for name in names}

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and origin(newurl) != origin(req.full_url):
            for name in [n for n in new.headers if n.lower() in self._names]:
                del new.headers[name]
        return new
