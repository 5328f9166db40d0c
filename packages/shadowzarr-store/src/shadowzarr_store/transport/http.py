"""HTTP(S): one attempt of a range, multi-range or redirect request. Ranges (open-ended ones
too), multi-range requests and whole files go on our own kept-alive HTTP/1.1 connections
(`http1`), one pool per origin; only the redirect question (a DANDI asset's, a folder's) on
aiohttp.

Redirects are followed here, one hop at a time, so that every hop is checked against the access
policy before it is requested and carries only the user headers bound to its own URL; a chain
that comes back to one of its URLs, or runs past ten hops, is a `RedirectError` at once
(`redirects`). Each answer is framed strictly (`framing`): a 206 must carry the Content-Range
asked for and exactly that many bytes (a `FramingError` otherwise, retried by the client), a 200
is accepted only for a whole-file read. Connections, ours and aiohttp's, come from the
process's pools per event loop (`pools`), shared with every other transport; each request goes
through the proxy that `ProxyConfig` chooses for its URL, whichever client sends it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from shadowzarr_spec import SourceAccessError, SourceChangedError, SourceError
from yarl import URL

from shadowzarr_store.transport.aiohttp_errors import proxy_error, said
from shadowzarr_store.transport.answer import Answer
from shadowzarr_store.transport.content_coding import decode_whole, refuse_coded_range
from shadowzarr_store.transport.errors import (
    AnswerTooLargeError,
    FramingError,
    TransientError,
)
from shadowzarr_store.transport.framing import check_range, content_range, part_for, wire_most
from shadowzarr_store.transport.head_values import check_request, refuse_control
from shadowzarr_store.transport.home import at_home, home_loop
from shadowzarr_store.transport.http1 import (
    AnswerTooLong,
    Head,
    OriginPool,
)
from shadowzarr_store.transport.locations import redact
from shadowzarr_store.transport.multipart import boundary_of, parse_byteranges
from shadowzarr_store.transport.pools import pools
from shadowzarr_store.transport.prefault import start as start_prefault
from shadowzarr_store.transport.proxies import Proxy, ProxyConfig
from shadowzarr_store.transport.redirects import check_chain, redirect_target
from shadowzarr_store.transport.status import REDIRECTS, raise_for_status, retry_after

if TYPE_CHECKING:
    from types import ModuleType

    import aiohttp

    from shadowzarr_store.transport.access import AccessPolicy
    from shadowzarr_store.transport.options import TransportOptions

__all__ = ["Answer", "HttpBackend", "RangeBatch"]

_MAX_HOPS_KEPT = 1024


class HttpBackend:
    """One transport's HTTP requests, on the connections the process shares per event loop."""

    def __init__(self, options: TransportOptions, access: AccessPolicy) -> None:
        self._options = options
        self._access = access
        self._lock = threading.Lock()
        self.proxies = ProxyConfig.resolve(options.proxy)
        self._hops: dict[str, tuple[URL, dict[str, str], Proxy | None]] = {}
        self._client_timeout: aiohttp.ClientTimeout | None = None
        start_prefault()  # at open: the first read's fresh buffers are populated off its path

    @property
    def _timeout(self) -> aiohttp.ClientTimeout:
        if self._client_timeout is None:
            timeout = self._options.timeout
            self._client_timeout = _aiohttp().ClientTimeout(
                total=None, sock_connect=timeout, sock_read=timeout
            )
        return self._client_timeout

    def _hop(self, target: str) -> tuple[URL, dict[str, str], Proxy | None]:
        """``target`` as aiohttp sends it, checked against the access policy, the user headers
        bound to it and the proxy it goes through: worked out once per URL, since a generator
        asks thousands of ranges of one URL at once (the policy and the rules are frozen)."""
        hop = self._hops.get(target)
        if hop is None:
            address = _address(target)
            self._access.check(str(address))  # the URL as aiohttp will send it
            proxy = self.proxies.for_url(address.scheme, address.raw_host or "", address.port)
            hop = (address, self._options.header_rules.for_url(target), proxy)
            if len(self._hops) >= _MAX_HOPS_KEPT:
                self._hops.clear()
            self._hops[target] = hop
        return hop

    # -- connections ----------------------------------------------------------------------------

    def _limits(self) -> tuple[int, int]:
        limit = self._options.max_connections
        return limit, max(self._options.max_total_connections, limit)

    def _session(self) -> aiohttp.ClientSession:
        return pools().session(*self._limits())

    def _pool(self, address: URL, proxy: Proxy | None) -> OriginPool:
        limit, total = self._limits()
        return pools().pool(address, proxy, limit, total, self._options.timeout)

    @staticmethod
    def _proxied(
        proxy: Proxy | None, address: URL, headers: dict[str, str]
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """The headers and aiohttp's arguments of a request through ``proxy`` (none:
        directly). Its credentials go to the proxy only: in the request's own head when the
        proxy forwards it (``http://``), in the CONNECT head for a tunnel (``https://``)."""
        if proxy is None:
            return headers, {}
        arguments: dict[str, Any] = {"proxy": proxy.shown}
        authorization = proxy.authorization
        if authorization is not None:
            check_request("/", proxy.host, {"Proxy-Authorization": authorization}, proxy.shown)
            if address.scheme == "https":
                arguments["proxy_headers"] = {"Proxy-Authorization": authorization}
            else:
                headers = {**headers, "Proxy-Authorization": authorization}
        return headers, arguments

    async def aclose(self) -> None:
        """Nothing of its own to close: the connections are the process's, reused by the next
        transport and closed once idle for `IDLE_SECONDS` (or at exit)."""

    def close(self) -> None:
        """See `aclose`."""

    def close_soon(self) -> None:
        """See `aclose`."""

    def forget_loops(self) -> None:
        """After a fork: the parent's state is not ours (`pools` forgets its registry)."""
        self._lock = threading.Lock()

    # -- requests -------------------------------------------------------------------------------

    @at_home
    async def ask_redirect(
        self, url: str, headers: dict[str, str], shown: str
    ) -> tuple[int, str | None, float | None]:
        """One GET without following redirects: status, absolute Location, Retry-After."""
        aiohttp = _aiohttp()
        session = self._session()
        address, _, proxy = self._hop(url)
        check_request(address.raw_path_qs, address.host_port_subcomponent or "", headers, shown)
        headers, through = self._proxied(proxy, address, headers)
        try:
            async with session.get(
                address, headers=headers, allow_redirects=False, timeout=self._timeout, **through
            ) as response:
                location = response.headers.get("Location")
                if location:
                    refuse_control(location, "a redirect's Location", shown)
                wait = retry_after(response.headers.get("Retry-After"))
                return response.status, urljoin(url, location) if location else None, wait
        except (aiohttp.ClientProxyConnectionError, aiohttp.ClientHttpProxyError) as exc:
            raise proxy_error(exc, proxy, shown) from exc
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise TransientError(f"{shown}: {type(exc).__name__}: {said(exc)}") from exc
        except TimeoutError as exc:
            raise TransientError(f"{shown}: no answer within {self._options.timeout} s") from exc
        except aiohttp.ClientError as exc:
            raise SourceError(f"{shown}: {type(exc).__name__}: {said(exc)}") from exc

    @at_home
    async def get_to_end(
        self,
        url: str,
        start: int,
        etag: str | None,
        shown: str,
        *,
        size: int | None = None,
        chain: tuple[str, ...] = (),
    ) -> Answer:
        """Bytes from ``start`` to the end of the file (an open-ended range), on the kept-alive
        connections the other ranges, whole files and probes use (aiohttp's pool would be a
        second pool for the origin); ``size`` the file's recorded size (what the answer may
        hold: more is `SourceChangedError`; unknown, ``max_whole_file_bytes``)."""
        most = self._most_to_end(start, size)
        try:
            head, body = await self._ask(url, {"Range": f"bytes={start}-"}, etag, shown, most)
        except AnswerTooLong as exc:
            if exc.status == 200:
                raise FramingError(
                    f"{shown}: the server ignored the Range header (200, not 206)"
                ) from exc
            raise self._too_long(exc.length, size, shown) from exc
        status = head.status
        if status == 206:
            refuse_coded_range(head.headers.get("content-encoding"), shown)
            first, last, total = content_range(head.headers.get("content-range"), shown)
            check_range(first, last, total, start, None, shown)
            if len(body) != last - first + 1:
                raise FramingError(
                    f"{shown}: body of {len(body)} bytes, Content-Range says {last - first + 1}"
                )
            return Answer(bytes(body), total, head.headers.get("etag"))
        target = self._redirect(url, head, shown, chain)
        if target is not None:
            answer = await self.get_to_end(
                target, start, etag, shown, size=size, chain=(*chain, url)
            )
            return answer if answer.final else dataclasses.replace(answer, final=target)
        if status == 200:
            # Retried like any other wrong answer to a range (a faulty proxy, a lost
            # header); a server that never answers ranges fails after the retries.
            raise FramingError(f"{shown}: the server ignored the Range header (200, not 206)")
        raise_for_status(status, shown, retry_after(head.headers.get("retry-after")))
        raise AssertionError("unreachable")

    @at_home
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
                url,
                {"Range": f"bytes={start}-{end - 1}"},
                etag,
                shown,
                end - start,
                expected=end - start,
            )
        except AnswerTooLong as exc:
            raise _range_too_long(exc, end - start, shown) from exc
        if head.status == 206:
            return _ranged(head, body, start, end, shown, view)
        return await self._range_other(url, head, start, end, etag, shown, view, chain)

    async def _range_other(
        self,
        url: str,
        head: Head,
        start: int,
        end: int,
        etag: str | None,
        shown: str,
        view: bool,
        chain: tuple[str, ...],
    ) -> Answer:
        """A range's answer other than a 206: a redirect followed, or its error."""
        target = self._redirect(url, head, shown, chain)
        if target is not None:
            answer = await self.get_range(
                target, start, end, etag, shown, view=view, chain=(*chain, url)
            )
            return answer if answer.final else dataclasses.replace(answer, final=target)
        if head.status == 200:
            raise FramingError(f"{shown}: the server ignored the Range header (200, not 206)")
        raise_for_status(head.status, shown, retry_after(head.headers.get("retry-after")))
        raise AssertionError("unreachable")

    def range_batch(self, url: str, etag: str | None) -> RangeBatch | None:
        """`get_range` of many ranges of ``url`` on the transport's loop, with what does not
        depend on the range done once (the hop, the pool, the head's check): None where that
        fails or the caller is not on the transport's loop (`get_range` then says why, per
        range, as it always did)."""
        if asyncio.get_running_loop() is not home_loop():
            return None
        try:
            address, bound, proxy = self._hop(url)
            pool = self._pool(address, proxy)
            asked = {**bound, "Range": "bytes=0-0"}
            if etag:
                asked["If-Match"] = etag
            prefix, suffix = pool.range_head(address, asked, redact(url))
        except SourceError:
            return None
        return RangeBatch(self, url, etag, pool, prefix, suffix, *self._limits())

    @at_home
    async def get_whole(
        self,
        url: str,
        etag: str | None,
        shown: str,
        *,
        size: int | None = None,
        chain: tuple[str, ...] = (),
        if_none_match: str | None = None,
    ) -> Answer:
        """`get` of the whole of ``url`` on our kept-alive connections, the ones the ranges
        use, so that the requests after it (an index, then the data) find them open instead
        of paying new handshakes. ``size``: the file's recorded size, the most it may hold
        (else ``max_whole_file_bytes``); a longer answer is refused before it is read. A body
        in gzip or deflate is decoded (`content_coding`). ``if_none_match``: the ETag of the
        bytes the caller has (a 304 answer is `Answer.not_modified`)."""
        most = self._most_to_end(0, size)
        conditional = {"If-None-Match": if_none_match} if if_none_match else {}
        try:
            head, body = await self._ask(url, conditional, etag, shown, wire_most(most))
        except AnswerTooLong as exc:
            raise self._too_long(exc.length, size, shown) from exc
        status = head.status
        if status == 200:
            coding = head.headers.get("content-encoding")
            data = body if coding is None else self._decoded(body, coding, most, size, shown)
            return Answer(bytes(data), len(data), head.headers.get("etag"))
        if status == 304 and if_none_match:
            return Answer(b"", None, head.headers.get("etag") or if_none_match, not_modified=True)
        target = self._redirect(url, head, shown, chain)
        if target is not None:
            answer = await self.get_whole(
                target, etag, shown, size=size, chain=(*chain, url), if_none_match=if_none_match
            )
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

    async def _ask(
        self,
        url: str,
        headers: dict[str, str],
        etag: str | None,
        shown: str,
        most: int | None = None,
        *,
        expected: int | None = None,
    ) -> tuple[Head, memoryview]:
        """One GET of ``url`` on our connections with the user's headers bound to it (and
        ``If-Match``); `AnswerTooLong` for a body past ``most`` bytes; ``expected``: the
        body's length if all goes well."""
        address, bound, proxy = self._hop(url)
        pool = self._pool(address, proxy)
        sent = {**bound, **headers, "If-Match": etag} if etag else {**bound, **headers}
        limit, total = self._limits()
        return await pool.request(
            pool.head(address, sent, shown), shown, most, expected, limit=limit, total=total
        )

    def _redirect(self, url: str, head: Head, shown: str, chain: tuple[str, ...]) -> str | None:
        """Where a redirect answer leads (None for any other answer); `RedirectError` for a
        loop or a hop past those followed."""
        location = head.headers.get("location")
        if head.status not in REDIRECTS or not location:
            return None
        target = redirect_target(url, location, shown, self._access)
        check_chain(target, (*chain, url), shown)
        return target

    @at_home
    async def get_many(
        self,
        url: str,
        ranges: list[tuple[int, int]],
        etag: str | None,
        shown: str,
        *,
        chain: tuple[str, ...] = (),
    ) -> list[Answer] | None:
        """Several ranges in one multi-range request, on our kept-alive connections (the first
        such request of a source, which asks whether the server answers them, then goes on the
        connection its first answer came on instead of a new one); None when the server does
        not answer with their parts (S3's 200 with the whole object: refused at its head, its
        body never read)."""
        spec = ",".join(f"{start}-{end - 1}" for start, end in ranges)
        most = sum(end - start for start, end in ranges) + 1024 * (len(ranges) + 64)
        try:
            head, body = await self._ask(url, {"Range": f"bytes={spec}"}, etag, shown, most)
        except AnswerTooLong as exc:
            if exc.status in (200, 206):  # the whole object, or one merged part
                return None
            raise_for_status(exc.status or 0, shown, None)
            raise AssertionError("unreachable") from exc
        status = head.status
        boundary = boundary_of(head.headers.get("content-type", ""))
        if status == 206 and boundary is not None:
            refuse_coded_range(head.headers.get("content-encoding"), shown)
            parts = parse_byteranges(bytes(body), boundary, shown)
            tag = head.headers.get("etag")
            return [part_for(parts, start, end, tag, None, shown) for start, end in ranges]
        target = self._redirect(url, head, shown, chain)
        if target is not None:
            answers = await self.get_many(target, ranges, etag, shown, chain=(*chain, url))
            if answers is None:
                return None
            return [a if a.final else dataclasses.replace(a, final=target) for a in answers]
        if status in (200, 206, 400, 416, 501):
            # 200: the whole object (S3); 206 of one merged part; 400/416/501: servers that
            # reject multi-range requests (MinIO).
            return None
        raise_for_status(status, shown, retry_after(head.headers.get("retry-after")))
        raise AssertionError("unreachable")


