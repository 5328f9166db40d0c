"""A small loopback HTTP server with ranges, ETags and request counters, for the demo.

The demo must run without internet and without nginx, so it serves its example file itself.
"""

from __future__ import annotations

import mimetypes
import os
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["RangeServer"]

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


@dataclass(slots=True)
class Counters:
    requests: int = 0
    bytes: int = 0


class RangeServer:
    """Serves the files of ``root`` on 127.0.0.1; ``counters`` count requests and body bytes."""

    def __init__(self, root: Path, latency: float = 0.0) -> None:
        self.root = Path(root)
        self.latency = latency
        self.counters = Counters()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        host, port = self._server.server_address[:2]
        shown = host.decode() if isinstance(host, bytes) else host  # an IPv4 server's is str
        return f"http://{shown}:{port}/{name}"

    def reset(self) -> None:
        with self._lock:
            self.counters = Counters()

    def __enter__(self) -> RangeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _count(self, nbytes: int) -> None:
        with self._lock:
            self.counters.requests += 1
            self.counters.bytes += nbytes

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_HEAD(self) -> None:
                self._serve(body=False)

            def do_GET(self) -> None:
                self._serve(body=True)

            def _serve(self, *, body: bool) -> None:
                if server.latency:
                    threading.Event().wait(server.latency)
                path = (server.root / self.path.lstrip("/").split("?")[0]).resolve()
                if server.root.resolve() not in path.parents or not path.is_file():
                    self._reply(404, b"not found", {})
                    return
                stat = os.stat(path)
                etag = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'
                if_match = self.headers.get("If-Match")
                if if_match and if_match.strip() not in (etag, "*"):
                    self._reply(412, b"precondition failed", {"ETag": etag})
                    return
                size = stat.st_size
                headers = {"ETag": etag, "Accept-Ranges": "bytes"}
                kind = mimetypes.guess_type(path.name)[0]
                if kind is not None:  # a browser runs a module script only of a JavaScript type
                    headers["Content-Type"] = kind
                match = _RANGE.match(self.headers.get("Range", ""))
                if match:
                    start = int(match.group(1))
                    end = min(int(match.group(2)) if match.group(2) else size - 1, size - 1)
                    if start >= size:
                        self._reply(416, b"", {"Content-Range": f"bytes */{size}"})
                        return
                    headers["Content-Range"] = f"bytes {start}-{end}/{size}"
                    status, offset, length = 206, start, end - start + 1
                else:
                    status, offset, length = 200, 0, size
                with open(path, "rb") as stream:
                    stream.seek(offset)
                    data = stream.read(length) if body else b""
                self._reply(status, data, headers, length=length)

            def _reply(
                self, status: int, data: bytes, headers: dict[str, str], length: int | None = None
            ) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data) if length is None else length))
                self.end_headers()
                # Counted before the body is sent: a client that has its answer may read the
                # counters before this thread would get past the write.
                server._count(len(data))
                if self.command != "HEAD":
                    try:
                        self.wfile.write(data)
                    except (BrokenPipeError, ConnectionResetError):
                        # A client may close a whole-file answer unread (a size probe): not an
                        # error worth a traceback on the server's stderr.
                        self.close_connection = True

        return Handler
