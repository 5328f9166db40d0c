"""Hostile cases against a server of our own: answers and references no honest pair produces.

- an ETag recorded in ``sources`` carrying CR/LF: a header, or a whole second request, that
  would reach the server if the ETag went into ``If-Match`` unchecked;
- a whole file answered gzip-encoded although the client asked for the stored bytes;
- references that stop short of a chunk or run past the end of the file, with and without a
  recorded size.

The server logs every request head. After each case, `injected` counts the requests for paths
the case never referenced and the heads carrying a header no client of ours sends: the
"injected requests" column. A smuggled request on a kept-alive connection is parsed by the
server as a request of its own (HTTP/1.1), so it is seen.
"""

from __future__ import annotations

import gzip
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from shadowzarr_testing.handler_server import QuietHandler

from fuzz.hostile import GOOD, GROUP, PADDED, meta

__all__ = ["HostileServer", "hostile_network_cases"]

EXPECTED_HEADERS = frozenset(
    {
        "host",
        "range",
        "if-match",
        "accept",
        "accept-encoding",
        "user-agent",
        "connection",
        "keep-alive",
        "content-length",
        "te",
    }
)
"""Request headers a client of ours may send; any other in a head was put there."""


class HostileServer:
    """Serves ``files`` (path -> bytes); ``/gz/`` paths answer a whole-file GET gzip-encoded."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.log: list[tuple[str, dict[str, str]]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.log.append((self.path, headers))
                body = server.files.get(self.path.split("?", 1)[0])
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                wanted = headers.get("range", "")
                if self.path.startswith("/gz/") and not wanted:
                    packed = gzip.compress(body)
                    self.send_response(200)
                    self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(packed)))
                    self.send_header("ETag", '"gz"')
                    self.end_headers()
                    self.wfile.write(packed)
                    return
                start, end = 0, len(body)
                if wanted.startswith("bytes="):
                    first, _, last = wanted[6:].partition("-")
                    start = int(first)
                    end = min(len(body), int(last) + 1) if last else len(body)
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(end - start))
                self.send_header("ETag", '"e"')
                self.end_headers()
                self.wfile.write(body[start:end])

            do_HEAD = do_GET

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_port}"

    def reset(self) -> None:
        with self._lock:
            self.log.clear()

    def injected(self, referenced: list[str]) -> list[str]:
        """Requests for paths the case never referenced, and heads with headers of no client."""
        with self._lock:
            log = list(self.log)
        found = []
        for path, headers in log:
            if path.split("?", 1)[0] not in referenced:
                found.append(f"a request for {path!r}, which the case never referenced")
            unexpected = sorted(set(headers) - EXPECTED_HEADERS)
            if unexpected:
                found.append(f"a request for {path!r} carrying headers {unexpected}")
        return found

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def hostile_network_cases(
    server: HostileServer, work: Path
) -> Iterator[tuple[str, dict[str, Any], Any]]:
    work.mkdir(parents=True, exist_ok=True)
    good = GOOD.tobytes()
    packed_length = len(gzip.compress(good))
    server.files.update({"/good.bin": good, "/gz/good.bin": good})
    expected = work / "expected.npz"
    np.savez(expected, good=GOOD, whole=GOOD, **PADDED)
    base = {"zarr.json": GROUP, "good/zarr.json": meta([64], [64])}
    good_url = f"{server.url}/good.bin"

    def case(
        name: str, refs: dict[str, Any], expect: dict[str, str], **document: Any
    ) -> tuple[str, dict[str, Any], Any]:
        body = {"version": 1, "refs": {**base, "good/c/0": [good_url, 0, 256], **refs}}
        body.update(document)
        path = work / f"{name.replace(' ', '-')}.json"
        path.write_text(json.dumps(body))
        return (
            "hostile network",
            {
                "id": f"hn-{name}",
                "name": name,
                "path": str(path),
                "arrays": sorted({"good", *expect}),
                "expect": {"good": "equal", **expect},
                "expected": str(expected),
                "check_injected": ["/good.bin", "/gz/good.bin", "/gz/refs.json"],
            },
            server.reset,
        )

    chunk = {"a/zarr.json": meta([64], [64])}
    for label, etag in {
        "a header": '"e"\r\nX-Injected: 1',
        "a second request": '"e"\r\n\r\nGET /injected HTTP/1.1\r\nHost: x\r\n\r\n',
        "a bare LF": '"e"\nX-Injected: 1',
    }.items():
        yield case(
            f"etag carrying {label}",
            {**chunk, "a/c/0": [good_url, 0, 256]},
            {"a": "typed"},
            version=2,
            sources={good_url: {"size": 256, "etag": etag}},
        )
    # A whole file answered gzip-encoded: its stored bytes, or a refusal, never the gzip bytes
    # (an array of exactly their length must not read: the file is 256 bytes).
    gz_url = f"{server.url}/gz/good.bin"
    yield case(
        "gzip whole-file answer",
        {
            "whole/zarr.json": meta([64], [64]),
            "whole/c/0": [gz_url],
            "gzipped/zarr.json": meta([packed_length], [packed_length], "uint8"),
            "gzipped/c/0": [gz_url],
        },
        {"whole": "equal", "gzipped": "typed"},
    )
    # The reference file itself answered gzip-encoded.
    refs = {"version": 1, "refs": {**base, "good/c/0": [good_url, 0, 256]}}
    server.files["/gz/refs.json"] = json.dumps(refs).encode()
    name, gz_case, prepare = case("gzip reference file", {}, {})
    gz_case["path"] = f"{server.url}/gz/refs.json"
    yield name, gz_case, prepare
    # Short and overrunning references, with and without a recorded size: padded where the
    # reference's size or the recorded size proves it, else refused (as in fuzz.hostile).
    for sized in (True, False):
        document = {"version": 2, "sources": {good_url: {"size": 256}}} if sized else {}
        label = "with a recorded size" if sized else "without a recorded size"
        yield case(
            f"overrunning the end {label}",
            {
                "padded_overrun/zarr.json": meta([64], [64]),
                "padded_overrun/c/0": [good_url, 200, 256],
            },
            {"padded_overrun": "equal" if sized else "typed"},
            **document,
        )
        yield case(
            f"short of the chunk {label}",
            {
                "padded_short/zarr.json": meta([64], [64]),
                "padded_short/c/0": [good_url, 0, 100],
            },
            {"padded_short": "equal"},
            **document,
        )
