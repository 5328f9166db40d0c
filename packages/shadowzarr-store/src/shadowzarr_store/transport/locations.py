"""What a location is (local file, HTTP URL, object-store URL) and how it may be shown.

Every message the transport writes names a location through `redact`, so a password in a URL
(``http://user:pw@host/…``) or a signature in a presigned query never reaches an error, a log,
a reference or a cache. Paths are compared in the form a server resolves them to
(`normalise_path`): percent-decoded, with ``.`` and ``..`` segments applied.
"""

from __future__ import annotations

import os
import re
from typing import Literal
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit
from urllib.request import url2pathname

from shadowzarr_spec import SourceAccessError

__all__ = [
    "DEFAULT_PORTS",
    "OBJECT_STORE_SCHEMES",
    "Kind",
    "is_local",
    "is_loopback",
    "join_location",
    "kind_of",
    "local_path",
    "normalise_path",
    "redact",
    "under",
]

type Kind = Literal["local", "http", "object_store"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DEFAULT_PORTS = {"http": 80, "https": 443}
OBJECT_STORE_SCHEMES = frozenset({"s3", "gs", "az"})
"""Object-store URLs read through obstore: ``s3://bucket/key``, ``gs://…``, ``az://container/…``."""

_SECRET_QUERY_NAMES = frozenset(
    {
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "x-goog-signature",
        "x-goog-credential",
        "signature",
        "sig",
        "token",
        "access_token",
        "api_key",
        "key",
        "se",
        "sv",
        "sp",
    }
)


def kind_of(location: str) -> Kind:
    """The backend of ``location``; another scheme raises `SourceAccessError`."""
    if "://" not in location:
        return "local"
    scheme = location.split("://", 1)[0].lower()
    if scheme == "file":
        return "local"
    if scheme in DEFAULT_PORTS:
        return "http"
    if scheme in OBJECT_STORE_SCHEMES:
        return "object_store"
    raise SourceAccessError(
        f"{redact(location)}: the {scheme!r} scheme is not supported "
        "(http, https, file, s3, gs and az are)"
    )


def is_local(location: str) -> bool:
    return "://" not in location or location.lower().startswith("file://")


def local_path(location: str) -> str:
    """The filesystem path of a local path or ``file://`` URL."""
    if location.lower().startswith("file://"):
        return url2pathname(urlsplit(location).path)
    return location


def normalise_path(path: str) -> str:
    """The path a server serves: percent-decoded, ``.`` and ``..`` resolved, ``\\`` as ``/``.

    ``/public/../private`` and ``/public/%2e%2e/private`` are both ``/private``. A trailing
    slash is kept (``/a/`` stays ``/a/``), so prefixes can still say "a folder".
    """
    segments: list[str] = []
    for segment in unquote(path).replace("\\", "/").split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    tail = "/" if path.endswith("/") and segments else ""
    return "/" + "/".join(segments) + tail if segments else "/"


def under(path: str, prefix: str) -> bool:
    """Whether normalised ``path`` lies under ``prefix`` in whole segments.

    ``/public`` covers ``/public`` and ``/public/x``, never ``/public-secret``.
    """
    stem = prefix.rstrip("/")
    return not stem or path == stem or path.startswith(stem + "/")


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` names this machine (a request to it never leaves it)."""
    if not host:
        return False
    host = host.lower().strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def join_location(base: str, relative: str) -> str:
    """``relative`` resolved against the folder ``base`` (a URL or a local path)."""
    if "://" in relative or os.path.isabs(relative):
        return relative
    if "://" in base:
        return base.rstrip("/") + "/" + relative
    return os.path.join(base, relative)


def redact(location: str) -> str:
    """``location`` without a user name, password or credential-like query values, its
    control bytes escaped (``\\x0d``): a name from a reference file never breaks a message's
    line."""
    if _CONTROL.search(location) is not None:
        location = _CONTROL.sub(lambda found: f"\\x{ord(found[0]):02x}", location)
    if "://" not in location:
        return location
    try:
        parts = urlsplit(location)
    except ValueError:
        # Still named (an error must say which URL), without user info or any query.
        scheme, rest = location.split("://", 1)
        rest, question, _ = rest.partition("?")
        authority, slash, path = rest.partition("/")
        if "@" in authority:
            authority = "***@" + authority.rsplit("@", 1)[1]
        return f"{scheme}://{authority}{slash}{path}" + ("?***" if question else "")
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        query = "&".join(_redact_pair(pair) for pair in query.split("&"))
    return urlunsplit(SplitResult(parts.scheme, netloc, parts.path, query, parts.fragment))


def _redact_pair(pair: str) -> str:
    name, equals, _ = pair.partition("=")
    return f"{name}=***" if equals and name.lower() in _SECRET_QUERY_NAMES else pair
