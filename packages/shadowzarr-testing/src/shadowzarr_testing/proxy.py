"""A reverse proxy we control: latency, a shared bandwidth cap, faults and a DANDI-like API.

It runs its own event loop in a background thread so that synchronous tests (h5py, zarr's sync
API) and asynchronous tests (another event loop) can both use it, and it counts what clients
asked for so tests can assert request counts, bytes and headers (a token that must not leak).
Its parts: `proxy_forwarding` (forwarding with faults), `proxy_dandi` (the DANDI-like API) and
`proxy_log` (the record of requests).

Routes (on `base_url`; everything else is forwarded to the upstream):

- ``GET /api/assets/<asset_id>/`` JSON metadata with ``contentSize`` and
  ``digest["dandi:dandi-etag"]`` (the upstream ETag without quotes);
- ``GET /api/assets/<asset_id>/download/`` 302 to a presigned URL on `presigned_base_url`
  (a second port of this proxy, so that it is another origin, as S3 is for DANDI);
- ``GET /api/dandisets/<id>/versions/<version>/assets/?page_size=…&page=…`` every registered
  asset, paginated with ``next`` links, with ``size`` and a ``blob`` id per asset;
- ``GET /presigned/<path>?X-Amz-Expires=…&sig=…`` forwarded to ``<upstream>/<path>`` while the
  signature is valid, 403 ``Request has expired`` after ``presign_ttl`` seconds.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
from aiohttp import web

from shadowzarr_testing._throttle import Throttle
from shadowzarr_testing.faults import DEFAULT_RANDOM_KINDS, FaultPlan, FaultRule
from shadowzarr_testing.proxy_dandi import DandiAsset, DandiRoutes, api_preflight
from shadowzarr_testing.proxy_forwarding import Forwarding
from shadowzarr_testing.proxy_log import RequestCounters, RequestLog

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from types import TracebackType

    from shadowzarr_testing.faults import FaultKind

__all__ = ["DandiAsset", "LatencyProxy", "LatencyProxyError"]

_API_DOWNLOAD = re.compile(r"^/api/assets/(?P<asset>[^/]+)/download/?$")
_API_ASSET = re.compile(r"^/api/assets/(?P<asset>[^/]+)/?$")
_PRESIGNED = re.compile(r"^/presigned/(?P<path>.+)$")
_API_DANDISET_ASSETS = re.compile(
    r"^/api/dandisets/(?P<dandiset>[^/]+)/versions/(?P<version>[^/]+)/assets/?$"
)


class LatencyProxyError(RuntimeError):
    """The proxy could not start or stop."""


class LatencyProxy(RequestCounters, Forwarding, DandiRoutes):
    """Reverse proxy on 127.0.0.1 forwarding to ``upstream`` with latency, bandwidth and faults.

    Parameters
    ----------
    upstream
        Base URL the requests are forwarded to (normally ``nginx.url("")``).
    latency
        Seconds added to every request before its response starts.
    connect_latency
        Seconds added once more to the first request of each new connection: the TCP and TLS
        handshakes of a real network (about two round trips), which loopback does not have.
    bandwidth
        Bytes per second shared by all connections (``None``: unlimited).
    faults
        ``None``, a probability (each request fails with that probability, the kind drawn from
        ``fault_kinds``), a `FaultRule` or a list of them. See `FaultRule` for the kinds.
    seed
        Seed of the random draws of the fault plan (and nothing else).
    presign_ttl
        Seconds a presigned URL issued by the DANDI-like API stays valid.
    api_key
        Token the DANDI-like API wants (``Authorization: token <api_key>``) for embargoed assets.
    chunk_size
        Largest piece streamed at once (pieces shrink to ~20 ms of ``bandwidth``).
    ranges
        ``"server"``: range requests are answered as the upstream answers them (nginx answers
        multi-range requests with ``multipart/byteranges``). ``"s3"``: as S3 answers them, one
        range per request, and a multi-range request with 200 and the whole object.
    root
        With ``ranges="s3"``: answer requests for files from this folder instead of forwarding
        them to the upstream (see `shadowzarr_testing.local_files`), so that the proxy's own
        cost per request stays small next to the latency it adds. Latency, the bandwidth cap,
        faults and the counters apply as for forwarded requests.

    Attributes ``latency``, ``connect_latency``, ``bandwidth``, ``presign_ttl``, ``api_key``
    and ``ranges`` may be
    changed while the proxy runs; ``faults`` too (assigning it replaces the plan).
    """

    def __init__(
        self,
        upstream: str,
        *,
        latency: float = 0.0,
        connect_latency: float = 0.0,
        bandwidth: float | None = None,
        faults: float | FaultRule | Sequence[FaultRule] | None = None,
        fault_kinds: Iterable[FaultKind] = DEFAULT_RANDOM_KINDS,
        seed: int = 0,
        presign_ttl: float = 600.0,
        api_key: str = "shadowzarr-test-api-key",
        chunk_size: int = 64 * 1024,
        ranges: Literal["server", "s3"] = "server",
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        if not upstream.startswith(("http://", "https://")):
            raise ValueError(f"upstream must be an http(s) URL, not {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self.latency = latency
        self.connect_latency = connect_latency
        self._seen_connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.bandwidth = bandwidth
        self.presign_ttl = presign_ttl
        self.api_key = api_key
        self.chunk_size = chunk_size
        if ranges not in ("server", "s3"):
            raise ValueError(f"ranges must be 'server' or 's3', not {ranges!r}")
        self.ranges = ranges
        if root is not None and ranges != "s3":
            raise ValueError("root (files answered by the proxy itself) needs ranges='s3'")
        self.root = None if root is None else Path(root).resolve()
        self._fault_kinds = tuple(fault_kinds)
        self._plan = FaultPlan(seed)
        self._plan.configure(faults, self._fault_kinds)
        self._faults = faults
        self._stats = RequestLog()
        self._assets = {}
        self._signatures = {}
        self._assets_lock = threading.Lock()
        self.after_listing_page = None
        self.port = 0
        self.presigned_port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._stopping: asyncio.Event | None = None
        self._throttle = Throttle()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> LatencyProxy:
        """Start the loop thread and both listening sockets; return once they accept."""
        if self._thread is not None:
            raise LatencyProxyError("the proxy is already running")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=loop.run_forever, name=f"LatencyProxy({self.upstream})", daemon=True
        )
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            asyncio.run_coroutine_threadsafe(self._start_async(), loop).result(timeout=30)
        except BaseException:
            self.stop()
            raise
        return self

    async def _start_async(self) -> None:
        self._stopping = asyncio.Event()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        )
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.2
        )
        await self._runner.setup()
        ports = []
        for _ in range(2):
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            ports.append(int(self._runner.addresses[-1][1]))
        self.port, self.presigned_port = ports

    def stop(self) -> None:
        """Close the listeners, cancel what is still running and join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(self._stop_async(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            if not thread.is_alive():
                loop.close()
            self._loop = self._thread = None

    async def _stop_async(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- addresses -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def presigned_base_url(self) -> str:
        """Origin of the presigned URLs: the same proxy on a second port (another origin)."""
        return f"http://127.0.0.1:{self.presigned_port}"

    def url(self, path: str = "") -> str:
        """URL through the proxy of ``path`` relative to the upstream base."""
        return f"{self.base_url}/{path.lstrip('/')}"

    # -- faults --------------------------------------------------------------------------------

    @property
    def faults(self) -> float | FaultRule | Sequence[FaultRule] | None:
        return self._faults

    @faults.setter
    def faults(self, faults: float | FaultRule | Sequence[FaultRule] | None) -> None:
        self._plan.configure(faults, self._fault_kinds)
        self._faults = faults

    def set_faults(
        self,
        faults: float | FaultRule | Sequence[FaultRule] | None,
        *,
        kinds: Iterable[FaultKind] | None = None,
        seed: int | None = None,
    ) -> None:
        """Replace the fault plan; optionally the kinds drawn by a probability, and the seed."""
        if kinds is not None:
            self._fault_kinds = tuple(kinds)
        if seed is not None:
            self._plan.reseed(seed)
        self.faults = faults

    def fail_next(
        self, n: int, kind: FaultKind = "503", *, path: str | None = None, **options: Any
    ) -> FaultRule:
        """Break the next ``n`` requests (matching ``path``, a regex) with ``kind``."""
        rule = FaultRule(kind, path=path, times=n, **options)
        self._plan.add(rule)
        return rule

    def fail_matching(self, path: str, kind: FaultKind = "503", **options: Any) -> FaultRule:
        """Break every request whose path matches the regular expression ``path``."""
        rule = FaultRule(kind, path=path, **options)
        self._plan.add(rule)
        return rule

    def clear_faults(self) -> None:
        self.faults = None

    # -- request handling (loop thread) --------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        started = loop.time()
        entry: dict[str, Any] = {
            "method": request.method,
            "path": request.path,
            "query": request.query_string,
            "headers": _lowercase_headers(request),
            "range": request.headers.get("Range"),
            "status": None,
            "bytes": 0,
            "fault": None,
            "route": _route_name(request.path),
            "started": started,
            "duration": None,
            "dropped": False,
            "client_disconnected": False,
        }
        transport = request.transport
        entry["new_connection"] = transport is not None and transport not in self._seen_connections
        if transport is not None:
            self._seen_connections.add(transport)
        self._stats.enter(entry)
        try:
            if entry["new_connection"] and self.connect_latency > 0:
                await asyncio.sleep(self.connect_latency)
            if self.latency > 0:
                await asyncio.sleep(self.latency)
            fault = self._plan.choose(request.method, request.path, request.headers.get("Range"))
            if fault is not None:
                entry["fault"] = fault.kind
            response = await self._respond(request, fault, entry)
            if entry["status"] is None and not entry.get("dropped"):
                entry["status"] = response.status
            return response
        finally:
            entry["duration"] = loop.time() - started
            self._stats.leave()

    async def _respond(
        self, request: web.Request, fault: FaultRule | None, entry: dict[str, Any]
    ) -> web.StreamResponse:
        if fault is not None:
            early = await self._early_fault(request, fault, entry)
            if early is not None:
                return early
        path = request.path
        if path.startswith("/api/") and request.method == "OPTIONS":
            return api_preflight()
        if match := _API_DOWNLOAD.match(path):
            return self._api_download(request, match["asset"])
        if match := _API_ASSET.match(path):
            return await self._api_asset(request, match["asset"])
        if _API_DANDISET_ASSETS.match(path):
            return await self._api_dandiset_assets(request)
        raw_path = request.rel_url.raw_path
        if match := _PRESIGNED.match(raw_path):
            refused = self._check_signature(request, match["path"])
            if refused is not None:
                return refused
            return await self._forward(request, "/" + match["path"], fault, entry)
        return await self._forward(request, raw_path, fault, entry)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"LatencyProxy(upstream={self.upstream!r}, port={self.port}, {state})"


def _route_name(path: str) -> str:
    if path.startswith("/api/"):
        return "api"
    if path.startswith("/presigned/"):
        return "presigned"
    return "proxy"


def _lowercase_headers(request: web.Request) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in request.headers.items():
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers
