"""A real nginx serving a directory on loopback, with a JSON-lines access log we can count.

Tests of a range-reading store should talk to a real static file server, not to a mock that
agrees with whatever the client expects: nginx decides what a Range, an ``If-Match`` or a CORS
preflight answers, and its own access log says how many requests and bytes the client cost.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from shadowzarr_testing._ports import free_port

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "AccessLogEntry",
    "CorsMode",
    "NginxError",
    "NginxNotFoundError",
    "NginxServer",
    "find_nginx",
]

CorsMode = Literal["full", "no-expose"] | None

#: Location answered by nginx itself (no log line); a reply proves earlier requests were logged.
_SYNC_PATH = "/__shadowzarr_sync__"
_TOKEN_HEADER = "X-Shadowzarr-Nginx"
_START_ATTEMPTS = 5
_START_TIMEOUT = 10.0


class NginxError(RuntimeError):
    """nginx could not be started or stopped."""


class NginxNotFoundError(NginxError, FileNotFoundError):
    """No nginx binary on this machine; tests that need a real server cannot run."""


@dataclass(frozen=True, slots=True)
class AccessLogEntry:
    """One request as nginx logged it (empty strings for absent headers)."""

    method: str
    uri: str
    """Decoded, normalised path without the query (nginx ``$uri``)."""
    request_uri: str
    """Path and query exactly as the client sent them."""
    status: int
    range: str
    """The ``Range`` request header."""
    if_match: str
    """The ``If-Match`` request header."""
    bytes_sent: int
    """Bytes sent to the client, headers included."""
    body_bytes_sent: int
    request_time: float
    """Seconds, millisecond resolution."""
    connection: int = 0
    """nginx's serial number of the client connection the request came on."""
    connection_requests: int = 0
    """How many requests that connection had carried, this one included."""


