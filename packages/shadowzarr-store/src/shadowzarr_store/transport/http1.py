"""One-range GETs on kept-alive HTTP/1.1 connections: every range read over HTTP.

A generator reading an index from a server that answers one range per request (S3) sends
thousands of small GETs at once. aiohttp spends about 130 µs of CPU on each, and on two cores
that, not the network, bounded the generator. Here a request is one write of a prepared head
and its answer one parse of a head and a ``Content-Length`` body (about 50 µs). The body is
received straight into one array of its length (``recv_into``), so a read of megabytes is never
joined from pieces: aiohttp's joining was a sixth of the CPU of a sequential read. Answers
are framed strictly and whole here, so none is asked for twice: 1xx interim answers are
skipped, LF-only line ends taken, a chunked body decoded (`http1_bodies`), a body longer than
the request may take refused (`AnswerTooLong`) before it is read. Redirects are the caller's.
Connection failures and stalls are `TransientError`, like aiohttp's.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import SourceError

from shadowzarr_store.transport.budget import ConnectionBudget
from shadowzarr_store.transport.errors import FramingError, ProxyError, TransientError
from shadowzarr_store.transport.head_values import (
    check_connect,
    check_request,
    escaped,
    is_header_name,
)
from shadowzarr_store.transport.http1_bodies import AnswerTooLong, ChunkedBody, UntilCloseBody

if TYPE_CHECKING:
    from yarl import URL

    from shadowzarr_store.transport.proxies import Proxy

__all__ = ["IDLE_SECONDS", "AnswerTooLong", "Head", "OriginPool", "content_length"]

_MAX_HEAD = 64 * 1024
_HEAD_BUFFER = 16 * 1024
IDLE_SECONDS = 30.0
"""How long a kept-alive connection may wait for its next request before it is closed."""
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


class Head:
    """Status and headers (names in lower case) of an answer."""

    __slots__ = ("headers", "status")

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status, self.headers = status, headers


_HEAD_END = re.compile(rb"\n\r?\n")
"""The blank line ending a head: CRLF line ends, or bare LF ones (RFC 9112 §2.2 lets a
recipient take LF alone as a line end)."""
_STATUS_LINE = re.compile(r"HTTP/1\.[01] ([1-5][0-9][0-9])(?: .*)?")
_MAX_INTERIM = 16
"""The most 1xx answers (``100 Continue``, ``103 Early Hints``) taken before the final one."""


def _parse_head(raw: bytes) -> tuple[Head, bool]:
    """The head, and whether the connection may be used again. A repeated header's values
    are joined with commas (so two Content-Lengths are no length); a bare CR, a folded line or
    a name that is no token is a ValueError (RFC 9112 §2.2, §5)."""
    lines = [line.removesuffix("\r") for line in raw.decode("latin-1").split("\n")]
    status_line = _STATUS_LINE.fullmatch(lines[0])
    if status_line is None or "\r" in lines[0]:
        raise ValueError(f"not a status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not is_header_name(name) or "\r" in value:
            raise ValueError(f"an unreadable header line: {line[:80]!r}")
        name, value = name.lower(), value.strip(" \t")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    connection = headers.get("connection", "").lower()
    if lines[0].startswith("HTTP/1.1"):
        reusable = connection != "close"
    else:
        reusable = connection == "keep-alive"
    return Head(int(status_line[1]), headers), reusable


def content_length(value: str) -> int:
    """A ``Content-Length``: ASCII digits only (``str.isdigit`` also takes ``²``); anything
    else, a list of lengths included, is a `FramingError`."""
    if not (value.isascii() and value.isdigit()):
        raise FramingError(f"Content-Length {escaped(value, 40)} is not a length")
    return int(value)


type _Growing = ChunkedBody | UntilCloseBody


class _Connection(asyncio.BufferedProtocol):
    """One connection; one request on it at a time. Bytes are received straight into their
    final place (``recv_into``): the head into a small buffer, the body, once its length is
    known, into one array of that length, so a large body is never joined from pieces. A body
    whose length the head does not give (chunked, or ended by closing) grows into one buffer
    up to the most bytes the request may take."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reusable = False
        self._heads = bytearray(_HEAD_BUFFER)
        self._filled = 0
        self._body: memoryview | None = None
        self._growing: _Growing | None = None
        self._scratch = bytearray(_HEAD_BUFFER)
        self._received = 0
        self._waiter: asyncio.Future[tuple[Head, memoryview]] | None = None
        self._head: Head | None = None
        self._keep = False
        self._interim = 0
        self.progress = 0
        self._lost = False
        self._most: int | None = None
        self._tunnel = False
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    @property
    def usable(self) -> bool:
        return not self._lost and self.transport is not None and not self.transport.is_closing()

    def send(
        self,
        head: bytes,
        waiter: asyncio.Future[tuple[Head, memoryview]],
        most: int | None = None,
        *,
        tunnel: bool = False,
    ) -> None:
        """Write a request; ``most``: the most body bytes its answer may have (a longer one,
        such as a whole object from a server ignoring ``Range``, fails before it is read:
        `AnswerTooLong`). ``tunnel``: a CONNECT to a proxy, whose answer is its head alone."""
        assert self.transport is not None
        self._waiter, self._head, self.reusable = waiter, None, False
        self._most, self._interim, self._tunnel = most, 0, tunnel
        self.transport.write(head)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body is not None:
            return self._body[self._received :]
        if self._growing is not None:
            return memoryview(self._scratch)
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
        if self._growing is not None:
            self._grow(memoryview(self._scratch)[:nbytes])
            return
        self._filled += nbytes
        if self._waiter is None:
            self._fail(FramingError("bytes arrived with no request in flight"))
            return
        self._read_head()

    def _read_head(self) -> None:
        """Parse the answer's head once it is in; skip 1xx interim answers (RFC 9110 §15.2)."""
        while True:
            found = _HEAD_END.search(self._heads, 0, self._filled)
            if found is None and self._filled <= _MAX_HEAD:
                return  # more of the head to come
            if found is None or found.start() > _MAX_HEAD:
                self._fail(FramingError("an answer head longer than 64 KiB"))
                return
            try:
                head, reusable = _parse_head(bytes(self._heads[: found.start()]))
            except (ValueError, UnicodeDecodeError) as exc:
                self._fail(FramingError(f"an unreadable answer head ({exc})"))
                return
            if not 100 <= head.status < 200:
                if self._tunnel:
                    self._tunnel_answered(head, found.end())
                else:
                    self._begin_body(head, reusable, found.end())
                return
            self._interim += 1
            if head.status == 101 or self._interim > _MAX_INTERIM:
                self._fail(FramingError(f"an unexpected HTTP {head.status}"))
                return
            rest = bytes(self._heads[found.end() : self._filled])
            self._heads[: len(rest)] = rest
            self._filled = len(rest)

    def _tunnel_answered(self, head: Head, end: int) -> None:
        """A proxy's answer to CONNECT: a 2xx is the tunnel open, with nothing after its head
        (RFC 9110 §9.3.6; a byte the server sent before our TLS hello would be an attack on
        the handshake); any other answer is handed over as it is, the connection not reused."""
        if 200 <= head.status < 300 and self._filled > end:
            self._fail(FramingError("bytes after the proxy's answer to CONNECT"))
            return
        self._tunnel, self._filled, self._keep = False, 0, 200 <= head.status < 300
        self._head, self._body = head, memoryview(b"")
        self._finish()

    def _begin_body(self, head: Head, reusable: bool, start: int) -> None:
        already = memoryview(self._heads)[start : self._filled]
        most = self._most
        if most is not None and not 200 <= head.status < 300:
            most = max(most, _MAX_HEAD)  # an error page may have up to 64 KiB
        self._head, self._keep = head, reusable
        coding = head.headers.get("transfer-encoding")
        length = head.headers.get("content-length")
        try:
            if coding is not None:
                if coding.lower() != "chunked":
                    raise FramingError(f"Transfer-Encoding {escaped(coding, 40)} is not read")
                # with a Content-Length beside it, the chunking decides (RFC 9112 §6.3) and
                # the connection is not used again
                self._keep = reusable and length is None
                self._filled = 0
                self._growing = ChunkedBody(most)
                self._grow(bytes(already))
                return
            if head.status in (204, 304):
                size = 0
            elif length is None:
                self._keep, self._filled = False, 0
                self._growing = UntilCloseBody(most)
                self._grow(bytes(already))
                return
            else:
                size = content_length(length)
            if most is not None and size > most:
                raise AnswerTooLong(size, head.status)
        except (FramingError, AnswerTooLong) as exc:
            self._fail(exc)
            return
        if len(already) > size:
            self._fail(FramingError("more bytes than Content-Length said"))
            return
        try:
            body = np.empty(size, dtype=np.uint8)
        except (MemoryError, ValueError):
            self._fail(FramingError(f"an answer of {length} bytes, more than memory holds"))
            return
        self._body = memoryview(body).cast("B")
        self._body[: len(already)] = already
        self._received, self._filled = len(already), 0
        if len(already) == len(self._body):
            self._finish()

    def _grow(self, piece: bytes | memoryview) -> None:
        growing = self._growing
        assert growing is not None
        try:
            growing.feed(piece)
        except (FramingError, AnswerTooLong) as exc:
            self._fail(exc)
            return
        except MemoryError:
            self._fail(FramingError("an answer longer than memory holds"))
            return
        if growing.done:
            self._keep = self._keep and not growing.extra
            self._body = memoryview(growing.data)
            self._finish()

    def _finish(self) -> None:
        body, self._body, self._growing = self._body, None, None
        assert body is not None
        assert self._head is not None
        self.reusable = self._keep  # only once the whole answer is in
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result((self._head, body.toreadonly()))

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        growing = self._growing
        if isinstance(growing, UntilCloseBody) and exc is None and self._waiter is not None:
            growing.done = True  # the close is the body's end
            self._body = memoryview(growing.data)
            self._finish()
            return
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            said = f"{type(exc).__name__}: {exc}" if exc else "the server closed the connection"
            waiter.set_exception(ConnectionError(said))

    def _fail(self, exc: Exception) -> None:
        self._body, self._growing, self._filled = None, None, 0
        waiter, self._waiter = self._waiter, None
        self.reusable = False
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.close()


