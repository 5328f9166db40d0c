"""The fake DANDI API of `LatencyProxy`: assets registered by the test, their metadata and
listing, downloads redirected to presigned URLs on a second origin, and those URLs' signatures
checked and expired as S3 does. A mixin: the routes share the proxy's session and settings."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import aiohttp
from aiohttp import web
from yarl import URL

__all__ = ["DandiAsset", "DandiRoutes", "api_preflight"]

_S3_EXPIRED = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    "<Message>Request has expired</Message></Error>"
)
_S3_BAD_SIGNATURE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code>'
    "<Message>The request signature we calculated does not match the signature you "
    "provided.</Message></Error>"
)


@dataclass(frozen=True, slots=True)
class DandiAsset:
    """An asset of the fake DANDI API: its id, its file under the upstream, its access rule."""

    asset_id: str
    path: str
    embargoed: bool = False


@dataclass(frozen=True, slots=True)
class _Signature:
    path: str
    expires_at: float


class DandiRoutes:
    """The DANDI-like routes and asset registry, mixed into `LatencyProxy`."""

    api_key: str
    presign_ttl: float
    upstream: str
    _session: aiohttp.ClientSession | None
    _assets: dict[str, DandiAsset]
    _signatures: dict[str, _Signature]
    _assets_lock: threading.Lock
    after_listing_page: Callable[[int], None] | None
    """Called with a listing page's number once the page is made (a test edits the dandiset
    between two pages of one listing)."""

    if TYPE_CHECKING:  # `LatencyProxy`'s own, which the routes use

        @property
        def presigned_base_url(self) -> str: ...

        def url(self, path: str = "") -> str: ...

    def add_asset(self, asset_id: str, path: str, *, embargoed: bool = False) -> str:
        """Register an asset backed by ``path`` under the upstream; return its download URL."""
        with self._assets_lock:
            self._assets[asset_id] = DandiAsset(asset_id, path.lstrip("/"), embargoed)
        return self.asset_download_url(asset_id)

    def remove_asset(self, asset_id: str) -> None:
        """Forget an asset: gone from the listing, its URLs answer 404 (as a deleted asset)."""
        with self._assets_lock:
            del self._assets[asset_id]

    def asset_download_url(self, asset_id: str) -> str:
        return self.url(f"api/assets/{quote(asset_id, safe='')}/download/")

    def asset_metadata_url(self, asset_id: str) -> str:
        return self.url(f"api/assets/{quote(asset_id, safe='')}/")

    def _lookup_asset(
        self, request: web.Request, asset_id: str
    ) -> tuple[DandiAsset | None, web.Response | None]:
        with self._assets_lock:
            asset = self._assets.get(asset_id)
        if asset is None:
            return None, _api_json({"detail": "Not found."}, status=404)
        if asset.embargoed:
            authorization = request.headers.get("Authorization")
            if authorization is None:
                detail = "Authentication credentials were not provided."
                return None, _api_json({"detail": detail}, status=401)
            if authorization != f"token {self.api_key}":
                return None, _api_json({"detail": "Invalid token."}, status=401)
        return asset, None

    def _api_download(self, request: web.Request, asset_id: str) -> web.Response:
        asset, refusal = self._lookup_asset(request, asset_id)
        if refusal is not None:
            return refusal
        assert asset is not None
        signature = secrets.token_hex(16)
        ttl = self.presign_ttl
        with self._assets_lock:
            self._signatures[signature] = _Signature(asset.path, time.monotonic() + ttl)
        amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        location = (
            f"{self.presigned_base_url}/presigned/{quote(asset.path)}"
            f"?X-Amz-Date={amz_date}&X-Amz-Expires={max(0, round(ttl))}&sig={signature}"
        )
        return web.Response(
            status=302,
            headers={"Location": location, "Access-Control-Allow-Origin": "*"},
        )

    async def _api_asset(self, request: web.Request, asset_id: str) -> web.Response:
        assert self._session is not None
        asset, refusal = self._lookup_asset(request, asset_id)
        if refusal is not None:
            return refusal
        assert asset is not None
        found = await self._upstream_stat(asset.path)
        if isinstance(found, int):
            return _api_json({"detail": f"upstream answered {found}"}, status=502)
        size, etag = found
        return _api_json(
            {
                "identifier": asset.asset_id,
                "path": asset.path,
                "contentSize": size,
                "digest": {"dandi:dandi-etag": etag},
                "contentUrl": [self.asset_download_url(asset.asset_id)],
                "access": [{"status": "EmbargoedAccess" if asset.embargoed else "OpenAccess"}],
            }
        )

    async def _api_dandiset_assets(self, request: web.Request) -> web.Response:
        """One page of a dandiset version's asset listing (every registered asset, by path):
        ``page_size`` (default 100) and ``page`` (from 1) as DANDI takes them, ``next`` the
        absolute URL of the following page, and per asset its ``size`` and a ``blob`` id that
        changes with the upstream file's ETag (DANDI's blob ids change with the content)."""
        assert self._session is not None
        with self._assets_lock:
            assets = sorted(self._assets.values(), key=lambda a: a.path)
        try:
            size = int(request.query.get("page_size", "100"))
            page = int(request.query.get("page", "1"))
        except ValueError:
            return _api_json({"detail": "page and page_size are integers"}, status=400)
        if size < 1 or page < 1:
            return _api_json({"detail": "Invalid page."}, status=404)
        chosen = assets[(page - 1) * size : page * size]
        if page > 1 and not chosen:
            return _api_json({"detail": "Invalid page."}, status=404)
        results = []
        for asset in chosen:
            found = await self._upstream_stat(asset.path)
            if isinstance(found, int):
                detail = f"upstream answered {found} for {asset.path}"
                return _api_json({"detail": detail}, status=502)
            results.append(
                {
                    "asset_id": asset.asset_id,
                    "path": asset.path,
                    "size": found[0],
                    "blob": f"blob-{found[1]}",
                    "zarr": None,
                }
            )
        if self.after_listing_page is not None:
            self.after_listing_page(page)
        following = None
        if page * size < len(assets):
            following = str(request.url.update_query({"page": page + 1, "page_size": size}))
        return _api_json(
            {"count": len(assets), "next": following, "previous": None, "results": results}
        )

    async def _upstream_stat(self, path: str) -> tuple[int | None, str] | int:
        """(size, ETag without quotes) of an upstream file, or the status that refused it. A
        HEAD first; an object store that refuses anonymous HEADs (moto with a public-read
        policy) is asked for its first byte instead (the size from Content-Range), and an empty
        object, whose first byte is out of range, for all of it."""
        assert self._session is not None
        url = URL(f"{self.upstream}/{quote(path)}", encoded=True)
        async with self._session.head(url, allow_redirects=False) as head:
            if head.status == 200:
                etag = head.headers.get("ETag", "").removeprefix("W/").strip('"')
                return head.content_length, etag
        ranged = {"Range": "bytes=0-0"}
        async with self._session.get(url, headers=ranged, allow_redirects=False) as answer:
            etag = answer.headers.get("ETag", "").removeprefix("W/").strip('"')
            total = answer.headers.get("Content-Range", "").rpartition("/")[2]
            if answer.status == 206 and total.isdigit():
                return int(total), etag
            if answer.status == 200:
                return answer.content_length, etag
            if answer.status != 416:
                return answer.status
        async with self._session.get(url, allow_redirects=False) as whole:  # an empty object
            etag = whole.headers.get("ETag", "").removeprefix("W/").strip('"')
            return (whole.content_length, etag) if whole.status == 200 else whole.status

    def _check_signature(self, request: web.Request, raw_path: str) -> web.Response | None:
        with self._assets_lock:
            signature = self._signatures.get(request.query.get("sig", ""))
        expected = None if signature is None else quote(signature.path)
        if signature is None or expected != raw_path:
            return web.Response(status=403, text=_S3_BAD_SIGNATURE, content_type="application/xml")
        if time.monotonic() >= signature.expires_at:
            return web.Response(status=403, text=_S3_EXPIRED, content_type="application/xml")
        return None


def _api_json(payload: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response(payload, status=status, headers={"Access-Control-Allow-Origin": "*"})


def api_preflight() -> web.Response:
    return web.Response(
        status=204,
        headers={
            "Access-Control-Allow-Origin": "*",
            "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
            "Access-Control-Allow-Headers": "Authorization, Range, If-Match",
            "Access-Control-Expose-Headers": "Location",
            "Access-Control-Max-Age": "600",
        },
    )
