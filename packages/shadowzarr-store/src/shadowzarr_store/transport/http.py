"""HTTP(S) with aiohttp: one attempt of a range, multi-range or redirect request.

Redirects are followed here, one hop at a time, so that every hop is checked against the access
policy before it is requested and carries only the user headers bound to its own URL; a chain
that comes back to one of its URLs, or runs past ten hops, is a `RedirectError` at once. Each
answer is framed strictly: a 206 must carry the Content-Range asked for and exactly that many
bytes (a `FramingError` otherwise, retried by the client), a 200 is accepted only for a whole-file
read. One aiohttp session per event loop (sessions cannot cross loops), created lazily.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import ssl
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import aiohttp
from shadowzarr_spec import SourceAccessError, SourceChangedError, SourceError
from yarl import URL

from shadowzarr_store.transport.budget import ConnectionBudget
from shadowzarr_store.transport.content_coding import decode_whole, refuse_coded_range
from shadowzarr_store.transport.errors import (
    AnswerTooLargeError,
    FramingError,
    RedirectError,
    TransientError,
)
from shadowzarr_store.transport.head_values import check_request, refuse_control
from shadowzarr_store.transport.http1 import (
    AnswerTooLong,
    Head,
    OriginPool,
    certificate_refused,
    content_length,
)
from shadowzarr_store.transport.locations import redact
from shadowzarr_store.transport.multipart import Part, boundary_of, parse_byteranges
from shadowzarr_store.transport.status import REDIRECTS, raise_for_status, retry_after

if TYPE_CHECKING:
    from types import TracebackType

    from shadowzarr_store.transport.access import AccessPolicy
    from shadowzarr_store.transport.options import TransportOptions

__all__ = ["Answer", "HttpBackend"]

_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
_MAX_REDIRECTS = 10
_MAX_HOPS_KEPT = 1024


@dataclass(frozen=True, slots=True)
class Answer:
    """Bytes read, and what the server said about the whole file."""

    data: bytes
    """A read-only ``memoryview`` instead only where the caller asked for one
    (`Transport.read`'s ``view``)."""
    total: int | None
    """The file's size (Content-Range's total, or the length of a whole-file answer)."""
    etag: str | None
    final: str | None = None
    """Where redirects led, when the answer came from another URL than the one asked for."""


class HttpBackend:
    """One transport's HTTP requests, one aiohttp session per event loop."""

    def __init__(self, options: TransportOptions, access: AccessPolicy) -> None:
        self._options = options
        self._access = access
        self._lock = threading.Lock()
        self._sessions: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, aiohttp.ClientSession
        ] = weakref.WeakKeyDictionary()
        self._hops: dict[str, tuple[URL, dict[str, str]]] = {}
        self._pools: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, str, int | None], OriginPool]
        ] = weakref.WeakKeyDictionary()
        self._budgets: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ConnectionBudget] = (
            weakref.WeakKeyDictionary()
        )

    def _hop(self, target: str) -> tuple[URL, dict[str, str]]:
        """``target`` as aiohttp sends it, checked against the access policy, and the user
        headers bound to it: worked out once per URL, since a generator asks thousands of
        ranges of one URL at once (the policy and the rules are frozen)."""
        hop = self._hops.get(target)
        if hop is None:
            address = _address(target)
            self._access.check(str(address))  # the URL as aiohttp will send it
            hop = (address, self._options.header_rules.for_url(target))
            if len(self._hops) >= _MAX_HOPS_KEPT:
                self._hops.clear()
            self._hops[target] = hop
        return hop

    # -- sessions -------------------------------------------------------------------------------

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        with self._lock:
            session = self._sessions.get(loop)
            if session is None or session.closed:
                limit = self._options.max_connections
                timeout = self._options.timeout
                total = max(self._options.max_total_connections, limit)
                session = aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=total, limit_per_host=limit),
                    timeout=aiohttp.ClientTimeout(
                        total=None, sock_connect=timeout, sock_read=timeout
                    ),
                    auto_decompress=False,
                )
                self._sessions[loop] = session
            return session

    def _pool(self, address: URL) -> OriginPool:
        loop = asyncio.get_running_loop()
        origin = (address.scheme, address.raw_host or "", address.port)
        pools = self._pools.get(loop)
        if pools is None:
            with self._lock:
                pools = self._pools.setdefault(loop, {})
        pool = pools.get(origin)
        if pool is None:
            options = self._options
            budget = self._budgets.get(loop)
            if budget is None:
                total = max(options.max_total_connections, options.max_connections)
                budget = self._budgets[loop] = ConnectionBudget(total)
            pool = OriginPool(address, options.max_connections, options.timeout, budget)
            pools[origin] = pool
        return pool

    async def aclose(self) -> None:
        """Close the session and connections of the running loop."""
        with self._lock:
            session = self._sessions.pop(asyncio.get_running_loop(), None)
            pools = self._pools.pop(asyncio.get_running_loop(), {})
            self._budgets.pop(asyncio.get_running_loop(), None)
        for pool in pools.values():
            pool.close()
        if session is not None:
            await session.close()

    def close(self) -> None:
        """Close the sessions and connections of every loop still running (from outside those
        loops)."""
        with self._lock:
            sessions = list(self._sessions.items())
            self._sessions.clear()
        self._close_pools_soon()
        current = _running_loop()
        for loop, session in sessions:
            if session.closed or loop.is_closed():
                continue
            if loop is current:
                loop.create_task(session.close())
            elif loop.is_running():
                future = asyncio.run_coroutine_threadsafe(session.close(), loop)
                with contextlib.suppress(TimeoutError, RuntimeError):
                    future.result(timeout=5)

    def close_soon(self) -> None:
        """Schedule closing every session without waiting (garbage collection, interpreter exit)."""
        with self._lock:
            sessions = list(self._sessions.items())
        for loop, session in sessions:
            if not session.closed and not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    asyncio.run_coroutine_threadsafe(session.close(), loop)
        self._close_pools_soon()

    def _close_pools_soon(self) -> None:
        """Close the kept-alive connections of every loop, on their loops."""
        with self._lock:
            pools = list(self._pools.items())
            self._pools.clear()
            self._budgets.clear()
        for loop, by_origin in pools:
            for pool in by_origin.values():
                with contextlib.suppress(RuntimeError):  # a loop closed meanwhile
                    loop.call_soon_threadsafe(pool.close)

    def forget_loops(self) -> None:
        """After a fork: the parent's loops and sessions are not ours to use."""
        self._lock = threading.Lock()
        self._sessions = weakref.WeakKeyDictionary()
        self._pools = weakref.WeakKeyDictionary()
        self._budgets = weakref.WeakKeyDictionary()

    # -- requests -------------------------------------------------------------------------------

    async def ask_redirect(
        self, url: str, headers: dict[str, str], shown: str
    ) -> tuple[int, str | None, float | None]:
        """One GET without following redirects: status, absolute Location, Retry-After."""
        session = self._session()
        address = _address(url)
        self._access.check(str(address))
        check_request(address.raw_path_qs, address.host_port_subcomponent or "", headers, shown)
        try:
            async with session.get(address, headers=headers, allow_redirects=False) as response:
                location = response.headers.get("Location")
                if location:
                    refuse_control(location, "a redirect's Location", shown)
                wait = retry_after(response.headers.get("Retry-After"))
                return response.status, urljoin(url, location) if location else None, wait
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise TransientError(f"{shown}: {type(exc).__name__}: {_said(exc)}") from exc
        except TimeoutError as exc:
            raise TransientError(f"{shown}: no answer within {self._options.timeout} s") from exc
        except aiohttp.ClientError as exc:
            raise SourceError(f"{shown}: {type(exc).__name__}: {_said(exc)}") from exc

    async def get(
        self,
        url: str,
        start: int,
        end: int | None,
        etag: str | None,
        shown: str,
        size: int | None = None,
    ) -> Answer:
        """Bytes ``[start, end)`` (``0, None``: the whole file; fewer only where it ends), on
        aiohttp; ``size`` the file's recorded size (what an answer to the end may hold)."""
        whole = start == 0 and end is None
        most = end - start if end is not None else self._most_to_end(start, size)
        headers: dict[str, str] = {}
        if not whole:
            headers["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        if etag:
            headers["If-Match"] = etag
        hop = _LastHop(self, url, headers, shown)
        async with hop as response:
            status = response.status
            if status == 206 and not whole:
                refuse_coded_range(response.headers.get("Content-Encoding"), shown)
                first, last, total = _content_range(response.headers.get("Content-Range"), shown)
                _check_range(first, last, total, start, end, shown)
                body = await self._read_body(response, shown, most, size)
                if len(body) != last - first + 1:
                    raise FramingError(
                        f"{shown}: body of {len(body)} bytes, Content-Range says {last - first + 1}"
                    )
                return Answer(body, total, response.headers.get("ETag"), hop.final)
            if status == 200 and whole:
                body = await self._read_body(response, shown, _wire_most(most), size)
                length = response.headers.get("Content-Length")
                if length is not None and len(body) != content_length(length):
                    raise FramingError(
                        f"{shown}: body of {len(body)} bytes, Content-Length says {length}"
                    )
                coding = response.headers.get("Content-Encoding")
                body = bytes(self._decoded(body, coding, most, size, shown))
                return Answer(body, len(body), response.headers.get("ETag"), hop.final)
            if status == 200:
                # Retried like any other wrong answer to a range (a faulty proxy, a lost
                # header); a server that never answers ranges fails after the retries.
                raise FramingError(f"{shown}: the server ignored the Range header (200, not 206)")
            raise_for_status(status, shown, retry_after(response.headers.get("Retry-After")))
        raise AssertionError("unreachable")

    async def get_range(
        self,
        url: str,
        start: int,
        end: int,
        etag: str | None,
        shown: str,
        *,
        view: bool = False,
        chain: tuple[str, ...] = (),
    ) -> Answer:
        """`get` of bytes ``[start, end)`` on a kept-alive plain HTTP/1.1 connection (see
        `shadowzarr_store.transport.http1`: a fraction of aiohttp's CPU per request, for the
        thousands of ranges of a batch); redirects are followed here, each hop checked like
        aiohttp's (``chain``: the URLs before this one). ``view``: the body as the read-only
        ``memoryview`` it was received into."""
        try:
            head, body = await self._ask(
                url, {"Range": f"bytes={start}-{end - 1}"}, etag, shown, end - start
            )
        except AnswerTooLong as exc:
            ignored = " (the server ignored the Range header: 200, not 206)"
            raise FramingError(
                f"{shown}: an answer of {exc.length} bytes or more to a request for at most "
                f"{end - start}{ignored if exc.status == 200 else ''}"
            ) from exc
        status = head.status
        if status == 206:
            refuse_coded_range(head.headers.get("content-encoding"), shown)
            first, last, total = _content_range(head.headers.get("content-range"), shown)
            _check_range(first, last, total, start, end, shown)
            if len(body) != last - first + 1:
                raise FramingError(
                    f"{shown}: body of {len(body)} bytes, Content-Range says {last - first + 1}"
                )
            return Answer(body if view else bytes(body), total, head.headers.get("etag"))
        target = self._redirect(url, head, shown, chain)
        if target is not None:
            answer = await self.get_range(
                target, start, end, etag, shown, view=view, chain=(*chain, url)
            )
            return answer if answer.final else dataclasses.replace(answer, final=target)
        if status == 200:
            raise FramingError(f"{shown}: the server ignored the Range header (200, not 206)")
        raise_for_status(status, shown, retry_after(head.headers.get("retry-after")))
        raise AssertionError("unreachable")

    async def get_whole(
        self,
        url: str,
        etag: str | None,
        shown: str,
        *,
        size: int | None = None,
        chain: tuple[str, ...] = (),
    ) -> Answer:
        """`get` of the whole of ``url`` on our kept-alive connections, the ones the ranges
        use, so that the requests after it (an index, then the data) find them open instead
        of paying new handshakes. ``size``: the file's recorded size, the most it may hold
        (else ``max_whole_file_bytes``); a longer answer is refused before it is read. A body
        in gzip or deflate is decoded (`content_coding`)."""
        most = self._most_to_end(0, size)
        try:
            head, body = await self._ask(url, {}, etag, shown, _wire_most(most))
        except AnswerTooLong as exc:
            raise self._too_long(exc.length, size, shown) from exc
        status = head.status
        if status == 200:
            coding = head.headers.get("content-encoding")
            data = body if coding is None else self._decoded(body, coding, most, size, shown)
            return Answer(bytes(data), len(data), head.headers.get("etag"))
        target = self._redirect(url, head, shown, chain)
        if target is not None:
            answer = await self.get_whole(target, etag, shown, size=size, chain=(*chain, url))
            return answer if answer.final else dataclasses.replace(answer, final=target)
        raise_for_status(status, shown, retry_after(head.headers.get("retry-after")))
        raise AssertionError("unreachable")

    def _most_to_end(self, start: int, size: int | None) -> int:
        """The most bytes an answer from ``start`` to the end of the file may hold."""
        if size is not None:
            return max(size - start, 0)
        return self._options.max_whole_file_bytes

    def _too_long(self, length: int, size: int | None, shown: str) -> SourceError:
        """The error for a whole-file answer of ``length`` bytes or more, past its limit."""
        if size is not None:
            return SourceChangedError(
                f"{shown}: the answer holds {length} bytes or more, the references were made "
                f"for {size} bytes: the source has changed"
            )
        limit = self._options.max_whole_file_bytes
        return AnswerTooLargeError(
            f"{shown}: an answer of {length} bytes or more, past max_whole_file_bytes ({limit})"
        )

    def _decoded(
        self,
        body: bytes | memoryview,
        coding: str | None,
        most: int,
        size: int | None,
        shown: str,
    ) -> bytes | memoryview:
        try:
            return decode_whole(body, coding, most, shown)
        except AnswerTooLong as exc:
            raise self._too_long(exc.length, size, shown) from exc

    async def _read_body(
        self, response: aiohttp.ClientResponse, shown: str, most: int, size: int | None
    ) -> bytes:
        """An aiohttp answer's body, refused once it is longer than ``most`` bytes."""
        length = response.headers.get("Content-Length")
        if length is not None and content_length(length) > most:
            raise self._too_long(content_length(length), size, shown)
        body = bytearray()
        try:
            async for piece in response.content.iter_any():
                body += piece
                if len(body) > most:
                    raise self._too_long(len(body), size, shown)
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise TransientError(f"{shown}: body cut short: {type(exc).__name__}") from exc
        return bytes(body)

    async def _ask(
        self,
        url: str,
        headers: dict[str, str],
        etag: str | None,
        shown: str,
        most: int | None = None,
    ) -> tuple[Head, memoryview]:
        """One GET of ``url`` on our connections with the user's headers bound to it (and
        ``If-Match``); `AnswerTooLong` for a body past ``most`` bytes."""
        address, bound = self._hop(url)
        pool = self._pool(address)
        sent = {**bound, **headers, "If-Match": etag} if etag else {**bound, **headers}
        return await pool.request(pool.head(address, sent, shown), shown, most)

    def _redirect(self, url: str, head: Head, shown: str, chain: tuple[str, ...]) -> str | None:
        """Where a redirect answer leads (None for any other answer); `RedirectError` for a
        loop or a hop past those followed."""
        location = head.headers.get("location")
        if head.status not in REDIRECTS or not location:
            return None
        target = _redirect_target(url, location, shown, self._access)
        _check_chain(target, (*chain, url), shown)
        return target

    async def get_many(
        self, url: str, ranges: list[tuple[int, int]], etag: str | None, shown: str
    ) -> list[Answer] | None:
        """Several ranges in one multi-range request; None when the server does not answer
        with their parts (S3's 200 with the whole object: its body is never read)."""
        spec = ",".join(f"{start}-{end - 1}" for start, end in ranges)
        headers = {"Range": f"bytes={spec}"}
        if etag:
            headers["If-Match"] = etag
        hop = _LastHop(self, url, headers, shown)
        async with hop as response:
            status = response.status
            boundary = boundary_of(response.headers.get("Content-Type", ""))
            if status == 206 and boundary is not None:
                refuse_coded_range(response.headers.get("Content-Encoding"), shown)
                most = sum(end - start for start, end in ranges) + 1024 * (len(ranges) + 64)
                body = await self._read_body(response, shown, most, None)
                tag = response.headers.get("ETag")
                parts = parse_byteranges(body, boundary, shown)
                final = hop.final
                return [_part_for(parts, start, end, tag, final, shown) for start, end in ranges]
            if status in (200, 206, 400, 416, 501):
                # 200: the whole object (S3); 206 of one merged part; 400/416/501: servers that
                # reject multi-range requests (MinIO). Close without reading the body.
                response.close()
                return None
            raise_for_status(status, shown, retry_after(response.headers.get("Retry-After")))
        raise AssertionError("unreachable")


class _LastHop:
    """The async context of one request and its redirects: a class, not a generator, because a
    generator-based context costs a tenth of a request's CPU when thousands are in flight.

    Connection failures and timeouts, while the hops are followed or while the caller reads the
    answer, become `TransientError` (worth retrying); other client errors `SourceError`.
    """

    __slots__ = ("_backend", "_context", "_headers", "_shown", "_url", "final")

    def __init__(self, backend: HttpBackend, url: str, headers: dict[str, str], shown: str):
        self._backend, self._url, self._headers, self._shown = backend, url, headers, shown
        self._context: Any = None
        self.final: str | None = None
        """Where redirects led (None: the answer is ``url``'s own)."""

    async def __aenter__(self) -> aiohttp.ClientResponse:
        backend = self._backend
        session = backend._session()
        target = self._url
        chain: tuple[str, ...] = ()
        for hops in range(_MAX_REDIRECTS + 1):
            address, bound = backend._hop(target)
            # the stored bytes, never a compressed form of them (aiohttp would offer gzip and,
            # with auto_decompress off, hand it over undone)
            sent = {"Accept-Encoding": "identity", **bound, **self._headers}
            check_request(
                address.raw_path_qs, address.host_port_subcomponent or "", sent, self._shown
            )
            context = session.get(address, headers=sent, allow_redirects=False)
            try:
                response = await context.__aenter__()
            except BaseException as exc:
                translated = self._translated(exc)
                if translated is exc:
                    raise
                raise translated from exc
            location = response.headers.get("Location")
            if response.status not in REDIRECTS or not location:
                self._context = context
                if hops:
                    self.final = str(response.url)
                return response
            await context.__aexit__(None, None, None)
            chain = (*chain, target)
            target = _redirect_target(target, location, self._shown, backend._access)
            _check_chain(target, chain, self._shown)
        raise AssertionError("unreachable: _check_chain ends a chain past the hops followed")

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        context, self._context = self._context, None
        await context.__aexit__(exc_type, exc, tb)
        if exc is not None:
            translated = self._translated(exc)
            if translated is not exc:
                raise translated from exc

    def _translated(self, exc: BaseException) -> BaseException:
        shown = self._shown
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            refused = exc.certificate_error
            if isinstance(refused, ssl.SSLCertVerificationError):
                return SourceError(f"{shown}: {certificate_refused(refused)}")
            return SourceError(f"{shown}: the server's certificate was refused ({refused})")
        if isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError):
            return TransientError(f"{shown}: {type(exc).__name__}: {_said(exc)}")
        if isinstance(exc, TimeoutError) and not isinstance(exc, SourceError):
            timeout = self._backend._options.timeout
            return TransientError(f"{shown}: no answer within {timeout} s")
        if isinstance(exc, aiohttp.ClientError):
            return SourceError(f"{shown}: {type(exc).__name__}: {_said(exc)}")
        return exc


