"""What a source file looks like now (size, ETag), so readers can detect a changed file.

Local files: their size. HTTP: a HEAD request (or a one-byte range request when HEAD is
refused). DANDI assets: the asset metadata's ``contentSize`` and ``dandi:dandi-etag``, which is
the ETag S3 sends for the blob behind the download URL's redirect.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass

__all__ = ["SourceState", "dandi_asset_url", "source_state"]

_DANDI_DOWNLOAD = re.compile(
    r"^(?P<api>https://api(?:-staging|\.sandbox)?\.dandiarchive\.org/api)"
    r"/(?:dandisets/[^/]+/versions/[^/]+/)?assets/(?P<asset>[0-9a-f-]{36})/download/?$"
)
_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class SourceState:
    size: int | None
    etag: str | None


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def dandi_asset_url(url: str) -> str | None:
    """The metadata URL of a DANDI asset download URL, or None."""
    match = _DANDI_DOWNLOAD.match(url)
    if match is None:
        return None
    return f"{match['api']}/assets/{match['asset']}/"


def source_state(location: str) -> SourceState:
    """Size and ETag of a local path or URL (ETag None for local files)."""
    if not is_url(location):
        return SourceState(os.path.getsize(location), None)
    metadata = dandi_asset_url(location)
    if metadata is not None:
        state = _dandi_state(metadata)
        if state is not None:
            return state
    return _http_state(location)


def _dandi_state(metadata_url: str) -> SourceState | None:
    headers = {"Accept": "application/json"}
    token = os.environ.get("DANDI_API_KEY")
    if token:
        headers["Authorization"] = f"token {token}"
    try:
        with urllib.request.urlopen(
            urllib.request.Request(metadata_url, headers=headers), timeout=_TIMEOUT
        ) as response:
            document = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None  # not reachable: the download response gives size and ETag instead
    etag = (document.get("digest") or {}).get("dandi:dandi-etag")
    size = document.get("contentSize")
    if etag is None:
        return None
    return SourceState(int(size) if size is not None else None, f'"{etag}"')


def _http_state(url: str) -> SourceState:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, method="HEAD"), timeout=_TIMEOUT
        ) as response:
            length = response.headers.get("Content-Length")
            return SourceState(
                int(length) if length is not None else None, response.headers.get("ETag")
            )
    except urllib.error.HTTPError as exc:
        if exc.code not in (403, 405, 501):
            raise
    request = urllib.request.Request(url, headers={"Range": "bytes=0-0"})
    with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:
        total = None
        content_range = response.headers.get("Content-Range", "")
        if "/" in content_range and not content_range.endswith("*"):
            total = int(content_range.rsplit("/", 1)[1])
        return SourceState(total, response.headers.get("ETag"))
