"""A loopback HTTP(S) server around a test's own request handler, for answers no real server
gives on purpose (a redirect to another scheme, a padded head, a certificate of the test's
own authority); nginx and `LatencyProxy` serve everything else."""

from __future__ import annotations

import http.server
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl
    from collections.abc import Iterator


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that does not log each request to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def handler_server(
    handler: type[http.server.BaseHTTPRequestHandler], *, tls: ssl.SSLContext | None = None
) -> Iterator[int]:
    """Serve ``handler`` on a free loopback port (with ``tls``: HTTPS) and yield the port;
    each connection in its own thread, all stopped when the block ends."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