def find_nginx() -> str:
    """Return the nginx binary, or raise `NginxNotFoundError` saying how to install it."""
    for candidate in ("/usr/sbin/nginx", shutil.which("nginx")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise NginxNotFoundError(
        "nginx is required by the shadowzarr network tests but was not found "
        "(looked at /usr/sbin/nginx and PATH). Install it with `apt-get install nginx` "
        "(Debian/Ubuntu) or `brew install nginx` (macOS)."
    )


_LOG_FORMAT = (
    '{"method":"$request_method","uri":"$uri","request_uri":"$request_uri",'
    '"status":$status,"range":"$http_range","if_match":"$http_if_match",'
    '"bytes_sent":$bytes_sent,"body_bytes_sent":$body_bytes_sent,'
    '"request_time":$request_time,"connection":$connection,'
    '"connection_requests":$connection_requests}'
)

_CORS_FULL = """
            add_header Access-Control-Allow-Origin "*" always;
            add_header Access-Control-Allow-Headers "Range, If-Match" always;
            add_header Access-Control-Expose-Headers
                "Content-Range, ETag, Content-Length, Accept-Ranges" always;
"""
_CORS_NO_EXPOSE = """
            add_header Access-Control-Allow-Origin "*" always;
            add_header Access-Control-Allow-Headers "Range, If-Match" always;
"""
_PREFLIGHT = """
            if ($request_method = OPTIONS) {{
{headers}
                add_header Access-Control-Allow-Methods "GET, HEAD, OPTIONS" always;
                add_header Access-Control-Max-Age 600 always;
                return 204;
            }}
"""


def _render_conf(
    *,
    root: Path,
    port: int,
    work: Path,
    cors: CorsMode,
    token: str,
    user: str | None = None,
    protected: Mapping[str, tuple[str, str]] | None = None,
) -> str:
    if cors is None:
        cors_block = ""
    elif cors in ("full", "no-expose"):
        headers = _CORS_FULL if cors == "full" else _CORS_NO_EXPOSE
        cors_block = _PREFLIGHT.format(headers=headers) + headers
    else:
        raise ValueError(f"cors must be None, 'full' or 'no-expose', not {cors!r}")
    temp = work / "temp"
    # One process as the caller by default; with ``user``, a master and a worker that runs as
    # that user, as a deployed nginx serves (it needs the master to start as root).
    processes = "master_process off;" if user is None else f"master_process on;\nuser {user};"
    return f"""
daemon off;
{processes}
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{
    worker_connections 512;
}}
http {{
    log_format shadowzarr_json escape=json '{_LOG_FORMAT}';
    access_log {work}/access.jsonl shadowzarr_json;
    client_body_temp_path {temp}/client_body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    types {{
        application/json json;
        text/plain txt;
        text/html html;
        application/javascript js mjs;
        application/wasm wasm;
        text/css css;
    }}
    default_type application/octet-stream;
    sendfile on;
    etag on;
    keepalive_requests 10000;
    keepalive_timeout 30s;
    server_tokens off;
    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        root {root};
        location = {_SYNC_PATH} {{
            access_log off;
            add_header {_TOKEN_HEADER} {token} always;
            return 204;
        }}
        location / {{
{cors_block}
        }}
{_protected_locations(protected or {}, cors_block)}
    }}
}}
"""


_PLAIN = re.compile(r"[A-Za-z0-9._~/-]+")


def _protected_locations(protected: Mapping[str, tuple[str, str]], cors_block: str) -> str:
    """A location per path prefix answering 403 to a request without the header it wants."""
    blocks = []
    for prefix, (name, value) in protected.items():
        if not (prefix.startswith("/") and _PLAIN.fullmatch(prefix)):
            raise ValueError(f"protected path prefix must be a plain absolute path: {prefix!r}")
        if not (_PLAIN.fullmatch(name) and _PLAIN.fullmatch(value)):
            raise ValueError("protected header name and value must be plain tokens")
        variable = "$http_" + name.lower().replace("-", "_")
        blocks.append(
            f"""        location {prefix} {{
            if ({variable} != "{value}") {{
                return 403;
            }}
{cors_block}
        }}"""
        )
    return "\n".join(blocks)


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Stop nginx: SIGTERM is its fast shutdown; SIGKILL if it does not go within 5 s."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


class NginxServer:
    """nginx serving ``root`` on ``127.0.0.1`` at a free port, as a child of this process.

    Parameters
    ----------
    root
        Directory served at ``/``; files may be added or replaced while the server runs.
    cors
        ``None`` (no CORS headers), ``"full"`` (allow any origin, allow ``Range`` and
        ``If-Match``, expose ``Content-Range``, ``ETag``, ``Content-Length``, ``Accept-Ranges``;
        OPTIONS preflights answer 204) or ``"no-expose"`` (allow, but expose nothing, the
        misconfiguration browsers punish by hiding ``Content-Range``).
    user
        Serve as this user (``"nobody nogroup"``), as a deployed nginx does: files that user may
        not read answer 403. Needs this process to run as root; None serves as the caller.
    protected
        Path prefix (``"/private/"``) → (header name, value): a request under it without that
        header answers 403, as a server behind a token does.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        cors: CorsMode = "full",
        user: str | None = None,
        protected: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"nginx root {self.root} is not a directory")
        if cors not in (None, "full", "no-expose"):
            raise ValueError(f"cors must be None, 'full' or 'no-expose', not {cors!r}")
        self.cors: CorsMode = cors
        self.user = user
        self.protected = dict(protected or {})
        self.port = 0
        self._binary = find_nginx()
        self._work: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[..., NginxServer] | None = None
        self._log_offset = 0
        self._token = secrets.token_hex(8)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> NginxServer:
        """Start nginx and return once it answers HTTP (retrying on a stolen port)."""
        if self._process is not None:
            raise NginxError("nginx is already running")
        self._work = Path(tempfile.mkdtemp(prefix="shadowzarr-nginx-"))
        (self._work / "temp").mkdir()
        failure = ""
        for _ in range(_START_ATTEMPTS):
            # Another process may take the port between free_port() and nginx's bind: retry.
            self.port = free_port()
            failure = self._try_start()
            if not failure:
                return self
        shutil.rmtree(self._work, ignore_errors=True)
        self._work = None
        raise NginxError(f"nginx did not start after {_START_ATTEMPTS} attempts: {failure}")

    def _try_start(self) -> str:
        assert self._work is not None
        conf = self._work / "nginx.conf"
        conf.write_text(
            _render_conf(
                root=self.root,
                port=self.port,
                work=self._work,
                cors=self.cors,
                token=self._token,
                user=self.user,
                protected=self.protected,
            )
        )
        (self._work / "access.jsonl").write_bytes(b"")
        self._log_offset = 0
        output = (self._work / "stderr.log").open("wb")
        with output:
            process = subprocess.Popen(
                [self._binary, "-p", f"{self._work}/", "-c", str(conf), "-e", "stderr"],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
            )
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return (self._work / "stderr.log").read_text(errors="replace").strip()
            # Accepting is not enough: another server may have taken the port (nginx then
            # retries bind() for 2.5 s and exits), so wait for *our* nginx to answer.
            if self._answers():
                self._process = process
                self._finalizer = weakref.finalize(self, _kill, process)
                return ""
            time.sleep(0.01)
        _kill(process)
        return f"nginx did not answer within {_START_TIMEOUT} s"

    def _answers(self) -> bool:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=0.5)
        try:
            connection.request("GET", _SYNC_PATH)
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()
        return response.status == 204 and response.getheader(_TOKEN_HEADER) == self._token

    def stop(self) -> None:
        """Kill nginx and remove its work directory; safe to call twice."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._process = None
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    def __enter__(self) -> NginxServer:
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
        return self._process is not None and self._process.poll() is None

    # -- addresses and files -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "") -> str:
        """Absolute URL of ``path`` (relative to the root; a leading ``/`` is optional)."""
        return f"{self.base_url}/{path.lstrip('/')}"

    def path(self, relative: str) -> Path:
        """Filesystem path of ``relative`` under the root."""
        return self.root / relative.lstrip("/")

    def write_file(self, relative: str, data: bytes) -> Path:
        """Write (or atomically replace) a file under the root so that its ETag changes.

        nginx's ETag is ``mtime-size`` with one-second mtime resolution, so a same-size rewrite
        within the same second would keep the old ETag; the mtime is moved forward then.
        """
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        old = target.stat() if target.exists() else None
        temporary = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        temporary.write_bytes(data)
        os.replace(temporary, target)
        if old is not None:
            new = target.stat()
            if int(new.st_mtime) <= int(old.st_mtime) and new.st_size == old.st_size:
                bumped = int(old.st_mtime) + 1
                os.utime(target, (bumped, bumped))
        return target

    # -- access log ----------------------------------------------------------------------------

    def _sync(self) -> None:
        """Wait until nginx has logged every request it finished before now.

        nginx logs a request just after sending its last byte, so a client can read a reply
        before the line exists. nginx runs one event loop in one process: once it answered a
        later request, every earlier finished request has been written to the log.
        """
        if not self.running:
            return
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request("GET", _SYNC_PATH)
            connection.getresponse().read()
        finally:
            connection.close()

    def _log_path(self) -> Path:
        if self._work is None:
            raise NginxError("nginx is not running")
        return self._work / "access.jsonl"

    def entries(self) -> list[AccessLogEntry]:
        """Requests logged since start (or the last `reset`), oldest first."""
        self._sync()
        with self._log_path().open("rb") as log:
            log.seek(self._log_offset)
            lines = log.read().splitlines()
        return [AccessLogEntry(**json.loads(line)) for line in lines if line.strip()]

    def connections(self) -> int:
        """Client connections the requests logged since start (or `reset`) came on."""
        return len({entry.connection for entry in self.entries()})

    def reset(self) -> None:
        """Forget the requests logged so far (counters restart from zero)."""
        self._sync()
        self._log_offset = self._log_path().stat().st_size

    def count(self, method: str | None = None, path_prefix: str | None = None) -> int:
        """Number of logged requests, optionally only one method and/or a path prefix."""
        return len(self._select(method, path_prefix))

    def bytes_sent(self, path_prefix: str | None = None, *, headers: bool = False) -> int:
        """Body bytes sent (with ``headers=True``: bytes on the wire, headers included)."""
        selected = self._select(None, path_prefix)
        if headers:
            return sum(entry.bytes_sent for entry in selected)
        return sum(entry.body_bytes_sent for entry in selected)

    def _select(self, method: str | None, path_prefix: str | None) -> list[AccessLogEntry]:
        prefix = None if path_prefix is None else "/" + path_prefix.lstrip("/")
        return [
            entry
            for entry in self.entries()
            if (method is None or entry.method == method.upper())
            and (prefix is None or entry.uri.startswith(prefix))
        ]

    def error_log(self) -> str:
        """nginx's error log (useful in assertion messages)."""
        if self._work is None:
            return ""
        with contextlib.suppress(FileNotFoundError):
            return (self._work / "error.log").read_text(errors="replace")
        return ""

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return (
            f"NginxServer(root={str(self.root)!r}, port={self.port}, cors={self.cors!r}, {state})"
        )
