"""Where a chunk's bytes are, as Icechunk wants it: an absolute URL (``file://`` for local
paths), after the caller's ``url_for`` mapping, and the container prefix that covers it."""

from __future__ import annotations

import os
import posixpath
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from shadowzarr_store.transport import local_path as transport_local_path

__all__ = ["UrlFor", "container_prefix", "file_url_path", "is_covered", "location_of"]

type UrlFor = Callable[[str], str | None]


def location_of(url: str, *, base: str | None = None, url_for: UrlFor | None = None) -> str:
    """The URL a repository records for a reference to ``url``.

    ``url_for`` is asked first (None keeps the default); a relative path is taken against
    ``base`` (the folder holding refs.json); a local path becomes a ``file://`` URL.
    """
    if url_for is not None:
        mapped = url_for(url)
        if mapped is not None:
            return mapped
    if "://" in url:  # http(s), s3, gs, file, ...
        return url
    path = Path(url)
    if not path.is_absolute():
        if base is not None and base.startswith(("http://", "https://")):
            # resolved here: Icechunk takes a location's path verbatim, ".." included
            return urllib.parse.urljoin(base.rstrip("/") + "/", url)
        path = Path(base or os.getcwd()) / path
    return Path(os.path.abspath(path)).as_uri()


def container_prefix(location: str) -> str:
    """A virtual chunk container prefix covering ``location``: the server (or bucket) for
    remote URLs, the file's folder for ``file://`` URLs."""
    parsed = urllib.parse.urlsplit(location)
    if parsed.scheme == "file":
        folder = posixpath.dirname(parsed.path)
        return f"file://{folder.rstrip('/')}/"
    return f"{parsed.scheme}://{parsed.netloc}/"


def is_covered(location: str, prefixes: list[str]) -> bool:
    """True when a container with one of ``prefixes`` serves ``location``."""
    return any(location.startswith(prefix) for prefix in prefixes)


def file_url_path(location: str) -> str | None:
    """The filesystem path of a ``file://`` URL, else None."""
    if not location.startswith("file://"):
        return None
    return transport_local_path(location)
