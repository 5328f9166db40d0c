"""One-range GETs on kept-alive HTTP/1.1 connections: every range read over HTTP.

A generator reading an index from a server that answers one range per request (S3) sends
thousands of small GETs at once. aiohttp spends about 130 µs of CPU on each, and on two cores
that, not the network, bounded the generator. Here a request is one write of a prepared head
and its answer one parse of a head and a ``Content-Length`` body (about 50 µs). The body is
received straight into one array of its length (``recv_into``), so a read of megabytes is never
joined from pieces: aiohttp's joining was a sixth of the CPU of a sequential read. Only that is
understood: an answer needing more (a redirect, a chunked body) is `Unhandled`, and the caller
asks aiohttp instead. Connection failures and stalls are `TransientError`, like aiohttp's.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import SourceError

from shadowzarr_store.transport.errors import FramingError, TransientError
from shadowzarr_store.transport.head_values import check_request

if TYPE_CHECKING:
    from yarl import URL

__all__ = ["Head", "OriginPool", "Unhandled"]

_MAX_HEAD = 64 * 1024
_HEAD_BUFFER = 16 * 1024
ADDRESSES_KEPT_SECONDS = 60.0
"""How long a host name's addresses serve new connections. asyncio looks the name up again for
every connection, each lookup a job for the default executor's few threads (which also rearrange
packs): a cold read opening tens of connections to S3 made tens of lookups."""


@cache
def _tls() -> ssl.SSLContext:
    """One verifying context for every pool (loading the CA certificates takes milliseconds)."""
    return ssl.create_default_context()


def certificate_refused(exc: ssl.SSLCertVerificationError) -> str:
    """Why the server's certificate was not accepted, for a user to act on (their trust store
    is what ``SSL_CERT_FILE`` names, or the system's)."""
    reason = exc.verify_message or exc.reason or str(exc)
    return (
        f"the server's certificate was refused ({reason}); a private certificate authority "
        "is trusted through SSL_CERT_FILE"
    )


class Unhandled(Exception):
    """The answer needs the general client (a redirect, a body without ``Content-Length``)."""


class Head:
    """Status and headers (names in lower case) of an answer."""

    __slots__ = ("headers", "status")

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status, self.headers = status, headers


def _parse_head(raw: bytes) -> tuple[Head, bool]:
    """The head, and whether the connection may be used again."""
    lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    status = int(rest[:3])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"header line without a colon: {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    reusable = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return Head(status, headers), reusable


