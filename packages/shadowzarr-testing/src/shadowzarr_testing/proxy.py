"""A reverse proxy we control: latency, a shared bandwidth cap, faults and a DANDI-like API.

It runs its own event loop in a background thread so that synchronous tests (h5py, zarr's sync
API) and asynchronous tests (another event loop) can both use it, and it counts what clients
asked for so tests can assert request counts, bytes and headers (a token that must not leak).

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
import contextlib
import os
import re
import secrets
import socket
import struct
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

import aiohttp
from aiohttp import web
from yarl import URL

from shadowzarr_testing._throttle import Throttle
from shadowzarr_testing.faults import (
    DEFAULT_RANDOM_KINDS,
    FaultPlan,
    FaultRule,
    parse_single_range,
)
from shadowzarr_testing.local_files import LocalAnswer, local_answer

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from types import TracebackType

    from shadowzarr_testing.faults import FaultKind

__all__ = ["DandiAsset", "LatencyProxy", "LatencyProxyError"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_NOT_COPIED_FROM_UPSTREAM = _HOP_BY_HOP | {"server", "date"}
_API_DOWNLOAD = re.compile(r"^/api/assets/(?P<asset>[^/]+)/download/?$")
_API_ASSET = re.compile(r"^/api/assets/(?P<asset>[^/]+)/?$")
_PRESIGNED = re.compile(r"^/presigned/(?P<path>.+)$")
_API_DANDISET_ASSETS = re.compile(
    r"^/api/dandisets/(?P<dandiset>[^/]+)/versions/(?P<version>[^/]+)/assets/?$"
)
_BODYLESS_STATUSES = frozenset({204, 304})
_S3_EXPIRED = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    "<Message>Request has expired</Message></Error>"
)
_S3_BAD_SIGNATURE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code>'
    "<Message>The request signature we calculated does not match the signature you "
    "provided.</Message></Error>"
)


class LatencyProxyError(RuntimeError):
    """The proxy could not start or stop."""


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


class _Stats:
    """Counters shared between the loop thread (writer) and the test thread (reader)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_concurrent = 0

    def enter(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.log.append(entry)
            self.in_flight += 1
            self.max_concurrent = max(self.max_concurrent, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def add_bytes(self, entry: dict[str, Any], nbytes: int) -> None:
        with self.lock:
            entry["bytes"] += nbytes

    def reset(self) -> None:
        with self.lock:
            self.log.clear()
            self.max_concurrent = self.in_flight


class LatencyProxy:
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
        self._stats = _Stats()
        self._assets: dict[str, DandiAsset] = {}
        self._signatures: dict[str, _Signature] = {}
        self._assets_lock = threading.Lock()
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

    # -- counters ------------------------------------------------------------------------------

    @property
    def log(self) -> list[dict[str, Any]]:
        """One dict per request, oldest first (a snapshot).

        Keys: ``method``, ``path``, ``query``, ``headers`` (every request header, names in lower
        case), ``range`` (or ``None``), ``status`` (``None`` when the connection was dropped
        before a status), ``bytes`` (body bytes sent), ``fault`` (kind or ``None``), ``route``
        (``"proxy"``, ``"api"`` or ``"presigned"``), ``started`` (the proxy loop's clock,
        seconds), ``duration`` (seconds; ``None`` while in flight), ``dropped`` (the proxy cut
        the connection), ``client_disconnected``, ``new_connection`` (the first request of its
        connection). A request is logged when it arrives, so
        in-flight requests appear with ``status`` ``None``.
        """
        with self._stats.lock:
            return [dict(entry) for entry in self._stats.log]

    @property
    def requests(self) -> int:
        """Total number of requests received."""
        return self.count()

    @property
    def max_concurrent(self) -> int:
        """Most requests in flight at the same time."""
        with self._stats.lock:
            return self._stats.max_concurrent

    @property
    def connections(self) -> int:
        """Connections opened (their first requests seen) since the last `reset`."""
        return sum(1 for entry in self._select(None, None) if entry["new_connection"])

    def count(self, method: str | None = None, path_prefix: str | None = None) -> int:
        """Requests received, optionally only one method and/or path prefix."""
        return len(self._select(method, path_prefix))

    def round_trips(self, path_prefix: str | None = None) -> int:
        """Waves of requests: a request arriving at least ``latency / 2`` after the first of the
        current wave starts a new one, so requests sent together count once and each round
        trip a client waits for before asking again counts once more."""
        starts = sorted(entry["started"] for entry in self._select(None, path_prefix))
        waves, first = 0, None
        for start in starts:
            if first is None or start - first >= self.latency / 2:
                waves, first = waves + 1, start
        return waves

    def bytes_sent(self, path_prefix: str | None = None) -> int:
        """Body bytes sent to clients, optionally only for a path prefix."""
        return sum(entry["bytes"] for entry in self._select(None, path_prefix))

    def _select(self, method: str | None, path_prefix: str | None) -> list[dict[str, Any]]:
        prefix = None if path_prefix is None else "/" + path_prefix.lstrip("/")
        return [
            entry
            for entry in self.log
            if (method is None or entry["method"] == method.upper())
            and (prefix is None or entry["path"].startswith(prefix))
        ]

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no request is in flight (so every ``duration`` in `log` is final).

        Status and byte counts are recorded before the client can see them; only the
        bookkeeping after the last byte (``duration``) may lag behind the client.
        """
        deadline = time.monotonic() + timeout
        while True:
            with self._stats.lock:
                if self._stats.in_flight == 0:
                    return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"requests still in flight after {timeout} s")
            time.sleep(0.005)

    def reset(self) -> None:
        """Forget the log and counters (faults and assets stay)."""
        self._stats.reset()

    # -- DANDI-like API ------------------------------------------------------------------------

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
            return _api_preflight()
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

    async def _early_fault(
        self, request: web.Request, fault: FaultRule, entry: dict[str, Any]
    ) -> web.StreamResponse | None:
        """Faults that replace the whole response; ``None`` for those applied while forwarding."""
        match fault.kind:
            case "reset":
                entry["dropped"] = True
                _abort(request)
                return web.Response(status=500)
            case "500" | "503":
                return web.Response(status=int(fault.kind), text=f"injected fault {fault.kind}\n")
            case "429":
                return web.Response(
                    status=429,
                    text="injected fault 429\n",
                    headers={"Retry-After": str(fault.retry_after)},
                )
            case "stall" if fault.after_bytes is None:
                await self._stall(fault.stall_seconds)
                entry["dropped"] = True
                _abort(request)
                return web.Response(status=504)
            case _:
                return None

    async def _stall(self, seconds: float) -> None:
        assert self._stopping is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _forward(
        self,
        request: web.Request,
        upstream_raw_path: str,
        fault: FaultRule | None,
        entry: dict[str, Any],
    ) -> web.StreamResponse:
        assert self._session is not None
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP]
        requested = parse_single_range(request.headers.get("Range"))
        kind = fault.kind if fault is not None else None
        several = "," in request.headers.get("Range", "")
        if kind == "ignore_range" or (self.ranges == "s3" and several):
            # S3 answers a multi-range request with 200 and the whole object.
            headers = [(k, v) for k, v in headers if k.lower() != "range"]
        elif kind == "ignore_if_match":
            headers = [(k, v) for k, v in headers if k.lower() != "if-match"]
        elif kind == "wrong_range" and fault is not None and requested is not None:
            start, end = requested
            shifted_start = max(0, start + fault.shift)
            shifted_end = "" if end is None else str(max(shifted_start, end + fault.shift))
            headers = [(k, v) for k, v in headers if k.lower() != "range"]
            headers.append(("Range", f"bytes={shifted_start}-{shifted_end}"))
        upstream: aiohttp.ClientResponse | LocalAnswer
        if self.root is not None:
            upstream = local_answer(self.root, upstream_raw_path, request.method, headers)
        else:
            query = request.rel_url.raw_query_string
            url = URL(
                f"{self.upstream}{upstream_raw_path}" + (f"?{query}" if query else ""),
                encoded=True,
            )
            body = await request.read() if request.can_read_body else None
            try:
                upstream = await self._session.request(
                    request.method, url, headers=headers, data=body, allow_redirects=False
                )
            except aiohttp.ClientError as exc:
                entry["status"] = 502
                return web.Response(status=502, text=f"upstream unreachable: {exc}\n")
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _NOT_COPIED_FROM_UPSTREAM:
                    response.headers.add(name, value)
            length = upstream.content_length
            if (
                kind == "wrong_range"
                and fault is not None
                and not fault.honest
                and requested is not None
                and upstream.status == 206
                and length is not None
            ):
                total = upstream.headers.get("Content-Range", "*/*").rpartition("/")[2]
                start = requested[0]
                response.headers["Content-Range"] = f"bytes {start}-{start + length - 1}/{total}"
            limit: int | None = None
            if kind == "short_end" and requested is not None and upstream.status == 206 and length:
                limit = max(1, length // 2)
                start = requested[0]
                response.headers["Content-Range"] = (
                    f"bytes {start}-{start + limit - 1}/{start + limit}"
                )
                length = limit
            if length is not None and upstream.status not in _BODYLESS_STATUSES:
                response.content_length = length
            entry["status"] = upstream.status
            if kind == "short_end":
                pass
            elif kind == "truncate" and fault is not None:
                limit = fault.after_bytes if fault.after_bytes is not None else (length or 0) // 2
            elif kind == "stall" and fault is not None:
                limit = fault.after_bytes
            pace = fault.stall_seconds if kind == "trickle" and fault is not None else None
            try:
                await response.prepare(request)
                await self._stream(upstream, response, entry, limit, pace)
                if kind == "truncate":
                    # Close after the partial body is flushed: the client sees a short body.
                    if request.transport is not None:
                        request.transport.close()
                    return response
                if kind == "stall" and fault is not None:
                    await self._stall(fault.stall_seconds)
                    _abort(request)
                    return response
                await response.write_eof()
            except ConnectionError:
                entry["client_disconnected"] = True
            return response

    async def _stream(
        self,
        upstream: aiohttp.ClientResponse | LocalAnswer,
        response: web.StreamResponse,
        entry: dict[str, Any],
        limit: int | None,
        pace: float | None = None,
    ) -> None:
        sent = 0
        if limit == 0:
            return
        size = 1 if pace is not None else self._piece_size()
        async for piece in upstream.content.iter_chunked(size):
            if pace is not None:
                await self._stall(pace)
                if self._stopping is not None and self._stopping.is_set():
                    return
            if limit is not None:
                piece = piece[: limit - sent]
            await self._throttle.spend(len(piece), self.bandwidth)
            # Count before writing: the client may have the bytes before write() returns.
            self._stats.add_bytes(entry, len(piece))
            await response.write(piece)
            sent += len(piece)
            if limit is not None and sent >= limit:
                return

    def _piece_size(self) -> int:
        if self.bandwidth is None:
            return self.chunk_size
        return max(1024, min(self.chunk_size, int(self.bandwidth / 50)))

    # -- DANDI-like routes ---------------------------------------------------------------------

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


def _abort(request: web.Request) -> None:
    """Drop the connection with a TCP RST (SO_LINGER 0), as a crashing server would."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


def _api_json(payload: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response(payload, status=status, headers={"Access-Control-Allow-Origin": "*"})


def _api_preflight() -> web.Response:
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
