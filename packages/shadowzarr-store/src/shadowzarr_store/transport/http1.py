"""One-range GETs on kept-alive HTTP/1.1 connections: every range read over HTTP.

A generator reading an index from a server that answers one range per request (S3) sends
thousands of small GETs at once. aiohttp spends about 130 µs of CPU on each, and on two cores
that, not the network, bounded the generator. Here a request is one write of a prepared head
and its answer one parse of a head and a ``Content-Length`` body (about 50 µs). The body is
received straight into one array of its length (``recv_into``), so a read of megabytes is never
joined from pieces: aiohttp's joining was a sixth of the CPU of a sequential read (one
connection: `http1_connection`). Answers are framed strictly and whole, so none is asked for
twice: 1xx interim answers are skipped, LF-only line ends taken (`http1_heads`), a chunked body
decoded (`http1_bodies`), a body longer than the request may take refused (`AnswerTooLong`)
before it is read. Redirects are the caller's. This module holds the pool of one origin's
connections; their failures and stalls are `TransientError`, like aiohttp's.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from functools import cache
from typing import TYPE_CHECKING

from shadowzarr_spec import SourceError

from shadowzarr_store.transport.budget import ConnectionBudget
from shadowzarr_store.transport.errors import FramingError, ProxyError, TransientError
from shadowzarr_store.transport.head_values import check_connect, check_request
from shadowzarr_store.transport.http1_bodies import AnswerTooLong
from shadowzarr_store.transport.http1_connection import Connection
from shadowzarr_store.transport.http1_heads import Head, content_length
from shadowzarr_store.transport.prefault import prepared
from shadowzarr_store.transport.slots import Slots

if TYPE_CHECKING:
    import numpy as np
    from yarl import URL

    from shadowzarr_store.transport.proxies import Proxy

__all__ = ["IDLE_SECONDS", "AnswerTooLong", "Head", "OriginPool", "content_length"]

_EARLY = 0.001
"""A stall timer running this much early is on time (asyncio runs timers due within its clock's
resolution)."""
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


class OriginPool:
    """Kept-alive connections to one ``scheme://host:port``, at most ``limit`` requests out
    at once by default (each caller may give its own), used on one event loop (the transport's:
    asyncio transports cannot cross loops), directly or through a forward
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
        self._idle: list[Connection] = []
        self._limit = limit
        self._out = Slots()
        """Requests out on the pool's connections now, and those waiting for one."""
        self._all: set[Connection] = set()
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
        return "\r\n".join(self._head_lines(address, headers, shown)).encode("utf-8")

    def range_head(self, address: URL, headers: dict[str, str], shown: str) -> tuple[bytes, bytes]:
        """`head` cut around the value of its ``Range`` header, given as ``bytes=0-0`` and
        checked with it: the head of the range ``a-b`` is ``prefix + b"a-b" + suffix``. A
        batch's ranges differ only there, and two integers and a dash need no check, so the
        rest is checked once per batch instead of once per range."""
        lines = self._head_lines(address, headers, shown)
        at = lines.index("Range: bytes=0-0")  # one line only: a header's value holds no CRLF
        prefix = "\r\n".join(lines[:at]) + "\r\nRange: bytes="
        suffix = "\r\n" + "\r\n".join(lines[at + 1 :])
        return prefix.encode("utf-8"), suffix.encode("utf-8")

    def _head_lines(self, address: URL, headers: dict[str, str], shown: str) -> list[str]:
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
        return lines

    async def request(
        self,
        head: bytes,
        shown: str,
        most: int | None = None,
        expected: int | None = None,
        *,
        limit: int | None = None,
        total: int | None = None,
    ) -> tuple[Head, memoryview]:
        """The answer to ``head``: (head, body); ``most``: the most body bytes it may have (an
        error page may have up to 64 KiB); ``expected``: the body's length if all goes well
        (a range's), whose buffer is made and its pages mapped while the request is out;
        ``limit``: the caller's most requests out at once on this origin (default: the
        pool's), ``total``: on every origin of the loop (default: the budget's), each counting
        every caller's (pools and budget are shared by callers with other limits)."""
        limit = self._limit if limit is None else limit
        out = self._out
        if out.busy >= limit:
            await out.wait(limit)
        out.busy += 1  # no await between a slot found free and taken
        # the origin's slot first: a request waiting for the loop's holds no slot another
        # origin could use
        everywhere = self._budget.out
        if total is not None and everywhere.busy >= total:
            try:
                await everywhere.wait(total)
            except BaseException:
                out.release()
                raise
        everywhere.busy += 1
        connection = None
        try:
            body = prepared(expected)
            while self._idle and connection is None:
                candidate = self._idle.pop()
                if candidate.usable:
                    connection = candidate
                else:
                    self._discard(candidate)
            if connection is None:
                connection = await self._connect(shown)
            self.requests += 1
            answer = await self._exchange(connection, head, shown, most, body)
        finally:
            if connection is not None:
                if connection.reusable and connection.usable and not self._budget.wanted:
                    self._keep_idle(connection)
                else:
                    self._discard(connection)
            everywhere.release()
            out.release()
        if self._absolute and answer[0].status == 407:
            assert self._proxy is not None
            named = self._proxy.shown
            raise ProxyError(f"{shown}: the proxy {named} asks for credentials (407)")
        return answer

    def _keep_idle(self, connection: Connection) -> None:
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

    async def _connect(self, shown: str) -> Connection:
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

    async def _open(self, shown: str) -> Connection:
        loop = asyncio.get_running_loop()
        direct_tls = self._tls if self._proxy is None else None
        dialled = False
        try:
            async with asyncio.timeout(self._timeout):
                targets = await self._targets() if self._named else (self._dial,)
                for at, (host, port) in enumerate(targets):
                    try:
                        _, connection = await loop.create_connection(
                            Connection,
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

    async def _tunnel(self, connection: Connection, shown: str) -> None:
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
        self,
        connection: Connection,
        head: bytes,
        shown: str,
        most: int | None,
        body: np.ndarray | None = None,
    ) -> tuple[Head, memoryview]:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[tuple[Head, memoryview]] = loop.create_future()
        connection.send(head, waiter, most, body=body)
        # A stall (no byte for ``timeout`` seconds) fails the request: looked at ``timeout``
        # seconds after it left, then every ``timeout`` seconds, not at each piece received.
        # One timer per connection, kept armed across its requests (`_watch`), instead of one
        # made and cancelled per request.
        connection.check_at = loop.time() + self._timeout
        connection.seen = connection.progress
        if connection.timer is None:
            connection.timer = loop.call_at(connection.check_at, self._watch, connection)
        try:
            return await waiter
        except TimeoutError as exc:
            raise TransientError(f"{shown}: no answer within {self._timeout} s") from exc
        except ConnectionError as exc:
            raise TransientError(f"{shown}: {exc}") from exc
        except FramingError as exc:
            raise FramingError(f"{shown}: {exc}") from exc

    def _watch(self, connection: Connection) -> None:
        """The stall timer of ``connection``'s request in flight: no byte since the last look
        fails it. Armed for an earlier request, it waits for this one's time; with no request
        in flight it lapses (the next request arms it again)."""
        connection.timer = None
        if not connection.in_flight:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        if now < connection.check_at - _EARLY:
            connection.timer = loop.call_at(connection.check_at, self._watch, connection)
            return
        if connection.progress == connection.seen:
            connection._fail(TimeoutError())
            return
        connection.seen = connection.progress
        connection.check_at = now + self._timeout
        connection.timer = loop.call_at(connection.check_at, self._watch, connection)

    def _discard(self, connection: Connection) -> None:
        if connection.timer is not None:
            connection.timer.cancel()
            connection.timer = None
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
