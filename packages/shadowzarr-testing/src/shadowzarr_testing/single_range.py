"""Files answered as S3 answers ranges, at a latency, by a bare asyncio protocol: a thousand
requests in flight each answered after its latency, not after the server's CPU allows.

`LatencyProxy(root=..., ranges="s3")` gives the same answers (`local_files`) through aiohttp's
server, which costs about half a millisecond of CPU per request: a wave of 1,000 requests then
takes the proxy half a second to answer whatever the latency, and a request of that wave
arriving more than half a latency after its first counts as another round trip. An object store
has no such limit. `SingleRangeServer` parses a request line and its headers and writes the answer
itself, a few tens of microseconds per request, and counts requests exactly as `LatencyProxy`
does (`RequestCounters`). It has no faults, no DANDI-like API and no upstream: a benchmark's
stand-in for S3 (tools/bench/server.py).

HTTP/1.1 as clients of an object store speak it: ``GET`` and ``HEAD`` (other methods: 405),
keep-alive connections, pipelined requests answered in order, ``Connection: close`` and
HTTP/1.0 honoured; a request with a body is answered 400 and its connection closed.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from shadowzarr_testing._throttle import Throttle
from shadowzarr_testing.local_files import local_answer
from shadowzarr_testing.proxy_log import RequestCounters, RequestLog

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["SingleRangeServer", "SingleRangeServerError"]

_HEAD_LIMIT = 64 * 1024
"""Longest request head (line and headers) read before the connection is closed."""
_BACKLOG = 4096
"""Connections waiting to be accepted (the kernel caps it at ``net.core.somaxconn``): a client
opening a thousand at once must not lose SYNs, each of which costs a second to resend."""


class SingleRangeServerError(RuntimeError):
    """The server could not start or stop."""


class SingleRangeServer(RequestCounters):
    """Files under ``root`` on 127.0.0.1, answered as S3 answers ranges, each request after
    ``latency`` seconds (and ``connect_latency`` more for a connection's first: TCP and TLS
    set-up), all connections sharing ``bandwidth`` bytes/s (``None``: no cap).

    Counters as `LatencyProxy`'s: `requests`, `count`, `bytes_sent`, `round_trips`,
    `max_concurrent`, `connections`, `log`, `wait_idle`, `reset`. ``latency``,
    ``connect_latency`` and ``bandwidth`` may be changed while it runs.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        latency: float = 0.0,
        connect_latency: float = 0.0,
        bandwidth: float | None = None,
        chunk_size: int = 64 * 1024,
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ValueError(f"root must be a folder: {root}")
        self.latency = latency
        self.connect_latency = connect_latency
        self.bandwidth = bandwidth
        self.chunk_size = chunk_size
        self.port = 0
        self._stats = RequestLog()
        self._throttle = Throttle()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> SingleRangeServer:
        """Start the loop thread and the listening socket; return once it accepts."""
        if self._thread is not None:
            raise SingleRangeServerError("the server is already running")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="SingleRangeServer", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            asyncio.run_coroutine_threadsafe(self._start_async(), loop).result(timeout=30)
        except BaseException:
            self.stop()
            raise
        return self

    async def _start_async(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self), "127.0.0.1", 0, backlog=_BACKLOG
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    def stop(self) -> None:
        """Close the listener and every connection, and join the thread."""
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
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def __enter__(self) -> SingleRangeServer:
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

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "") -> str:
        """URL of ``path`` under the root."""
        return f"{self.base_url}/{path.lstrip('/')}"

    def _piece_size(self) -> int:
        if self.bandwidth is None:
            return self.chunk_size
        return max(1024, min(self.chunk_size, int(self.bandwidth / 50)))

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"SingleRangeServer(root={str(self.root)!r}, port={self.port}, {state})"


class _Job:
    """One request waiting for its latency, then for the answers before it."""

    __slots__ = ("bad", "close", "entry", "pairs", "raw_path", "ready")

    def __init__(
        self,
        entry: dict[str, Any],
        raw_path: str,
        pairs: list[tuple[str, str]],
        *,
        bad: bool,
        close: bool,
    ) -> None:
        self.entry, self.raw_path, self.pairs = entry, raw_path, pairs
        self.bad, self.close = bad, close
        self.ready = False