class _Connection(asyncio.BufferedProtocol):
    """One connection; one request on it at a time. Bytes are received straight into their
    final place (``recv_into``): the head into a small buffer, the body, once its length is
    known, into one array of that length, so a large body is never joined from pieces."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reusable = False
        self._heads = bytearray(_HEAD_BUFFER)
        self._filled = 0
        self._body: memoryview | None = None
        self._received = 0
        self._waiter: asyncio.Future[tuple[Head, memoryview]] | None = None
        self._head: Head | None = None
        self._keep = False
        self.progress = 0
        self._lost = False
        self._most: int | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    @property
    def usable(self) -> bool:
        return not self._lost and self.transport is not None and not self.transport.is_closing()

    def send(
        self, head: bytes, waiter: asyncio.Future[tuple[Head, memoryview]], most: int | None = None
    ) -> None:
        """Write a request; ``most``: the most body bytes its answer may have (a longer one,
        such as a whole object from a server ignoring ``Range``, fails before it is read)."""
        assert self.transport is not None
        self._waiter, self._head, self.reusable = waiter, None, False
        self._most = most
        self.transport.write(head)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body is not None:
            return self._body[self._received :]
        if self._filled == len(self._heads):  # a head longer than the buffer: keep it whole
            self._heads.extend(bytes(_HEAD_BUFFER))
        return memoryview(self._heads)[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self.progress += 1
        if self._body is not None:
            self._received += nbytes
            if self._received == len(self._body):
                self._finish()
            return
        self._filled += nbytes
        if self._waiter is None:
            self._fail(FramingError("bytes arrived with no request in flight"))
            return
        filled = memoryview(self._heads)[: self._filled]
        end = self._heads.find(b"\r\n\r\n", 0, self._filled)
        if end < 0 and self._filled <= _MAX_HEAD:
            return  # more of the head to come
        if end < 0 or end > _MAX_HEAD:
            self._fail(FramingError("an answer head longer than 64 KiB"))
            return
        try:
            head, reusable = _parse_head(bytes(filled[:end]))
        except (ValueError, UnicodeDecodeError) as exc:
            self._fail(FramingError(f"an unreadable answer head ({exc})"))
            return
        length = head.headers.get("content-length")
        if length is None or not length.isdigit() or "transfer-encoding" in head.headers:
            self._fail(Unhandled(head.status))
            return
        if self._most is not None and int(length) > max(self._most, _MAX_HEAD):
            self._fail(
                FramingError(
                    f"an answer of {length} bytes (status {head.status}) to a request for "
                    f"at most {self._most}"
                )
            )
            return
        self._head, self._keep = head, reusable
        already = self._filled - end - 4
        if already > int(length):
            self._fail(FramingError("more bytes than Content-Length said"))
            return
        try:
            body = np.empty(int(length), dtype=np.uint8)
        except (MemoryError, ValueError):
            self._fail(FramingError(f"an answer of {length} bytes, more than memory holds"))
            return
        self._body = memoryview(body).cast("B")
        self._body[:already] = filled[end + 4 :]
        self._received, self._filled = already, 0
        if already == len(self._body):
            self._finish()

    def _finish(self) -> None:
        body, self._body = self._body, None
        assert body is not None
        assert self._head is not None
        self.reusable = self._keep  # only once the whole answer is in
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result((self._head, body.toreadonly()))

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            said = f"{type(exc).__name__}: {exc}" if exc else "the server closed the connection"
            waiter.set_exception(ConnectionError(said))

    def _fail(self, exc: Exception) -> None:
        self._body, self._filled = None, 0
        waiter, self._waiter = self._waiter, None
        self.reusable = False
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.close()


class OriginPool:
    """Kept-alive connections to one ``scheme://host:port``, at most ``limit`` at once (one
    pool per event loop: transports cannot cross loops)."""

    def __init__(self, address: URL, limit: int, timeout: float) -> None:
        self._host = address.raw_host or ""
        self._port = address.port or (443 if address.scheme == "https" else 80)
        self._tls = _tls() if address.scheme == "https" else None
        self._host_header = address.host_port_subcomponent
        self._timeout = timeout
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(limit)
        self._all: set[_Connection] = set()
        self._named = not _is_address(self._host)
        self._addresses: tuple[tuple[str, int], ...] = ()
        self._resolved_at = 0.0
        self._resolving = asyncio.Lock()

    def head(self, address: URL, headers: dict[str, str], shown: str) -> bytes:
        """The request head of a GET of ``address`` with ``headers``; `UnsafeRequestError` for
        a value that would not stay on its own line (`check_request`)."""
        target = address.raw_path_qs
        check_request(target, self._host_header, headers, shown)
        lines = [f"GET {target} HTTP/1.1", f"Host: {self._host_header}"]
        lines.extend(f"{name}: {value}" for name, value in headers.items())
        lines.append("Accept-Encoding: identity\r\n\r\n")
        return "\r\n".join(lines).encode("utf-8")

    async def request(
        self, head: bytes, shown: str, most: int | None = None
    ) -> tuple[Head, memoryview]:
        """The answer to ``head``: (head, body); ``most``: the most body bytes it may have (an
        error page may have up to 64 KiB)."""
        async with self._slots:
            connection = None
            while self._idle and connection is None:
                candidate = self._idle.pop()
                connection = candidate if candidate.usable else None
            try:
                if connection is None:
                    connection = await self._connect(shown)
                return await self._exchange(connection, head, shown, most)
            finally:
                if connection is not None:
                    if connection.reusable and connection.usable:
                        self._idle.append(connection)
                    else:
                        self._discard(connection)

    async def _connect(self, shown: str) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._timeout):
                targets = await self._targets() if self._named else ((self._host, self._port),)
                for at, (host, port) in enumerate(targets):
                    try:
                        _, connection = await loop.create_connection(
                            _Connection,
                            host,
                            port,
                            ssl=self._tls,
                            server_hostname=self._host if self._tls else None,
                        )
                    except OSError:
                        if at < len(targets) - 1:
                            continue
                        self._addresses = ()  # none answered: the next connection looks again
                        raise
                    if at and self._addresses == targets:  # the one that answered goes first
                        self._addresses = (targets[at], *targets[:at], *targets[at + 1 :])
                    break
        except TimeoutError as exc:
            raise TransientError(f"{shown}: no connection within {self._timeout} s") from exc
        except ssl.SSLCertVerificationError as exc:
            # not transient: asking again meets the same certificate
            raise SourceError(f"{shown}: {certificate_refused(exc)}") from exc
        except OSError as exc:
            raise TransientError(f"{shown}: cannot connect: {type(exc).__name__}") from exc
        self._all.add(connection)
        return connection

    async def _targets(self) -> tuple[tuple[str, int], ...]:
        """The host name's addresses: looked up once per `ADDRESSES_KEPT_SECONDS` for every
        connection of the pool (a lookup that fails raises, as asyncio's own would)."""
        loop = asyncio.get_running_loop()
        async with self._resolving:
            if not self._addresses or loop.time() - self._resolved_at >= ADDRESSES_KEPT_SECONDS:
                found = await loop.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM)
                addresses = dict.fromkeys((str(a[4][0]), int(a[4][1])) for a in found)
                if not addresses:
                    raise OSError(f"no address for {self._host!r}")
                self._addresses, self._resolved_at = tuple(addresses), loop.time()
            return self._addresses

    async def _exchange(
        self, connection: _Connection, head: bytes, shown: str, most: int | None
    ) -> tuple[Head, memoryview]:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[tuple[Head, memoryview]] = loop.create_future()
        connection.send(head, waiter, most)
        # A stall (no bytes for ``timeout`` seconds) fails the request; one timer per request,
        # looked at every ``timeout`` seconds, not one per piece received.
        seen = [connection.progress]

        def watch() -> None:
            if waiter.done():
                return
            if connection.progress == seen[0]:
                connection._fail(TimeoutError())
                return
            seen[0] = connection.progress
            timer[0] = loop.call_later(self._timeout, watch)

        timer = [loop.call_later(self._timeout, watch)]
        try:
            return await waiter
        except TimeoutError as exc:
            raise TransientError(f"{shown}: no answer within {self._timeout} s") from exc
        except ConnectionError as exc:
            raise TransientError(f"{shown}: {exc}") from exc
        except FramingError as exc:
            raise FramingError(f"{shown}: {exc}") from exc
        finally:
            timer[0].cancel()

    def _discard(self, connection: _Connection) -> None:
        self._all.discard(connection)
        if connection.transport is not None:
            connection.transport.close()

    def close(self) -> None:
        """Close every connection (on the pool's loop)."""
        for connection in list(self._all):
            self._discard(connection)
        self._idle.clear()


def _is_address(host: str) -> bool:
    """Whether ``host`` is an IP address (asyncio connects to one without a lookup)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