def _redirect_target(url: str, location: str, shown: str, access: AccessPolicy) -> str:
    """Where a redirect from ``url`` to ``location`` leads, checked as every hop is (http(s)
    only, within the allowed URLs); a Location with a control byte is refused, not cleaned."""
    refuse_control(location, "a redirect's Location", shown)
    try:
        target = urljoin(url, location)
    except ValueError as exc:
        raise SourceAccessError(
            f"{shown}: a redirect to an unusable URL was refused ({exc})"
        ) from exc
    access.check_redirect(target)
    return target


def _check_chain(target: str, chain: tuple[str, ...], shown: str) -> None:
    """`RedirectError` when ``target`` was already asked for in this chain of redirects (a
    loop), or would be a hop past the `_MAX_REDIRECTS` followed."""
    if target in chain:
        raise RedirectError(
            f"{shown}: a redirect loop ({len(chain)} hops lead back to {redact(target)})"
        )
    if len(chain) > _MAX_REDIRECTS:
        raise RedirectError(f"{shown}: more than {_MAX_REDIRECTS} redirects")


def _wire_most(most: int) -> int:
    """The most bytes a whole-file answer of at most ``most`` bytes may take on the wire (a
    gzip stream of incompressible bytes is a little longer than they are)."""
    return most + most // 64 + 1024


