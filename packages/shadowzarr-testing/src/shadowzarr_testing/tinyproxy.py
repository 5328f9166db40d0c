"""A real forward proxy (tinyproxy) on loopback, whose own log says what went through it.

Users behind a company proxy set ``HTTP_PROXY``/``HTTPS_PROXY``; tests of proxy support talk
to a real one, not to a mock that agrees with the client. tinyproxy forwards ``http://``
requests sent with absolute targets and opens ``CONNECT`` tunnels for ``https://`` ones; its
log at level Info names every request (``Request (file descriptor 5): GET http://… HTTP/1.1``)
and every client connection, which `requests` and `connections` count.
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shadowzarr_testing._ports import free_port

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["ProxiedRequest", "TinyProxy", "TinyProxyNotFoundError", "find_tinyproxy"]

_REQUEST = re.compile(r"\]: Request \(file descriptor \d+\): (\S+) (\S+) HTTP/1\.[01]$")
_CONNECTION = re.compile(r"\]: Connect \(file descriptor \d+\): ")
_START_TIMEOUT = 10.0


class TinyProxyNotFoundError(FileNotFoundError):
    """No tinyproxy on this machine (``apt-get install tinyproxy``)."""


def find_tinyproxy() -> str:
    found = shutil.which("tinyproxy") or (
        "/usr/bin/tinyproxy" if Path("/usr/bin/tinyproxy").exists() else None
    )
    if found is None:
        raise TinyProxyNotFoundError(
            "tinyproxy is not installed: `apt-get install tinyproxy` (Debian/Ubuntu) or "
            "`brew install tinyproxy` (macOS); tools/test installs it"
        )
    return found


@dataclass(frozen=True, slots=True)
class ProxiedRequest:
    """One request as tinyproxy logged it: ``GET http://host:port/path`` or
    ``CONNECT host:port``."""

    method: str
    target: str


class TinyProxy:
    """tinyproxy in the foreground on a free loopback port, with its config and log in a
    temporary directory; ``credentials=(user, password)`` makes it ask for Basic
    ``Proxy-Authorization`` (407 without)."""

    def __init__(self, credentials: tuple[str, str] | None = None) -> None:
        self.credentials = credentials
        self.port = 0
        self._binary = find_tinyproxy()
        self._work: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[..., TinyProxy] | None = None

    def start(self) -> TinyProxy:
        self._work = Path(tempfile.mkdtemp(prefix="shadowzarr-tinyproxy-"))
        for _ in range(5):  # another process may take the port before tinyproxy binds it
            self.port = free_port()
            (self._work / "tinyproxy.log").write_bytes(b"")
            (self._work / "tinyproxy.conf").write_text(self._config())
            process = subprocess.Popen(
                [self._binary, "-d", "-c", str(self._work / "tinyproxy.conf")],
                stdout=subprocess.DEVNULL,
                stderr=(self._work / "stderr.log").open("wb"),
            )
            if self._wait_listening(process):
                self._process = process
                self._finalizer = weakref.finalize(self, _stop, process)
                return self
            _stop(process)
        raise RuntimeError(f"tinyproxy did not start: {self.log_text()[-2000:]}")

    def _config(self) -> str:
        assert self._work is not None
        lines = [
            f"Port {self.port}",
            "Listen 127.0.0.1",
            "Timeout 60",
            f'LogFile "{self._work / "tinyproxy.log"}"',
            "LogLevel Connect",
            "MaxClients 200",
            "Allow 127.0.0.1",
            "DisableViaHeader Yes",
        ]  # no ConnectPort line: tunnels to any port (the tests' servers use free ports)
        if self.credentials is not None:
            lines.append(f"BasicAuth {self.credentials[0]} {self.credentials[1]}")
        return "\n".join(lines) + "\n"

    def _wait_listening(self, process: subprocess.Popen[bytes]) -> bool:
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._process = None
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    def __enter__(self) -> TinyProxy:
        return self.start() if self._process is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:port`` (with the credentials, when it asks for them)."""
        if self.credentials is None:
            return f"http://127.0.0.1:{self.port}"
        user, password = self.credentials
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    # -- the log -------------------------------------------------------------------------------

    def log_text(self) -> str:
        if self._work is None:
            return ""
        return (self._work / "tinyproxy.log").read_text(errors="replace")

    def requests(self, settle: float = 0.2) -> list[ProxiedRequest]:
        """Every request the proxy received, in order (after ``settle`` seconds without a new
        line: tinyproxy writes its log as it goes)."""
        text = self._settled(settle)
        return [
            ProxiedRequest(found[1], found[2])
            for line in text.splitlines()
            if (found := _REQUEST.search(line)) is not None
        ]

    def connections(self, settle: float = 0.2) -> int:
        """Client connections the proxy accepted."""
        lines = self._settled(settle).splitlines()
        return sum(_CONNECTION.search(line) is not None for line in lines)

    def _settled(self, settle: float) -> str:
        text = self.log_text()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(settle)
            again = self.log_text()
            if again == text:
                return text
            text = again
        return text

    def reset(self) -> None:
        """Forget what was logged so far."""
        if self._work is not None:
            (self._work / "tinyproxy.log").write_bytes(b"")

    def __repr__(self) -> str:
        return f"TinyProxy(port={self.port})"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
