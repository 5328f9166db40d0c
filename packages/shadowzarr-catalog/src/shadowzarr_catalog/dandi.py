"""A DANDI dandiset version's assets, from the API's paginated listing.

``dandi://000123/draft`` (the main archive), ``https://dandiarchive.org/dandiset/000123/draft``
(the web page) and ``https://<api host>/api/dandisets/000123/versions/draft/`` (any API, the
sandbox or a test server) name one version. Each asset's row keeps its path in the dandiset, its
size, and its blob id (or modification time) as the mark of a change; its references point to
the API's download URL, which the transport resolves to the presigned object-store URL.
"""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from typing import Any
from urllib.parse import quote, urlsplit

from shadowzarr_spec import SourceError
from shadowzarr_store.transport import (
    Transport,
    TransportOptions,
    is_loopback,
    redact,
    run_blocking,
    transport_for,
)

from shadowzarr_catalog.assets import Asset, AssetLeftOutWarning, is_text, shown_name

__all__ = ["dandiset_assets", "dandiset_version_url", "is_dandiset"]

MAIN_API = "https://api.dandiarchive.org"
PAGE_SIZE = 200
MAX_PAGES = 100_000
LISTINGS = 3
"""Listings of a version read while its asset count changes under them (a draft being edited);
the assets of all of them are then taken together, so that none shifted out of one is missed
or marked removed (one deleted meanwhile keeps its row until a steady listing marks it)."""
_SHORT = re.compile(r"^dandi://(?P<id>\d{6})(?:/(?P<version>[^/?#]+))?/?$")
_WEB = re.compile(
    r"^https://(?:www\.)?dandiarchive\.org/dandiset/(?P<id>\d{6})(?:/(?P<version>[^/?#]+))?/?"
)
_API = re.compile(
    r"^(?P<api>https?://[^/]+(?:/[^?#]*?)?)/api/dandisets/(?P<id>[^/]+)"
    r"(?:/versions/(?P<version>[^/?#]+))?/?(?:assets/?)?(?:\?.*)?$"
)


def is_dandiset(source: str) -> bool:
    return any(p.match(source) for p in (_SHORT, _WEB, _API))


def dandiset_version_url(source: str) -> tuple[str, str]:
    """(API root, ``…/api/dandisets/<id>/versions/<version>``) of a dandiset address; the
    version defaults to ``draft``."""
    for pattern in (_SHORT, _WEB):
        if match := pattern.match(source):
            return MAIN_API, _version(MAIN_API, match["id"], match["version"])
    if match := _API.match(source):
        return match["api"], _version(match["api"], match["id"], match["version"])
    raise SourceError(f"{redact(source)} names no dandiset version")


def _version(api: str, dandiset: str, version: str | None) -> str:
    return (
        f"{api}/api/dandisets/{quote(dandiset, safe='')}/versions/"
        f"{quote(version or 'draft', safe='')}"
    )


def dandiset_assets(
    source: str, options: TransportOptions, api_key: str | None = None
) -> list[Asset]:
    """Every asset of the version, following ``next`` links (each must stay on the API's
    origin); ``api_key`` goes to the API only, over https or to this machine."""
    api, version = dandiset_version_url(source)
    origin = urlsplit(api)
    if api_key and (origin.scheme == "https" or is_loopback(origin.hostname)):
        rules = {rule.prefix: dict(rule.headers) for rule in options.header_rules.rules}
        rules[f"{api}/api/"] = {"Authorization": f"token {api_key}"}
        options = dataclasses.replace(options, headers=rules)

    async def pages() -> list[Asset]:
        transport = transport_for(options)
        taken: dict[str, Asset] = {}
        try:
            for _ in range(LISTINGS):
                found, steady = await _listing(transport, api, version, origin.netloc)
                taken.update((asset.asset_id, asset) for asset in found)
                if steady:
                    return found
        finally:
            await transport.aclose()
        return list(taken.values())

    return run_blocking(pages())


async def _listing(
    transport: Transport, api: str, version: str, netloc: str
) -> tuple[list[Asset], bool]:
    """One listing of the version's assets, and whether its asset count held from its first
    page to its last: when it did not, an asset may have shifted across a page boundary while
    the pages were read (missed, or listed twice)."""
    found: list[Asset] = []
    counts: set[int | None] = set()
    listing: str | None = f"{version}/assets/?page_size={PAGE_SIZE}&order=path"
    read: set[str] = set()
    for _ in range(MAX_PAGES):
        if not listing:
            return found, len(counts) <= 1
        read.add(listing)
        page = _page(await transport.read_whole(listing), listing)
        count = page.get("count")
        counts.add(count if isinstance(count, int) else None)
        found.extend(a for entry in page.get("results") or [] if (a := _asset(api, entry)))
        listing = _next_page(page.get("next"), netloc, read)
    raise SourceError(f"{redact(version)}: more than {MAX_PAGES} pages of assets")


def _page(data: bytes, listing: str) -> dict[str, Any]:
    """A page of the listing: a JSON object (a server's answer is untrusted)."""
    try:
        page = json.loads(data)
    except ValueError as exc:
        raise SourceError(f"{redact(listing)}: the asset listing is not JSON ({exc})") from None
    if not isinstance(page, dict) or not isinstance(page.get("results", []), list | None):
        raise SourceError(f"{redact(listing)}: the asset listing is not an object with a list")
    return page


def _next_page(link: object, netloc: str, read: set[str]) -> str | None:
    """The page after the one read last: on the API's origin, and not one ``read`` already
    (pages that point back to each other would be read until `MAX_PAGES`)."""
    if link is None:
        return None
    shown = f"the asset listing's next page {redact(str(link))[:120]!r}"
    if not isinstance(link, str) or _netloc(link) != netloc:
        raise SourceError(f"{shown} leaves the API")
    if link in read:
        raise SourceError(f"{shown} was read already")
    return link


def _netloc(link: str) -> str | None:
    """The host (and port) of ``link``; None for what is no URL (``http://[abc``)."""
    try:
        return urlsplit(link).netloc
    except ValueError:
        return None


def _asset(api: str, entry: object) -> Asset | None:
    """The asset a listing entry names; None, with an `AssetLeftOutWarning`, when its id, path
    or mark is a string that is not text (a JSON ``\\ud800``): no row, URL or database can
    hold it."""
    if not isinstance(entry, dict) or not isinstance(entry.get("asset_id"), str):
        raise SourceError(f"an asset listing entry without an asset_id: {str(entry)[:120]}")
    asset_id = entry["asset_id"]
    listed_path = entry.get("path")
    path = listed_path if isinstance(listed_path, str) else asset_id
    size = entry.get("size")
    mark = entry.get("blob") or entry.get("zarr") or entry.get("modified")
    etag = str(mark) if mark is not None else None
    if not all(is_text(value) for value in (asset_id, path, etag or "")):
        warnings.warn(
            f"the asset {shown_name(asset_id)[:200]!r} of the listing left out: its id, path "
            "or blob id is not text",
            AssetLeftOutWarning,
            stacklevel=2,
        )
        return None
    return Asset(
        asset_id,
        path,
        f"{api}/api/assets/{quote(asset_id, safe='')}/download/",
        size if isinstance(size, int) and size >= 0 else None,
        etag,
    )
