"""What an archive holds: one `Asset` per file, with what tells a changed file from an unchanged
one without asking the file itself (the listing's size and ETag, a local file's size and
modification time)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Asset", "AssetLeftOutWarning", "host_of", "is_text", "shown_name"]


class AssetLeftOutWarning(UserWarning):
    """An asset of a listing is left out of the run: it shares an id or a path with another
    asset, or the listing names it with what is not text."""


@dataclass(frozen=True, slots=True)
class Asset:
    """One file of an archive.

    ``asset_id`` is the stable key of its catalog row (a relative path, a DANDI asset id, a
    URL without credentials); ``path`` is where it sits in the archive (what its reference
    location is derived from); ``url`` is what the generator reads and the references point to;
    ``size`` and ``etag`` (an ETag, a digest, or ``mtime_ns:…`` for a local file) come from the
    listing, None when it gives none.
    """

    asset_id: str
    path: str
    url: str
    size: int | None = None
    etag: str | None = None


def host_of(url: str) -> str:
    """The origin whose politeness bound a request to ``url`` counts against (``local`` for
    files on this machine)."""
    if "://" not in url or url.lower().startswith("file://"):
        return "local"
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def is_text(name: str) -> bool:
    """Whether ``name`` is text (UTF-8 can hold it): a local file's name that is not (bytes
    decoded with ``surrogateescape``) can be named by no reference set, catalog row or URL."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """``name`` as text: the bytes of a name that is not written as ``\\xff`` escapes, and a
    surrogate no bytes decode to (JSON's ``\\ud800``) as ``\\ud800``."""
    if is_text(name):
        return name
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")