class RangeBatch:
    """`HttpBackend.range_batch`: each range's head is the batch's checked head with its
    ``Range`` value put in (two integers), sent on the origin's pool; the answer is framed as
    `HttpBackend.get_range` frames it, with the same errors."""

    __slots__ = ("_backend", "_etag", "_limit", "_pool", "_prefix", "_suffix", "_total", "_url")

    def __init__(
        self,
        backend: HttpBackend,
        url: str,
        etag: str | None,
        pool: OriginPool,
        prefix: bytes,
        suffix: bytes,
        limit: int,
        total: int,
    ) -> None:
        self._backend, self._url, self._etag, self._pool = backend, url, etag, pool
        self._prefix, self._suffix, self._limit, self._total = prefix, suffix, limit, total

    async def get(self, start: int, end: int, shown: str) -> Answer:
        """What ``get_range(url, start, end, etag, shown)`` answers or raises."""
        size = end - start
        head = b"".join((self._prefix, f"{start}-{end - 1}".encode(), self._suffix))
        try:
            answer, body = await self._pool.request(
                head, shown, size, size, limit=self._limit, total=self._total
            )
        except AnswerTooLong as exc:
            raise _range_too_long(exc, size, shown) from exc
        if answer.status == 206:
            return _ranged(answer, body, start, end, shown, False)
        backend = self._backend
        return await backend._range_other(
            self._url, answer, start, end, self._etag, shown, False, ()
        )


