"""Where the transport may read: local files, and an allow-list of URL prefixes.

References are data from someone else. One loaded from a URL must not make the reader open its
own local files, and a service reading references for users can name the only places requests
may go (against server-side request forgery). Every check is made on the URL as it will be sent
and as the server will resolve it (`normalise_path`), in whole path segments, for the first
request and for every redirect hop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from shadowzarr_spec import SourceAccessError, UnsafePathError

from shadowzarr_store.transport.locations import (
    DEFAULT_PORTS,
    OBJECT_STORE_SCHEMES,
    is_local,
    kind_of,
    local_path,
    normalise_path,
    redact,
    under,
)

__all__ = ["AccessPolicy", "UrlPrefix"]

_PREFIX_SCHEMES = frozenset(DEFAULT_PORTS) | OBJECT_STORE_SCHEMES


@dataclass(frozen=True, slots=True)
class UrlPrefix:
    """``scheme://host[:port]/path``: a place requests may go, in whole path segments."""

    scheme: str
    host: str
    port: int | None
    path: str

    @classmethod
    def parse(cls, prefix: str) -> UrlPrefix:
        place = _place(prefix)
        if place is None or place[0] not in _PREFIX_SCHEMES:
            raise ValueError(
                f"allowed_urls entries must be http(s), s3, gs or az URL prefixes, "
                f"got {redact(prefix)!r}"
            )
        parts = urlsplit(prefix)
        if parts.username is not None or parts.query or parts.fragment:
            raise ValueError(
                f"allowed_urls: {redact(prefix)!r} may hold no user, query or fragment"
            )
        return cls(*place)

    def admits(self, url: str) -> bool:
        place = _place(url)
        return (
            place is not None
            and place[:3] == (self.scheme, self.host, self.port)
            and under(place[3], self.path)
        )


def _place(url: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower()
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if not host:
        return None
    return scheme, host, port, normalise_path(parts.path)


def _check_usable(url: str) -> None:
    """Refuse a URL no client can send (a port past 65535, a broken IPv6 host, no host): a
    reference may hold any string, and this is its error rather than a ValueError from deep in a
    client."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (parsing the port is the check)
    except ValueError as exc:
        raise SourceAccessError(f"{redact(url)}: not a usable URL ({exc})") from exc
    if not parts.netloc:
        raise SourceAccessError(f"{redact(url)}: not a usable URL (it names no host)")


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """Checks each location before it is read; refusals are `SourceAccessError`."""

    local_files: bool = True
    prefixes: tuple[UrlPrefix, ...] | None = None

    @classmethod
    def of(cls, allowed_urls: Iterable[str] | None, allow_local_files: bool) -> AccessPolicy:
        prefixes = None
        if allowed_urls is not None:
            prefixes = tuple(UrlPrefix.parse(prefix) for prefix in allowed_urls)
        return cls(local_files=allow_local_files, prefixes=prefixes)

    def check(self, location: str) -> None:
        """Refuse ``location`` unless these settings allow reading it (any scheme but ours too)."""
        kind = kind_of(location)
        if kind == "local":
            if not self.local_files:
                raise SourceAccessError(
                    f"{redact(location)}: reading local files is not allowed here "
                    "(pass allow_local_files=True to allow it)"
                )
            return
        _check_usable(location)
        if self.prefixes is not None and not any(p.admits(location) for p in self.prefixes):
            raise SourceAccessError(f"{redact(location)}: not under any of the allowed_urls")

    def check_redirect(self, location: str) -> None:
        """A redirect may lead only to http(s) under the allowed prefixes, never to a file."""
        scheme = location.split("://", 1)[0].lower() if "://" in location else ""
        if scheme not in DEFAULT_PORTS:
            raise SourceAccessError(
                f"a redirect to {redact(location)!r} was refused: only http(s) redirects are "
                "followed"
            )
        self.check(location)

    def check_index(self, location: str, base: str | None) -> None:
        """An index chunk: allowed like a source, and a local one must stay inside ``base``.

        Symlinks are resolved first, so a link inside the reference directory cannot lead out.
        """
        self.check(location)
        if not is_local(location):
            return
        if base is None or "://" in base:
            raise UnsafePathError(f"local index {location!r} outside of any reference directory")
        root = os.path.realpath(base)
        resolved = os.path.realpath(local_path(location))
        if os.path.commonpath([root, resolved]) != root:
            raise UnsafePathError(
                f"index chunk {location!r} resolves to {resolved!r}, outside the reference "
                f"directory {root!r}"
            )
