"""A reference file read from a URL: the caller's headers stay with the origin they are for."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from shadowzarr_spec.url_read import read_url


@contextmanager
def _server(seen: list[tuple[str, str | None]], redirects: dict[str, str]) -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            seen.append((f"{self.server.server_port}{self.path}", self.headers.get("X-Key")))
            target = redirects.get(self.path)
            if target is not None:
                self.send_response(302)
                self.send_header("Location", target)
                self.end_headers()
                return
            body = b'{"version": 1, "refs": {}}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_headers_follow_redirects_within_the_origin_only() -> None:
    seen: list[tuple[str, str | None]] = []
    with _server(seen, {}) as other:
        with _server(seen, {"/same": "/refs.json", "/away": other + "/refs.json"}) as home:
            assert read_url(home + "/same", {"X-Key": "secret"}).startswith(b"{")
            assert read_url(home + "/away", {"X-Key": "secret"}).startswith(b"{")
    home_port = home.rsplit(":", 1)[1]
    other_port = other.rsplit(":", 1)[1]
    assert (f"{home_port}/same", "secret") in seen
    assert (f"{home_port}/refs.json", "secret") in seen  # a redirect on the same origin keeps it
    assert (f"{home_port}/away", "secret") in seen
    assert (f"{other_port}/refs.json", None) in seen  # another port is another origin: dropped
    assert all(key is None for where, key in seen if where.startswith(other_port))