def _ranged(head: Head, body: memoryview, start: int, end: int, shown: str, view: bool) -> Answer:
    """A 206 answer to the range ``[start, end)``, framed strictly."""
    headers = head.headers
    refuse_coded_range(headers.get("content-encoding"), shown)
    first, last, total = content_range(headers.get("content-range"), shown)
    check_range(first, last, total, start, end, shown)
    if len(body) != last - first + 1:
        raise FramingError(
            f"{shown}: body of {len(body)} bytes, Content-Range says {last - first + 1}"
        )
    return Answer(body if view else bytes(body), total, headers.get("etag"))


def _range_too_long(exc: AnswerTooLong, size: int, shown: str) -> FramingError:
    ignored = " (the server ignored the Range header: 200, not 206)"
    return FramingError(
        f"{shown}: an answer of {exc.length} bytes or more to a request for at most "
        f"{size}{ignored if exc.status == 200 else ''}"
    )


def _address(url: str) -> URL:
    """``url`` as aiohttp sends it; one it cannot send (a port past 65535, a broken IPv6
    host) is refused by name rather than with yarl's ValueError."""
    try:
        return URL(url)
    except ValueError as exc:
        raise SourceAccessError(f"{redact(url)}: not a usable URL ({exc})") from exc


def _aiohttp() -> ModuleType:
    """aiohttp, imported at its first use (the redirect question): ranges, multi-range
    requests and whole files go on our own connections (`http1`), so reads and generation
    need it not, and its import was a fifth of the store's."""
    import aiohttp

    return aiohttp