class _Connection(asyncio.Protocol):
    """One client connection: heads parsed as they arrive, each answered when its latency is
    over (a timer, no task), in the order they came. A body of one piece goes out with its
    head in one write; a longer one is streamed by a task, piece by piece under the bandwidth
    cap and the transport's flow control."""

    def __init__(self, server: SingleRangeServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.first = True
        self.queue: deque[_Job] = deque()
        self.busy = False
        self.closing = False
        self.lost = False
        self.writable = asyncio.Event()
        self.writable.set()

    # -- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server._connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.server._connections.discard(self)
        self.writable.set()  # a writer waiting for room sees the loss

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > _HEAD_LIMIT:
                    self.abort()
                return
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            self._request(head)
            if self.closing:
                return

    def abort(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.abort()

    # -- requests ------------------------------------------------------------------------------

    def _request(self, head: bytes) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        headers: dict[str, str] = {}
        pairs: list[tuple[str, str]] = []
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if colon:
                name, value = name.strip(), value.strip()
                pairs.append((name, value))
                key = name.lower()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
        method, target, version = parts if len(parts) == 3 else ("", "", "")
        raw_path, _, query = target.partition("?")
        entry: dict[str, Any] = {
            "method": method,
            "path": unquote(raw_path),
            "query": query,
            "headers": headers,
            "range": headers.get("range"),
            "status": None,
            "bytes": 0,
            "fault": None,
            "route": "proxy",
            "started": started,
            "duration": None,
            "dropped": False,
            "client_disconnected": False,
            "new_connection": self.first,
        }
        delay = self.server.latency + (self.server.connect_latency if self.first else 0.0)
        self.first = False
        self.server._stats.enter(entry)
        bad = headers.get("content-length", "0") not in ("", "0") or "transfer-encoding" in headers
        close = (
            bad
            or not method
            or version != "HTTP/1.1"
            or "close" in headers.get("connection", "").lower()
        )
        if close:
            self.closing = True  # nothing after this request is read
        job = _Job(entry, raw_path, pairs, bad=bad or not method, close=close)
        self.queue.append(job)
        loop.call_at(started + delay, self._ready, job)

    def _ready(self, job: _Job) -> None:
        job.ready = True
        self._pump()

    def _pump(self) -> None:
        """Answer the requests at the head of the queue whose latency is over, in order."""
        while not self.busy and self.queue and self.queue[0].ready:
            self._answer(self.queue.popleft())

    def _done(self, job: _Job) -> None:
        entry = job.entry
        entry["duration"] = asyncio.get_running_loop().time() - entry["started"]
        self.server._stats.leave()

    def _answer(self, job: _Job) -> None:
        server, transport, entry = self.server, self.transport, job.entry
        assert transport is not None
        if self.lost or transport.is_closing():
            entry["client_disconnected"] = True
            self._done(job)
            return
        if job.bad:
            entry["status"] = 400
            transport.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                            b"Connection: close\r\n\r\n")  # fmt: skip
            transport.close()
            self._done(job)
            return
        pairs = job.pairs
        if "," in (entry["range"] or ""):  # S3: a multi-range request gets the whole object
            pairs = [(k, v) for k, v in pairs if k.lower() != "range"]
        answer = local_answer(server.root, job.raw_path, entry["method"], pairs)
        entry["status"] = answer.status
        lines = [f"HTTP/1.1 {answer.status} {answer.reason}"]
        lines += [f"{name}: {value}" for name, value in answer.headers.items()]
        lines.append(f"Content-Length: {answer.content_length or 0}")
        if job.close:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        size = server._piece_size()
        if entry["method"] == "HEAD" or (answer.content_length or 0) <= size:
            body = b"" if entry["method"] == "HEAD" else answer.content.read()
            loop = asyncio.get_running_loop()
            wait = server._throttle.book(len(body), server.bandwidth, loop.time())
            if wait > 0:
                self.busy = True
                loop.call_later(wait, self._send, job, head, body)
            else:
                self._send(job, head, body)
            return
        self.busy = True
        task = asyncio.get_running_loop().create_task(self._stream(job, head, answer, size))
        task.add_done_callback(lambda _: self._after(job))

    def _send(self, job: _Job, head: bytes, body: bytes) -> None:
        """Head and body in one write (the body counted before: the client may have it before
        write() returns)."""
        assert self.transport is not None
        if self.lost or self.transport.is_closing():
            job.entry["client_disconnected"] = True
        else:
            self.server._stats.add_bytes(job.entry, len(body))
            self.transport.write(head + body)
            if job.close:
                self.transport.close()
        self._after(job)

    def _after(self, job: _Job) -> None:
        self._done(job)
        self.busy = False
        self._pump()

    async def _stream(self, job: _Job, head: bytes, answer: Any, size: int) -> None:
        server, transport, entry = self.server, self.transport, job.entry
        assert transport is not None
        transport.write(head)
        async for piece in answer.content.iter_chunked(size):
            await server._throttle.spend(len(piece), server.bandwidth)
            if self.lost or transport.is_closing():
                entry["client_disconnected"] = True
                return
            server._stats.add_bytes(entry, len(piece))
            transport.write(piece)
            if not self.writable.is_set():
                await self.writable.wait()
        if job.close and not self.lost:
            transport.close()