def _address(url: str) -> URL:
    """``url`` as aiohttp sends it; one it cannot send (a port past 65535, a broken IPv6
    host) is refused by name rather than with yarl's ValueError."""
    try:
        return URL(url)
    except ValueError as exc:
        raise SourceAccessError(f"{redact(url)}: not a usable URL ({exc})") from exc


def _part_for(
    parts: list[Part], start: int, end: int, etag: str | None, final: str | None, shown: str
) -> Answer:
    """The bytes of ``[start, end)`` from the part holding them (servers may merge ranges; a
    part cut at the end of the file serves a range running past it)."""
    for part in parts:
        stop = part.start + len(part.data)
        if part.start <= start and (end <= stop or (part.total is not None and stop == part.total)):
            return Answer(part.data[start - part.start : end - part.start], part.total, etag, final)
    raise FramingError(f"{shown}: no part of the multipart answer holds bytes {start}-{end - 1}")


def _content_range(header: str | None, shown: str) -> tuple[int, int, int | None]:
    header = header or ""
    match = _CONTENT_RANGE.match(header.strip())
    if match is None:
        raise FramingError(f"{shown}: 206 answer with an unusable Content-Range {header[:80]!r}")
    total = None if match[3] == "*" else int(match[3])
    return int(match[1]), int(match[2]), total


def _check_range(
    first: int, last: int, total: int | None, start: int, end: int | None, shown: str
) -> None:
    """The server may stop early only at the end of the file."""
    at_end = total is not None and last == total - 1
    if (
        first != start
        or last < first
        or (end is None and not at_end)
        or (end is not None and last != end - 1 and not (last < end - 1 and at_end))
    ):
        raise FramingError(
            f"{shown}: the server answered Content-Range bytes {first}-{last}/{total}, "
            "not the range asked for"
        )


def _said(exc: BaseException) -> str:
    """What an aiohttp error says, with any URL in it redacted."""
    return " ".join(redact(word) if "://" in word else word for word in str(exc).split())


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
