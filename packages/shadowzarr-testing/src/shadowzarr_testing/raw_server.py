"""A loopback HTTP/1.1 server that keeps every byte it receives and answers with raw bytes.

For what a real server must be seen to receive (no injected header line, no smuggled request:
its own log of what arrived, parsed as a server parses it) and for answers no library writes
on purpose (``100 Continue`` before the answer, LF-only line ends, a chunked or gzip body, a
``Content-Length`` in other digits). It also counts its open connections.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["InFlight", "RawRequest", "RawServer", "range_answer"]


@dataclass
class InFlight:
    """Requests being answered at once, counted across the servers that share it (a request
    is answered on an open connection, so this never exceeds the client's connections)."""

    now: int = 0
    peak: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1


@dataclass(frozen=True, slots=True)
class RawRequest:
    """One request as the server parsed it from the bytes it received."""

    method: str
    target: str
    header_lines: tuple[str, ...]
    """Every header line as received (``Name: value``), in order."""

    def header(self, name: str) -> str | None:
        for line in self.header_lines:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None


@dataclass
class RawServer:
    """Serve ``answer(request) -> raw answer bytes`` (None: close the connection) on a free
    loopback port, each connection in its own thread; ``hold`` seconds of delay before each
    answer (to see connections at once), counted in ``in_flight``."""

    answer: Callable[[RawRequest], bytes | None]
    hold: float = 0.0
    in_flight: InFlight = field(default_factory=InFlight)
    received: bytearray = field(default_factory=bytearray)
    requests: list[RawRequest] = field(default_factory=list)
    open_connections: int = 0
    max_open_connections: int = 0
    connections: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _listener: socket.socket | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> RawServer:
        listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
        listener.settimeout(0.2)
        self._listener = listener
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._listener is not None:
            self._listener.close()

    @property
    def port(self) -> int:
        assert self._listener is not None
        return int(self._listener.getsockname()[1])

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self.open_connections += 1
            self.max_open_connections = max(self.max_open_connections, self.open_connections)
        pending = b""
        try:
            connection.settimeout(30)
            while not self._stopping.is_set():
                end = pending.find(b"\r\n\r\n")
                if end < 0:
                    piece = connection.recv(65536)
                    if not piece:
                        return
                    with self._lock:
                        self.received += piece
                    pending += piece
                    continue
                head, pending = pending[:end].decode("latin-1"), pending[end + 4 :]
                request_line, *lines = head.split("\r\n")
                method, _, rest = request_line.partition(" ")
                request = RawRequest(method, rest.rpartition(" ")[0], tuple(lines))
                with self._lock:
                    self.requests.append(request)
                self.in_flight.enter()
                try:
                    if self.hold:
                        self._stopping.wait(self.hold)
                    reply = self.answer(request)
                finally:
                    self.in_flight.leave()
                if reply is None:
                    return
                connection.sendall(reply)
        except OSError:
            return
        finally:
            with self._lock:
                self.open_connections -= 1
            connection.close()


def range_answer(data: bytes, request: RawRequest, etag: str = '"e1"') -> bytes:
    """What a plain server answers to a GET of ``data``: 206 of a ``bytes=a-b`` range, else 200
    with all of it."""
    wanted = request.header("Range")
    if wanted and wanted.startswith("bytes=") and "," not in wanted:
        first, _, last = wanted[6:].partition("-")
        start = int(first)
        stop = min(int(last) + 1 if last else len(data), len(data))
        body = data[start:stop]
        head = (
            f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {start}-{stop - 1}/{len(data)}"
            f"\r\nContent-Length: {len(body)}\r\nETag: {etag}\r\n\r\n"
        )
        return head.encode() + body
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\nETag: {etag}\r\n\r\n"
    return head.encode() + data
