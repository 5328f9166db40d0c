"""How `LatencyProxy` forwards a request to its upstream (or answers it from local files) and
bends the answer with the fault drawn for it: ranges ignored, shifted or cut short, bodies
truncated, stalled or trickled, connections reset. A mixin: it shares the proxy's session,
settings, counters and bandwidth cap."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
from aiohttp import web
from yarl import URL

from shadowzarr_testing.faults import parse_single_range
from shadowzarr_testing.local_files import LocalAnswer, local_answer

if TYPE_CHECKING:
    from shadowzarr_testing._throttle import Throttle
    from shadowzarr_testing.faults import FaultRule
    from shadowzarr_testing.proxy_log import RequestLog

__all__ = ["Forwarding"]

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
_BODYLESS_STATUSES = frozenset({204, 304})


class Forwarding:
    """Forwarding with faults, mixed into `LatencyProxy`."""

    upstream: str
    ranges: Literal["server", "s3"]
    root: Path | None
    bandwidth: float | None
    chunk_size: int
    _session: aiohttp.ClientSession | None
    _stopping: asyncio.Event | None
    _stats: RequestLog
    _throttle: Throttle

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


def _abort(request: web.Request) -> None:
    """Drop the connection with a TCP RST (SO_LINGER 0), as a crashing server would."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