class OriginPool:
    """Kept-alive connections to one ``scheme://host:port``, at most ``limit`` at once (one
    pool per event loop: transports cannot cross loops), directly or through a forward
    ``proxy``: an ``http://`` origin's requests go to the proxy with absolute targets, an
    ``https://`` origin's through a CONNECT tunnel in which TLS starts with the origin.
    Connections idle for `IDLE_SECONDS` are closed."""

    def __init__(
        self,
        address: URL,
        limit: int,
        timeout: float,
        budget: ConnectionBudget | None = None,
        proxy: Proxy | None = None,
    ) -> None:
        self._host = address.raw_host or ""
        self._port = address.port or (443 if address.scheme == "https" else 80)
        self._tls = _tls() if address.scheme == "https" else None
        self._host_header = address.host_port_subcomponent or ""
        self._proxy = proxy
        self._absolute = proxy is not None and self._tls is None
        """Requests go to a proxy that forwards them: their targets are absolute URLs."""
        self._via = f" through the proxy {proxy.shown}" if proxy is not None else ""
        self._dial = (proxy.host, proxy.port) if proxy is not None else (self._host, self._port)
        self._timeout = timeout
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(limit)
        self._all: set[_Connection] = set()
        self._named = not _is_address(self._dial[0])
        self._addresses: tuple[tuple[str, int], ...] = ()
        self._resolved_at = 0.0
        self._resolving = asyncio.Lock()
        self._budget = budget if budget is not None else ConnectionBudget(limit)
        self._budget.pools.append(self)
        self._sweeper: asyncio.TimerHandle | None = None
        self.opened = 0
        """Connections opened so far (statistics per origin)."""
        self.requests = 0

    @property
    def open_connections(self) -> int:
        return len(self._all)

    @property
    def idle_connections(self) -> int:
        return len(self._idle)

    def head(self, address: URL, headers: dict[str, str], shown: str) -> bytes:
        """The request head of a GET of ``address`` with ``headers``; `UnsafeRequestError` for
        a value that would not stay on its own line (`check_request`)."""
        target = address.raw_path_qs
        if self._absolute:
            assert self._proxy is not None
            target = f"http://{self._host_header}{target}"
            if self._proxy.authorization is not None:
                headers = {**headers, "Proxy-Authorization": self._proxy.authorization}
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
                if candidate.usable:
                    connection = candidate
                else:
                    self._discard(candidate)
            try:
                if connection is None:
                    connection = await self._connect(shown)
                self.requests += 1
                answer = await self._exchange(connection, head, shown, most)
            finally:
                if connection is not None:
                    if connection.reusable and connection.usable and not self._budget.wanted:
                        self._keep_idle(connection)
                    else:
                        self._discard(connection)
            if self._absolute and answer[0].status == 407:
                assert self._proxy is not None
                named = self._proxy.shown
                raise ProxyError(f"{shown}: the proxy {named} asks for credentials (407)")
            return answer

    def _keep_idle(self, connection: _Connection) -> None:
        """Keep ``connection`` for the next request; one timer closes those idle too long."""
        loop = asyncio.get_running_loop()
        connection.idle_since = loop.time()
        self._idle.append(connection)
        if self._sweeper is None:
            self._sweeper = loop.call_later(IDLE_SECONDS, self._sweep)

    def _sweep(self) -> None:
        """Close the connections idle for `IDLE_SECONDS` (a server closes them about then
        anyway, and a process that stopped reading keeps no sockets)."""
        self._sweeper = None
        if not self._idle:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        expired = [c for c in self._idle if now - c.idle_since >= IDLE_SECONDS - 0.01]
        for connection in expired:
            self._idle.remove(connection)
            self._discard(connection)
        if self._idle:
            oldest = min(c.idle_since for c in self._idle)
            self._sweeper = loop.call_later(max(oldest + IDLE_SECONDS - now, 0.01), self._sweep)

    async def _connect(self, shown: str) -> _Connection:
        """A new connection, within the loop's budget of connections across origins."""
        await self._budget.acquire()
        try:
            connection = await self._open(shown)
        except BaseException:
            self._budget.release()
            raise
        self._all.add(connection)
        self.opened += 1
        return connection

    async def _open(self, shown: str) -> _Connection:
        loop = asyncio.get_running_loop()
        direct_tls = self._tls if self._proxy is None else None
        dialled = False
        try:
            async with asyncio.timeout(self._timeout):
                targets = await self._targets() if self._named else (self._dial,)
                for at, (host, port) in enumerate(targets):
                    try:
                        _, connection = await loop.create_connection(
                            _Connection,
                            host,
                            port,
                            ssl=direct_tls,
                            server_hostname=self._host if direct_tls else None,
                        )
                    except OSError:
                        if at < len(targets) - 1:
                            continue
                        self._addresses = ()  # none answered: the next connection looks again
                        raise
                    if at and self._addresses == targets:  # the one that answered goes first
                        self._addresses = (targets[at], *targets[:at], *targets[at + 1 :])
                    break
                dialled = True
                if self._proxy is not None and self._tls is not None:
                    await self._tunnel(connection, shown)
        except TimeoutError as exc:
            raise TransientError(
                f"{shown}: no connection{self._via} within {self._timeout} s"
            ) from exc
        except ssl.SSLCertVerificationError as exc:
            # not transient: asking again meets the same certificate
            raise SourceError(f"{shown}: {certificate_refused(exc)}") from exc
        except OSError as exc:
            if self._proxy is not None and not dialled:
                # not retried, and never answered by going directly (see `ProxyError`)
                raise ProxyError(
                    f"{shown}: cannot connect to the proxy {self._proxy.shown}: "
                    f"{type(exc).__name__}"
                ) from exc
            raise TransientError(
                f"{shown}: cannot connect{self._via}: {type(exc).__name__}"
            ) from exc
        return connection

    async def _tunnel(self, connection: _Connection, shown: str) -> None:
        """Open a CONNECT tunnel through the proxy to the origin and start TLS in it."""
        proxy = self._proxy
        assert proxy is not None
        assert self._tls is not None
        assert connection.transport is not None
        host = f"[{self._host}]" if ":" in self._host else self._host
        authority = f"{host}:{self._port}"
        headers = {"Host": authority}
        if proxy.authorization is not None:
            headers["Proxy-Authorization"] = proxy.authorization
        check_connect(authority, headers, shown)
        lines = [f"CONNECT {authority} HTTP/1.1", *(f"{n}: {v}" for n, v in headers.items())]
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[tuple[Head, memoryview]] = loop.create_future()
        try:
            connection.send(("\r\n".join(lines) + "\r\n\r\n").encode(), waiter, tunnel=True)
            try:
                head, _ = await waiter
            except (ConnectionError, FramingError) as exc:
                raise ProxyError(
                    f"{shown}: the proxy {proxy.shown} did not open a tunnel ({exc})"
                ) from exc
            status = head.status
            if status == 407:
                raise ProxyError(f"{shown}: the proxy {proxy.shown} asks for credentials (407)")
            if status >= 500:
                raise TransientError(
                    f"{shown}: the proxy {proxy.shown} could not reach the server (HTTP {status})"
                )
            if not 200 <= status < 300:
                raise ProxyError(
                    f"{shown}: the proxy {proxy.shown} refused a tunnel to {authority} "
                    f"(HTTP {status})"
                )
            secure = await loop.start_tls(
                connection.transport, connection, self._tls, server_hostname=self._host
            )
        except BaseException:
            if connection.transport is not None:
                connection.transport.close()
            raise
        if secure is None:
            raise TransientError(f"{shown}: the tunnel closed during the TLS handshake")
        connection.transport = secure

    async def _targets(self) -> tuple[tuple[str, int], ...]:
        """The addresses of the host dialled (the origin's, or the proxy's): looked up once per
        `ADDRESSES_KEPT_SECONDS` for every connection of the pool (a lookup that fails raises,
        as asyncio's own would)."""
        loop = asyncio.get_running_loop()
        host, port = self._dial
        async with self._resolving:
            if not self._addresses or loop.time() - self._resolved_at >= ADDRESSES_KEPT_SECONDS:
                found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                addresses = dict.fromkeys((str(a[4][0]), int(a[4][1])) for a in found)
                if not addresses:
                    raise OSError(f"no address for {host!r}")
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
        if connection in self._all:
            self._all.discard(connection)
            self._budget.release()
        if connection.transport is not None:
            connection.transport.close()

    def drop_idle(self) -> bool:
        """Close one idle connection, freeing its slot for another origin's."""
        if not self._idle:
            return False
        self._discard(self._idle.pop(0))
        return True

    def close(self) -> None:
        """Close every connection (on the pool's loop)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
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
